"""v15 warp specialization: a producer warpgroup, two consumer warpgroups, clusters and TMA multicast.

The idea. v14's parts, reorganised the way the fastest Hopper GEMMs are:
- Roles: warpgroup 0 only issues TMA copies (one thread), warpgroups 1 and 2 only multiply. The
  producer runs ahead across tile boundaries, so the consumers' epilogue overlaps the next copies.
- Registers: each consumer thread holds 128 fp32 accumulators: a 64×256 block per warpgroup, a 128×256
  tile per CTA, and B is read from shared memory once per 64×256 instead of per 64×128. `setmaxnreg`
  moves registers from the producer (40 per thread) to the consumers (232), as CUTLASS's kernels do.
- Clusters: CLUSTER_M = 2 CTAs computing vertically adjacent tiles share one B tile; each loads half
  and TMA *multicasts* it into both CTAs' shared memory. A slot is refilled only when the consumers of
  both CTAs are done with it, so each consumer arrives on the peer's barrier too (`mapa`).
- L2-aware order: clusters walk GROUP_M cluster rows at a time, column by column, and every other
  round of tiles walks k downwards, starting on what the round before read last.
- Epilogue: each consumer rounds its block into a swizzled staging buffer (stmatrix), one thread hands
  it to a TMA store, and the warpgroup starts its next tile while the copy engine writes.
- Stream-K (one candidate): where the last round of tiles would leave clusters idle, its k-blocks are
  dealt out evenly instead; a tile cut between clusters is finished by the cluster holding its first
  k-block, which adds the others' fp32 partial sums.
The rung declares its candidates (tile width, stages, cluster and group size, stream-K; narrow tiles
for small products), and the shared search (implementations/core/search.py) times them at the first
call per device and shape and reports the choice, in both languages.

CUDA C and Triton side by side:

| concept | CUDA C (kernels_cuda/v15_warp_specialized.cu) | Triton (v14's kernel, its knobs on) |
|---|---|---|
| producer / consumers | `if (warpgroup == 0)` ... `else` ..., by hand | `warp_specialize=True`: crashed Triton 3.6 |
| loads run ahead of tiles | the producer's loop over tiles and k-blocks | `tl.range(flatten=True)` (FLATTEN) |
| register split | `setmaxnreg.dec 40` / `setmaxnreg.inc 232` | none |
| 128×256 tiles | two m64n256k16 warpgroups | BLOCK 128×256 among the candidates |
| clusters + multicast | `__cluster_dims__`, `.multicast::cluster`, `mapa` | none in this kernel |
| tile order | grouped over cluster tiles, k downwards in every other round | GROUP_M in the persistent loop (v14's) |
| epilogue | stmatrix into staging, `cp.async.bulk.tensor` store | `c_desc.store` of two halves (C_BY_TMA) |
| search | the rung's candidates, timed by the shared search | the same; Triton's own `triton.autotune` would do it, |
|  |  | the suite searches both languages with one timer |

What Triton does for you: the pipeline, descriptors, layouts and wgmma, as in v14; with `flatten=True`
the pipeliner treats the tile loop and the k-loop as one, so the next tile's first loads fly during
this tile's epilogue, as the CUDA producer arranges by hand: v14's `tma_persistent_kernel` with FLATTEN
and C_BY_TMA on. Left out: warp specialization, the register split, clusters, the alternating k.

Constraints: fp16/bf16 on sm_90a. TMA writes C only when its rows are 16-byte aligned (N % 8 == 0);
otherwise the accumulators go straight from registers to memory, as in v14. Layouts and batches: the
Triton side reads transposed operands and batches in place (v14's kernel); the CUDA C side computes one
product of row-major A and B, so the shared layer copies other layouts and launches per matrix for it.

What it should reach: at or above cuBLAS for large bf16/fp16 products on an H100; public H100
worklogs with these techniques report a little above cuBLAS.

Its story (measurements, what was tried): docs/notes/v15.md.
"""

import functools
from typing import NamedTuple

import numpy as np
import torch
import triton
from triton.tools.tensor_descriptor import TensorDescriptor

from .core.check import LAYOUTS
from .core.cuda_c import CudaSource, bind, function_pointer, tensor_map_2d
from .core.cuda_c import cupy as kernel_cupy
from .core.registry import Variant
from .core.search import Search
from .core.triton_util import block_of, describe_config
from .v14_wgmma_tma import BARRIER_BYTES, IS_BF16, bind_configs, sm_count, tma_operands, zero_product

BM, BK = 128, 64
THREADS = 384  # a producer warpgroup and two consumer warpgroups


class Tile(NamedTuple):
    BN: int
    STAGES: int
    CLUSTER_M: int
    GROUP_M: int
    STREAM_K: int = 0

    def kernel(self, dtype: torch.dtype) -> str:
        return f"warp_specialized<{IS_BF16[dtype]},{','.join(map(str, self))}>"

    def __str__(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self._asdict().items())


