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
otherwise the accumulators go straight from registers to memory, as in v14.

What it should reach: at or above cuBLAS for large bf16/fp16 products on an H100; public H100
worklogs with these techniques report a little above cuBLAS.

Its story (measurements, what was tried): docs/notes/v15.md.
"""

import functools
from typing import NamedTuple

import numpy as np
import torch
import triton
from triton.runtime.interpreter import InterpretedFunction
from triton.tools.tensor_descriptor import TensorDescriptor

from .core.cuda_c import CudaSource, bind, check_grid, function_pointer, tensor_map_2d
from .core.cuda_c import cupy as kernel_cupy
from .core.registry import TunedRun, Variant
from .v11_autotuned import block_of, describe, search_fastest
from .v14_wgmma_tma import (BARRIER_BYTES, IS_BF16, launch_tma_persistent, programs, sm_count, tma_operands,
                            tma_persistent_kernel, zero_product)

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
_cuda_choices: dict[tuple, tuple[Tile, dict[Tile, float], float]] = {}


# ---- CUDA C launcher ----------------------------------------------------------------------------------


C_STAGE_BYTES = 2 * 16 * 1024  # two 16 KB staging buffers of C, one per consumer warpgroup


def tma_writable(c: torch.Tensor) -> bool:
    """Whether TMA can write C: its rows must start 16-byte aligned."""
    return (c.shape[1] * c.element_size()) % 16 == 0 and c.data_ptr() % 16 == 0


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
    `timeline`: int64, TIMELINE_SLOTS per CTA of the grid, for the kernel's stamps (scripts/v15_timeline.py).
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


def one_candidate(prepare, a, b, c, tile):
    """One candidate's whole run (operand refresh included): what the tests check for each candidate."""
    refresh, runs = prepare(a, b, c, (tile,))

    def run():
        refresh()
        return runs[tile]()

    return run


def launch_tile(a, b, c, tile: Tile, clusters: int | None = None, l2_promotion: int = 256):
    return one_candidate(functools.partial(prepare_cuda, clusters=clusters, l2_promotion=l2_promotion), a, b, c, tile)


def searched_cuda(a, b, c, prepare, tile_of) -> TunedRun:
    """The fastest of `prepare`'s candidates, searched at the first call per device, shape and dtype.

    `prepare(a, b, c)` -> (refresh, {candidate: launch}); `tile_of(candidate)`: its block tile (BM, BN) of C.
    """
    M, K = a.shape
    if K == 0:
        return zero_product(c)
    refresh, runs = prepare(a, b, c)
    key = (prepare.__module__, torch.cuda.get_device_name(a.device), M, b.shape[1], K, a.dtype)

    def launch():
        refresh()
        if key not in _cuda_choices:
            _cuda_choices[key] = search_fastest(runs)
        return runs[_cuda_choices[key][0]]()

    def chosen() -> str:
        best, times, seconds = _cuda_choices[key]
        others = ", ".join(f"{t} {ms:.3f} ms" for t, ms in sorted(times.items(), key=lambda x: x[1]) if t != best)
        return f"{best}, {times[best]:.3f} ms; others: {others} ({seconds:.1f} s)"

    return TunedRun(launch, chosen, lambda: tile_of(_cuda_choices[key][0]))


def warp_specialized_cuda(a, b, c):
    return searched_cuda(a, b, c, prepare_cuda, lambda tile: (BM, tile.BN))


# ---- Triton: v14's persistent kernel with its two knobs on, its best configurations searched ------------


def tma_config(bm, bn, bk, warps, stages, group_m=8, **knobs):
    """A config of a kernel with v14's parameters (knobs: its further constexprs, e.g. FLATTEN)."""
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group_m, **knobs},
                         num_warps=warps, num_stages=stages, pre_hook=_set_boxes)