CUDA_CANDIDATES = (
    Tile(256, 4, 2, 8),
    Tile(256, 4, 2, 8, 1),  # the last, partial round of tiles dealt out by k-blocks (stream-K)
    Tile(256, 4, 1, 8),  # no cluster: what multicast is worth
    Tile(256, 3, 2, 8),
    Tile(256, 4, 2, 16),
    Tile(128, 6, 2, 8),  # twice the tiles, for products whose 128×256 tiles would leave SMs idle
    Tile(64, 8, 1, 8),  # four times the tiles, for smaller products still
)
KERNELS = CudaSource(__name__, [t.kernel(d) for d in IS_BF16 for t in CUDA_CANDIDATES], arch="sm_90a")


# ---- CUDA C launcher ----------------------------------------------------------------------------------


C_STAGE_BYTES = 2 * 16 * 1024  # two 16 KB staging buffers of C, one per consumer warpgroup


def tma_writable(c: torch.Tensor) -> bool:
    """Whether TMA can write C: its rows must start 16-byte aligned."""
    return (c.shape[-1] * c.element_size()) % 16 == 0 and c.data_ptr() % 16 == 0


def c_tensor_map(c: torch.Tensor, box: tuple[int, int], fallback):
    """(C's tensor map with this box, 1) when TMA can write C, else (`fallback`, 0): the kernel then
    stores from registers and never reads the map."""
    if not tma_writable(c):
        return fallback, np.int32(0)
    return tensor_map_2d(c, box), np.int32(1)


def shared_bytes(tile: Tile) -> int:
    """A candidate's dynamic shared memory: its ring of A and B tiles, C's staging buffers, barriers."""
    return tile.STAGES * (BM * BK + BK * tile.BN) * 2 + C_STAGE_BYTES + BARRIER_BYTES


def cluster_tiles(M: int, N: int, tile: Tile) -> int:
    """How many cluster tiles (CLUSTER_M vertically adjacent BM×BN tiles) cover an M×N product."""
    return triton.cdiv(triton.cdiv(M, BM), tile.CLUSTER_M) * triton.cdiv(N, tile.BN)


TIMELINE_SLOTS = 16  # per CTA, as the kernel's Timeline writes them


def launch_candidate(a_map, b_map, c, M, N, K, tile: Tile, clusters: int | None = None,
                     timeline: torch.Tensor | None = None):
    """One CUDA candidate on prepared tensor maps (the search times these; the tests check each).

    The persistent grid has as many clusters as can be resident at once (at most one per cluster tile),
    or `clusters` (fewer: the tests use it to reach the stream-K schedule with small products).
    `timeline`: int64, TIMELINE_SLOTS per CTA of the grid, for the kernel's stamps (python -m implementations.tools.timeline).
    """
    smem = shared_bytes(tile)
    if clusters is None:
        clusters = resident_clusters(tile.kernel(c.dtype), c.device, tile.CLUSTER_M, smem)
    clusters = min(clusters, cluster_tiles(M, N, tile))
    c_map, c_by_tma = c_tensor_map(c, (64, 64), a_map)  # box: 64 columns × 64 rows, half a consumer's block
    # Stream-K's partial sums (a tile of floats per CTA) and flags (one per consumer warpgroup, zeroed;
    # the kernel leaves them zeroed); four floats and two ints when unused.
    ctas = clusters * tile.CLUSTER_M if tile.STREAM_K else 1
    partials = torch.empty(ctas * (BM * tile.BN if tile.STREAM_K else 4), device=c.device, dtype=torch.float32)
    flags = torch.zeros(2 * ctas, device=c.device, dtype=torch.int32)
    if timeline is None:
        timeline = torch.empty(0, device=c.device, dtype=torch.int64)  # no elements: a null pointer, no stamps
    elif timeline.numel() < clusters * tile.CLUSTER_M * TIMELINE_SLOTS or timeline.dtype != torch.int64:
        raise ValueError(f"timeline: int64, {TIMELINE_SLOTS} per CTA of the {clusters * tile.CLUSTER_M}")
    return bind(KERNELS, tile.kernel(c.dtype), (clusters * tile.CLUSTER_M,), (THREADS,),
                (a_map, b_map, c_map, c, np.int32(M), np.int32(N), np.int32(K), c_by_tma, partials, flags, timeline),
                shared_mem=smem)


@functools.cache
def resident_clusters(name: str, device: torch.device, cluster: int, smem: int) -> int:
    """How many clusters of this kernel fit on the GPU at once (the persistent grid's size).

    Not simply SMs / cluster: the CTAs of a cluster must sit in one GPC, and an H100's GPCs hold
    different numbers of SMs, so some SMs cannot take part in pairs. A persistent grid larger than
    what fits runs its last clusters only after the others have finished all their tiles: twice the time.
    """
    from cuda.bindings import driver

    kernel = KERNELS.function(name, device.index)  # compiled here rather than at the first launch
    cupy = kernel_cupy()
    pointer = function_pointer(kernel)
    cupy.cuda.driver.funcSetAttribute(pointer, cupy.cuda.driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem)
    config = driver.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = sm_count(device), 1, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = THREADS, 1, 1
    config.sharedMemBytes = smem
    attribute = driver.CUlaunchAttribute()
    attribute.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    attribute.value.clusterDim.x, attribute.value.clusterDim.y, attribute.value.clusterDim.z = cluster, 1, 1
    config.attrs, config.numAttrs = [attribute], 1
    with cupy.cuda.Device(device.index):
        err, count = driver.cuOccupancyMaxActiveClusters(driver.CUfunction(pointer), config)
    if err != driver.CUresult.CUDA_SUCCESS or count < 1:
        raise RuntimeError(f"cuOccupancyMaxActiveClusters failed for {name}: {err.name}, {count}")
    return count


def prepare_cuda(a, b, c, tiles=CUDA_CANDIDATES, clusters: int | None = None, l2_promotion: int = 256,
                 timeline: torch.Tensor | None = None):
    """(refresh, {tile: launch}) for these candidates, sharing one set of tensor maps (A's and B's with
    this L2 promotion: see tensor_map_2d) and `timeline` (see launch_candidate)."""
    M, K = a.shape
    N = b.shape[1]
    a_t, b_t, refresh = tma_operands(a, b)
    a_map = tensor_map_2d(a_t, (BK, BM), l2_promotion)  # box: 64 k × 128 rows
    b_map = tensor_map_2d(b_t, (64, BK), l2_promotion)  # box: 64 columns × 64 k; BN / 64 per stage
    return refresh, {tile: launch_candidate(a_map, b_map, c, M, N, K, tile, clusters, timeline) for tile in tiles}


CUDA_SEARCH = Search(__name__, "cuda", CUDA_CANDIDATES, prepare_cuda, tile=lambda tile: (BM, tile.BN))


def warp_specialized_cuda(a, b, c):
    if a.shape[1] == 0:
        return zero_product(c)
    return CUDA_SEARCH.tuned(a, b, c)


# ---- Triton: v14's persistent kernel with its two knobs on, its best configurations searched ------------


def tma_config(bm, bn, bk, warps, stages, group_m=8, **knobs):
    """A config of a kernel with v14's parameters (knobs: its further constexprs, e.g. FLATTEN)."""
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group_m, **knobs},
                         num_warps=warps, num_stages=stages)


TRITON_CONFIGS = (
    tma_config(128, 256, 64, 8, 3, FLATTEN=True),
    tma_config(128, 256, 64, 8, 4, FLATTEN=True),
    tma_config(128, 256, 64, 8, 3, FLATTEN=False),  # one tile after another: what flattening is worth
    tma_config(256, 128, 64, 8, 3, FLATTEN=True),
    tma_config(128, 128, 64, 8, 4, FLATTEN=True),
    tma_config(128, 128, 64, 4, 4, FLATTEN=True),
    tma_config(128, 256, 64, 8, 3, group_m=16, FLATTEN=True),
)


def c_descriptor(c: torch.Tensor, config: triton.Config) -> dict:
    """The C arguments of v14's kernel: a TMA descriptor of half a tile when TMA can write C, else none
    (masked stores)."""
    if not tma_writable(c):
        return {"c_desc": None, "C_BY_TMA": False}
    block = [1] * (c.dim() - 2) + [config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"] // 2]
    return {"c_desc": TensorDescriptor.from_tensor(c, block), "C_BY_TMA": True}


def prepare_triton(a, b, c, configs):
    return bind_configs(a, b, c, configs, extra=lambda config: c_descriptor(c, config))


TRITON_SEARCH = Search(__name__, "triton", TRITON_CONFIGS, prepare_triton, tile=block_of, describe=describe_config,
                       reference=("unflattened", TRITON_CONFIGS[2]))


def warp_specialized_triton(a, b, c):
    if a.shape[-1] == 0:
        return zero_product(c)
    return TRITON_SEARCH.tuned(a, b, c)


VARIANT = Variant(
    __name__,
    title="warp-specialized, clusters",
    dtypes=("fp16", "bf16"),
    cuda=warp_specialized_cuda,
    triton=warp_specialized_triton,
    cuda_source=KERNELS,
    min_cc=(9, 0),
    searches=(CUDA_SEARCH, TRITON_SEARCH),
    layouts={"triton": LAYOUTS},  # v14's Triton kernel: TMA boxes of the matrix a transposed operand views
    batched=("triton",),  # v14's persistent tile loop walks every product's tiles
)