def _set_boxes(nargs):
    """The descriptors' boxes follow the config being tried (as in Triton's persistent-matmul tutorial)."""
    nargs["a_desc"].block_shape = [nargs["BLOCK_M"], nargs["BLOCK_K"]]
    nargs["b_desc"].block_shape = [nargs["BLOCK_K"], nargs["BLOCK_N"]]
    if isinstance(nargs.get("c_desc"), TensorDescriptor):
        nargs["c_desc"].block_shape = [nargs["BLOCK_M"], nargs["BLOCK_N"] // 2]


TRITON_CONFIGS = (
    tma_config(128, 256, 64, 8, 3, FLATTEN=True),
    tma_config(128, 256, 64, 8, 4, FLATTEN=True),
    tma_config(128, 256, 64, 8, 3, FLATTEN=False),  # one tile after another: what flattening is worth
    tma_config(256, 128, 64, 8, 3, FLATTEN=True),
    tma_config(128, 128, 64, 8, 4, FLATTEN=True),
    tma_config(128, 128, 64, 4, 4, FLATTEN=True),
    tma_config(128, 256, 64, 8, 3, group_m=16, FLATTEN=True),
)

tuned_kernel = triton.autotune(configs=list(TRITON_CONFIGS), key=["M", "N", "K"])(tma_persistent_kernel)


def c_descriptor(c: torch.Tensor, block: list[int]) -> dict:
    """The C arguments of v14's kernel: a TMA descriptor when TMA can write C, else none (masked stores)."""
    if not tma_writable(c):
        return {"c_desc": None, "C_BY_TMA": False}
    return {"c_desc": TensorDescriptor.from_tensor(c, block), "C_BY_TMA": True}


def launch_with_config(a, b, c, config: triton.Config, kernel, **args):
    """One Triton config of `kernel` (a kernel with v14's parameters, and `args` besides), without the search."""
    return launch_tma_persistent(a, b, c, **config.kwargs, kernel=kernel, num_warps=config.num_warps,
                                 num_stages=config.num_stages, **args)


def launch_config(a, b, c, config: triton.Config):
    """One config of v15's Triton kernel (the interpreter's path; the tests check each config)."""
    box = [config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"] // 2]
    return launch_with_config(a, b, c, config, tma_persistent_kernel, **c_descriptor(c, box))


def searched_triton(a, b, c, kernel, tuned, configs, launch_one, **args) -> TunedRun:
    """`tuned` (triton.autotune over `configs` of `kernel`, a kernel with v14's parameters and `args`
    besides) on a, b, c; in the interpreter the first config runs, untimed, through `launch_one`.

    The first call searches; later calls launch the chosen config through `launch_one`, not through the
    autotuner. Its per-call dispatch made the GPU wait: at 256³ bf16 a call took 44.7 µs under per-call
    event timing, the same config launched directly 7.9 µs, the kernel 4.3 µs
    (scripts/triton_launch_probe.py, docs/results/h100_triton_launch_probe.txt)."""
    M, K = a.shape
    N = b.shape[1]
    if isinstance(kernel, InterpretedFunction) or K == 0:
        first = configs[0]
        note = f"{describe(first)} (interpreter: first config, untimed)"
        return TunedRun(launch_one(a, b, c, first), lambda: note, lambda: block_of(first))
    a_t, b_t, refresh = tma_operands(a, b)
    box = configs[0].kwargs  # the boxes are reset per config by _set_boxes
    a_desc = TensorDescriptor.from_tensor(a_t, [box["BLOCK_M"], box["BLOCK_K"]])
    b_desc = TensorDescriptor.from_tensor(b_t, [box["BLOCK_K"], box["BLOCK_N"]])
    check_grid((programs(a.device, M, N, 64, 64),))
    launch = functools.partial(
        tuned[lambda meta: (programs(a.device, M, N, meta["BLOCK_M"], meta["BLOCK_N"]),)],
        a_desc, b_desc, c, M, N, K, c.stride(0), c.stride(1), **args)

    chosen = {}  # after the search: the config and its direct launch

    def run():
        if chosen:
            return chosen["run"]()
        refresh()
        out = launch()
        chosen["config"] = tuned.best_config
        chosen["run"] = launch_one(a, b, c, chosen["config"])
        return out

    return TunedRun(run, lambda: f"{describe(chosen['config'])} (fastest of {len(configs)})",
                    lambda: block_of(chosen["config"]))


def warp_specialized_triton(a, b, c):
    box = [TRITON_CONFIGS[0].kwargs["BLOCK_M"], TRITON_CONFIGS[0].kwargs["BLOCK_N"] // 2]  # reset per config
    return searched_triton(a, b, c, tma_persistent_kernel, tuned_kernel, TRITON_CONFIGS, launch_config,
                           **c_descriptor(c, box))


VARIANT = Variant(
    __name__,
    title="warp-specialized, clusters",
    dtypes=("fp16", "bf16"),
    cuda=warp_specialized_cuda,
    triton=warp_specialized_triton,
    cuda_source=KERNELS,
    min_cc=(9, 0),
)
