"""v15 warp specialization: a producer warpgroup, two consumer warpgroups, clusters and TMA multicast.

The idea. v14's parts, reorganised the way the fastest Hopper GEMMs are:
- Roles: warpgroup 0 only issues TMA copies (one thread), warpgroups 1 and 2 only multiply. The
  producer runs ahead across tile boundaries, so the consumers' epilogue overlaps the next copies.
- Registers: each consumer thread holds 128 fp32 accumulators: a 64×256 block per warpgroup, a 128×256
  tile per CTA, and B is read from shared memory once per 64×256 instead of per 64×128. `setmaxnreg`
  moves registers from the producer (40 per thread) to the consumers (232), as CUTLASS's kernels do.
- Clusters: CLUSTER_M = 2 CTAs computing vertically adjacent tiles share one B tile; each loads half and
  TMA *multicasts* it into both; a slot is refilled once both CTAs' consumers arrive (`mapa`). A tile
  without a pair launches plainly: as one-CTA clusters, tiles side by side read far more from L2.
- L2-aware order: clusters walk GROUP_M cluster rows at a time, column by column, and every other
  round of tiles walks k downwards, starting on what the round before read last.
- Epilogue: each consumer rounds its block into a swizzled staging buffer (stmatrix), one thread hands
  it to a TMA store, and the warpgroup starts its next tile while the copy engine writes.
- Stream-K (CUDA): the last round's k-blocks dealt out evenly; a tile's first cluster adds the others' fp32
  partial sums. Split-K (both languages), for fewer tiles than SMs: SPLIT_K slices of k per tile, the
  last slice to finish adds all the partials.
- Swapped operands (both languages), for at most 32 rows (decode): Cᵀ = Bᵀ·Aᵀ, so B's columns fill
  wgmma's 64 rows and A's few rows its N (8 to 32), and the block is written back transposed.
Candidates (tiles, 64-row ones with one consumer or two side by side, stages, clusters, stream-K, split-K, swapped)
are searched per problem; Triton also v11's kernel (no TMA) where tiles are few and for batches.

CUDA C and Triton side by side:

| concept | CUDA C (kernels_cuda/v15_warp_specialized.cu) | Triton (v14's kernel, its knobs on) |
|---|---|---|
| producer / consumers | `if (warpgroup == 0)` ... `else` ..., by hand | `warp_specialize=True`: crashed Triton 3.6 |
| loads run ahead of tiles | the producer's loop over tiles and k-blocks | `tl.range(flatten=True)` (FLATTEN) |
| register split | `setmaxnreg.dec 40` / `setmaxnreg.inc 232` | none |
| 128×256 tiles | two m64n256k16 warpgroups | BLOCK 128×256 among the candidates |
| clusters + multicast | `__cluster_dims__` (pairs only), `.multicast::cluster`, `mapa` | none in this kernel |
| tile order | grouped over cluster tiles, k downwards in every other round | GROUP_M in the persistent loop (v14's) |
| epilogue | stmatrix into staging, `cp.async.bulk.tensor` store | `c_desc.store` of two halves (C_BY_TMA) |
| k cut among SMs | stream-K; split-K: slices in the persistent walk | split-K: a grid axis of k-slices |
| last slice adds | `atom.acq_rel` on a counter, `split_k_fixup` | `tl.atomic_add(sem="acq_rel")` on a counter |
| swapped (few rows) | SWAP_AB: m64n8-32 wgmma, `store_transposed_via_tma` | split-K on `b.mT`, `a.mT` into `c.mT` |
| transposed operand | boxes of the stored matrix, wgmma's transpose bit | `.T` of the box (`operand_box`) |
| batch | 3-D tensor maps; tile t is product t / tiles per product | 3-D descriptors, the same walk |
| search | the rung's candidates, timed by the shared search | the same (`triton.autotune` could: one timer for both) |

What Triton does for you: the pipeline, descriptors, layouts and wgmma, as in v14; with `flatten=True`
the pipeliner treats the tile loop and the k-loop as one, so the next tile's first loads fly during
this tile's epilogue, as the CUDA producer arranges by hand: v14's `tma_persistent_kernel` with FLATTEN
and C_BY_TMA on. Left out: warp specialization, the register split, clusters, the alternating k.

Constraints: fp16/bf16 on sm_90a; every layout and batches in place (swapped: A row-major only). TMA writes C
where its rows are 16-byte aligned (N % 8 == 0), else registers do. Triton may copy a B whose rows are not 128
bytes apart (PAD_B).
What it should reach: at or above cuBLAS, as public worklogs report. Its story: docs/notes/v15.md.
"""

import functools
from typing import NamedTuple

import numpy as np
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from .core import prebuild
from .core.check import LAYOUTS, rowwise
from .core.cuda_c import MAX_GRID, CudaSource, bind, check_grid, function_pointer, tensor_map
from .core.cuda_c import cupy as kernel_cupy
from .core.registry import Variant, layout_of
from .core.search import Search, with_refresh
from .core.triton_util import block_of, describe_config, prebound
from .core.validate import check_bias
from .v11_autotuned import grouped_tile
from .v11_autotuned import launch_config as launch_pointer_config
from .v14_wgmma_tma import (BARRIER_BYTES, IS_BF16, apply_epilogue, apply_scales, bind_tma_persistent, operand_box,
                             operand_descriptors, padded_rows, sm_count, tma_views, zero_product)

BM, BK = 128, 64  # BM: the rows of a tile with two consumer warpgroups (Tile.BM = 64: one); BK of 16-bit operands
INPUTS = {torch.float16: 0, torch.bfloat16: 1, torch.float8_e4m3fn: 2}  # the kernel's INPUT (fp8: v19)


class Tile(NamedTuple):
    BN: int
    STAGES: int
    CLUSTER_M: int
    GROUP_M: int
    STREAM_K: int = 0
    BM: int = BM  # 64: one consumer warpgroup, two CTAs per SM
    SPLIT_K: int = 1  # > 1: each tile's k-blocks cut into this many slices (split-K)
    CONSUMERS_N: int = 1  # 2 (BM = 64): two consumer warpgroups side by side, each 64 × BN / 2
    SWAP_AB: int = 0  # 1: the kernel computes Cᵀ = Bᵀ·Aᵀ, C's rows along its BN (8 to 32) columns (few rows: decode)

    @property
    def consumers(self) -> int:
        return self.BM // 64 * self.CONSUMERS_N

    @property
    def threads(self) -> int:
        """A producer warpgroup and the consumer warpgroups."""
        return 128 + 128 * self.consumers

    def kernel(self, dtype: torch.dtype, layout: str = "nn", epilogue: str = "NoEpilogue",
               groups: str = "NoGroups") -> str:
        """The kernel for this dtype and layout ("nn", "nt", "tn", "tt": which operands are transposed), applying
        `epilogue` (a C++ type: v17 instantiates this kernel with its own) before it stores C, its tiles laid over
        `groups` (a C++ template: v18's ragged groups of A's rows)."""
        a_t, b_t = (int(op == "t") for op in layout)
        name = "warp_specialized" if self.CLUSTER_M > 1 else "warp_specialized_unclustered"  # a plain launch
        return f"{name}<{INPUTS[dtype]},{','.join(map(str, self))},{a_t},{b_t},{epilogue},{groups}>"

    def __str__(self) -> str:  # CONSUMERS_N and SWAP_AB only where set: the others keep their names (and cache keys)
        defaults = {"CONSUMERS_N": 1, "SWAP_AB": 0}
        return " ".join(f"{k}={v}" for k, v in self._asdict().items() if defaults.get(k) != v)

    def kernel_layout(self, layout: str) -> str:
        """The layout the kernel reads for a product of this layout: swapped (SWAP_AB), A' = Bᵀ and B' = Aᵀ are each
        transposed where B and A are not."""
        if not self.SWAP_AB:
            return layout
        return "".join("n" if op == "t" else "t" for op in reversed(layout))

    def reads(self, layout: str) -> bool:
        """Whether the kernel reads this layout in place: a swapped one needs A row-major (SWAP_LAYOUTS)."""
        return not self.SWAP_AB or layout in SWAP_LAYOUTS


CUDA_CANDIDATES = (
    Tile(256, 4, 2, 8),
    Tile(256, 4, 2, 8, 1),  # the last, partial round of tiles dealt out by k-blocks (stream-K)
    Tile(256, 4, 1, 8),  # no cluster: what multicast is worth
    Tile(256, 3, 2, 8),
    Tile(256, 4, 2, 16),
    Tile(128, 6, 2, 8),  # twice the tiles, for products whose 128×256 tiles would leave SMs idle
    Tile(64, 8, 1, 8),  # four times the tiles, for smaller products still
    Tile(128, 3, 1, 8, 0, 64),  # 64-row tiles, two CTAs per SM: products (or batches of them) of few rows
    Tile(128, 4, 1, 8, 0, 64),  # one CTA per SM, a deeper ring: about as many tiles as SMs (1024³)
    Tile(128, 8, 1, 8, 0, 64, 1, 2),  # the same tile, two consumer warpgroups side by side, a ring twice as deep
    Tile(64, 5, 1, 8, 0, 64),
    Tile(64, 5, 1, 8, 1, 64),  # and their k-blocks dealt out: fewer tiles than SMs (decode, skinny, small)
)
CUDA_SPLIT_CANDIDATES = (  # tiles cut along k, as Triton's SPLIT_K_CONFIGS: for products of fewer tiles than SMs
    Tile(128, 6, 1, 8, 0, 64, 4),  # decode: a deep ring of B per SM
    Tile(128, 4, 1, 8, 0, 64, 2),  # skinny: a few dozen rows, N and K of thousands
    Tile(64, 8, 1, 8, 0, 128, 2),  # about 128 rows: B read once, k in two halves to fill the SMs
)
CUDA_UNPAIRED_CANDIDATES = (  # 128×128 tiles, no cluster: for one row of tiles (a pair along M would be half empty)
    Tile(128, 6, 1, 8),  # where 128×64 tiles would be a few more than SMs (128×10240×8192), and for batches of 128²
)
CUDA_SWAP_CANDIDATES = (  # Cᵀ = Bᵀ·Aᵀ: 64 columns of C by BN of its rows, for products of at most SWAP_ROWS rows
    Tile(8, 8, 1, 8, 0, 64, 2, 1, 1),  # up to 8 rows
    Tile(8, 16, 1, 8, 0, 64, 1, 1, 1),  # the same unsplit, its ring twice as deep: one row, K of a few thousand
    Tile(16, 8, 1, 8, 0, 64, 2, 1, 1),  # decode: two slices of k per 64 columns, about a CTA per SM at N = 4096
    Tile(16, 8, 1, 8, 0, 64, 4, 1, 1),
    Tile(16, 8, 1, 8, 0, 128, 1, 1, 1),  # N of tens of thousands: 128 columns of C per CTA, tiles enough unsplit
    Tile(32, 8, 1, 8, 0, 64, 2, 1, 1),  # up to 32 rows
)
SWAP_ROWS = 32
SWAP_LAYOUTS = ("nn", "nt")  # A row-major: A' = Aᵀ is K-major, as a swapped kernel's narrow operand must be


def swappable(a: torch.Tensor) -> bool:
    """Whether a swapped kernel (either language) reads this A in place: row-major (SWAP_LAYOUTS)."""
    return layout_of(a) == "n"


def swap_offered(M: int, bn: int, narrowest: int = 8) -> bool:
    """Whether a swapped tile of BN columns joins the search for M rows: at most SWAP_ROWS rows, and BN at least the
    narrowest width (8, 16 or 32; at least `narrowest`) that holds them and at most twice that."""
    width = max(narrowest, 8 if M <= 8 else 16 * triton.cdiv(M, 16))
    return M <= SWAP_ROWS and width <= bn <= 2 * width


def swapped_candidates(candidates, a, narrowest: int = 8) -> tuple:
    """Those of the swapped `candidates` (CUDA C tiles or Triton configs) that hold A's few rows (swap_offered)."""
    if not swappable(a):
        return ()
    return tuple(cand for cand in candidates
                 if swap_offered(a.shape[-2], cand.BN if isinstance(cand, Tile) else cand.kwargs["BLOCK_N"], narrowest))


KERNELS = CudaSource(__name__, [t.kernel(d, t.kernel_layout(lay)) for d in IS_BF16 for lay in LAYOUTS
                                for t in CUDA_CANDIDATES + CUDA_SPLIT_CANDIDATES + CUDA_UNPAIRED_CANDIDATES
                                + CUDA_SWAP_CANDIDATES if t.reads(lay)],
                     arch="sm_90a")


# ---- CUDA C launcher ----------------------------------------------------------------------------------


C_STAGE_BYTES = 2 * 16 * 1024  # two 16 KB staging buffers of C, one per consumer warpgroup of a 128-row tile


def tma_writable(c: torch.Tensor) -> bool:
    """Whether TMA can write C: its rows must start 16-byte aligned."""
    return (c.shape[-1] * c.element_size()) % 16 == 0 and c.data_ptr() % 16 == 0


def c_tensor_map(c: torch.Tensor, box: tuple[int, int], fallback):
    """(C's tensor map with this box, 1) when TMA can write C, else (`fallback`, 0): the kernel then
    stores from registers and never reads the map. The map is 3-D (a single C is a batch of one)."""
    if not tma_writable(c):
        return fallback, np.int32(0)
    return tensor_map(c if c.dim() == 3 else c.unsqueeze(0), box), np.int32(1)


class TmaProblem(NamedTuple):
    """What every candidate of one problem shares: the operands' 3-D tensor maps (a single matrix is a batch
    of one), the sizes, and the layout ("nn", "nt", "tn" or "tt")."""
    a_map: np.void
    b_map: np.void
    M: int
    N: int
    K: int
    products: int  # the matrices of C (1: one product)
    a_step: int  # 1: A is a batch; 0: one A shared by the batch (always read as matrix 0)
    b_step: int
    layout: str
    dtype: torch.dtype  # the operands'


def v15_boxes(a_t: bool, b_t: bool) -> tuple[tuple[int, int], tuple[int, int]]:
    """The TMA boxes (columns, rows) of the stored A and B: 64 × 64 in every layout, BM / 64 of A and BN / 64
    of B per tile. A box row is 64 elements (128 bytes): of k (a row-major A, a transposed B) or of M or N
    (a transposed A, a row-major B)."""
    return (64, BK), (64, BK)


def tma_problem(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, l2_promotion: int = 256, boxes=v15_boxes,
                b_k_major: bool = False):
    """(TmaProblem, refresh) for C = a @ b, each operand row-major or a transposed view, 2-D or a batch:
    boxes of the matrices TMA reads (tma_views: the stored ones, padded to a 16-byte row pitch where they are
    not, refresh() copying into the padding inside the timed call), of the shapes `boxes(A_T, B_T)` gives,
    and their L2 promotion (see tensor_map)."""
    a_s, b_s, flags, refresh = tma_views(a, b, b_k_major)
    layout = "".join("t" if flags.get(flag) else "n" for flag in ("A_T", "B_T"))
    maps = [tensor_map(stored if stored.dim() == 3 else stored.unsqueeze(0), box, l2_promotion)
            for stored, box in zip((a_s, b_s), boxes(*(op == "t" for op in layout)))]
    products = c.shape[0] if c.dim() == 3 else 1
    problem = TmaProblem(*maps, c.shape[-2], c.shape[-1], a.shape[-1], products, int(a.dim() == 3),
                         int(b.dim() == 3), layout, a.dtype)
    return problem, refresh


def shared_bytes(tile: Tile) -> int:
    """A candidate's dynamic shared memory: its ring of A and B tiles, C's staging buffers, barriers."""
    return tile.STAGES * (tile.BM * BK + BK * tile.BN) * 2 + C_STAGE_BYTES // 2 * tile.consumers + BARRIER_BYTES


def cluster_tiles(M: int, N: int, tile: Tile) -> int:
    """How many cluster tiles (CLUSTER_M vertically adjacent BM×BN tiles) cover an M×N product."""
    return triton.cdiv(triton.cdiv(M, tile.BM), tile.CLUSTER_M) * triton.cdiv(N, tile.BN)


def most_clusters(M: int, N: int, products: int, tile: Tile, grouped: bool = False) -> int:
    """How many clusters can have work: one per cluster tile (and slice of k) of every product; grouped, the
    products are ragged groups of M rows whose sizes the host does not read, each group's last cluster row may be
    partly empty, so at most one more cluster row per group."""
    if grouped:
        return cluster_tiles(M, N, tile) + products * triton.cdiv(N, tile.BN)
    return products * cluster_tiles(M, N, tile) * tile.SPLIT_K


TIMELINE_SLOTS = 16  # per CTA, as the kernel's Timeline writes them


def launch_candidates(problem: TmaProblem, c, tiles, source: CudaSource = KERNELS, epilogue: str = "NoEpilogue",
                      offsets: torch.Tensor | None = None, **options) -> dict:
    """{tile: launch_candidate(...)} for these tiles. Each launch needs its compiled kernel for its grid's size
    (resident_clusters): inside a search the compiles are left to the search, which runs them side by side when
    it times the candidates and runs none when the tuning cache has the choice (which compiles at its first
    call); outside one (the tests launch every candidate) they run side by side here."""
    def launches():
        return {tile: launch_candidate(problem, c, tile, source=source, epilogue=epilogue, offsets=offsets, **options)
                for tile in tiles}

    if prebuild.collecting_now():
        return launches()
    with prebuild.collecting() as compiles:
        bound = launches()
    prebuild.build(compiles)
    return bound


def launch_candidate(problem: TmaProblem, c, tile: Tile, clusters: int | None = None,
                     timeline: torch.Tensor | None = None, epilogue: str = "NoEpilogue",
                     bias: torch.Tensor | None = None, source: CudaSource = KERNELS,
                     offsets: torch.Tensor | None = None, scales: torch.Tensor | None = None):
    """One CUDA candidate on a problem's prepared tensor maps (the search times these; the tests check each).

    The persistent grid has as many clusters as can be resident at once (at most one per cluster tile, or
    SPLIT_K), or `clusters` (fewer: the tests use it to reach the stream-K schedule with small products).
    `timeline`: int64, TIMELINE_SLOTS per CTA of the grid, for the kernel's stamps
    (python -m implementations.tools.timeline).
    `epilogue`: the C++ type the kernel applies before it stores C, reading `bias` (N elements of C's type)
    where it adds one, from `source` (v17's .cu instantiates this kernel with its epilogues).
    `offsets`: a grouped product's (v18: its .cu maps the tiles to `problem.products` ragged groups of A's rows,
    the group ends read on the device); the grid is then as large as the most cluster tiles M rows in that many
    groups can have, so that the launch needs no group sizes from the device.
    `scales`: fp8 operands' (v19: the kernel multiplies the accumulators by s_A·s_B, or per row and column).
    """
    # the kernel reads one element of it per column of C, or none: swapped, C's columns are its M rows
    check_bias(bias, c, problem.M if tile.SWAP_AB else problem.N, epilogue != "NoEpilogue")
    smem = shared_bytes(tile)
    kernel = tile.kernel(problem.dtype, problem.layout, epilogue, "NoGroups" if offsets is None else "Groups")
    if clusters is not None:
        return bind_candidate(problem, c, tile, clusters, timeline, bias, source, offsets, scales, kernel, smem)
    # The grid's size needs the compiled kernel, so the launch is bound at its first call: a choice the tuning
    # cache gives compiles only itself. A search compiles every candidate first, side by side (prebuild).
    device = c.device.index
    source.compile_ahead(kernel, device)
    bound = []

    def run():
        if not bound:
            if torch.cuda.is_current_stream_capturing():
                raise RuntimeError(f"{kernel}: its first call compiles it, which a CUDA graph capture cannot hold; "
                                   "call it once before capturing")
            fit = resident_clusters(source, kernel, c.device, tile.CLUSTER_M, smem, tile.threads)
            bound.append(bind_candidate(problem, c, tile, fit, timeline, bias, source, offsets, scales, kernel, smem))
            run.tensors = bound[0].tensors  # as bind's launch has them, once bound
        return bound[0]()

    return run


def bind_candidate(problem: TmaProblem, c, tile: Tile, clusters: int, timeline, bias, source: CudaSource, offsets,
                   scales, kernel: str, smem: int):
    """launch_candidate's launch on a grid of at most `clusters` clusters (see there)."""
    clusters = min(clusters, most_clusters(problem.M, problem.N, problem.products, tile, offsets is not None))
    # box: 64 columns × 64 rows, half a consumer's block; swapped, 64 columns × BN rows of C: a consumer's block
    c_map, c_by_tma = c_tensor_map(c, (64, tile.BN if tile.SWAP_AB else 64), problem.a_map)
    # Stream-K's partial sums (a tile of floats per CTA) and flags (one per consumer warpgroup, zeroed; the
    # kernel leaves them zeroed), split-K's (SPLIT_K tiles of floats per CTA tile) and counters (one per
    # consumer warpgroup of each CTA tile, zeroed, left zeroed); four floats and two ints when unused.
    if tile.SPLIT_K > 1:
        ctas, per_cta = problem.products * cluster_tiles(problem.M, problem.N, tile) * tile.CLUSTER_M, tile.SPLIT_K
    else:
        ctas, per_cta = (clusters * tile.CLUSTER_M, 1) if tile.STREAM_K else (1, 0)
    partials = torch.empty(max(4, ctas * per_cta * tile.BM * tile.BN), device=c.device, dtype=torch.float32)
    flags = torch.zeros(2 * ctas, device=c.device, dtype=torch.int32)
    if timeline is None:
        timeline = torch.empty(0, device=c.device, dtype=torch.int64)  # no elements: a null pointer, no stamps
    elif timeline.numel() < clusters * tile.CLUSTER_M * TIMELINE_SLOTS or timeline.dtype != torch.int64:
        raise ValueError(f"timeline: int64, {TIMELINE_SLOTS} per CTA of the {clusters * tile.CLUSTER_M}")
    if bias is None:
        bias = torch.empty(0, device=c.device, dtype=c.dtype)  # a null pointer: the default epilogue reads none
    if offsets is None:
        offsets = torch.empty(0, device=c.device, dtype=torch.int32)  # a null pointer: NoGroups reads none
    if scales is None:
        scales = torch.empty(0, device=c.device, dtype=torch.float32)  # a null pointer: 16-bit operands read none
    sizes = (problem.M, problem.N, problem.K, problem.products, problem.a_step, problem.b_step)
    return bind(source, kernel, (clusters * tile.CLUSTER_M,), (tile.threads,),
                (problem.a_map, problem.b_map, c_map, c, *map(np.int32, sizes), c_by_tma, partials, flags, timeline,
                 bias, offsets, scales, np.int32(scales.numel() > 0 and rowwise(scales))),
                shared_mem=smem)


@functools.cache
def resident_clusters(source: CudaSource, name: str, device: torch.device, cluster: int, smem: int,
                      threads: int) -> int:
    """How many clusters of this kernel fit on the GPU at once (the persistent grid's size).

    Not simply SMs / cluster: the CTAs of a cluster must sit in one GPC, and an H100's GPCs hold
    different numbers of SMs, so some SMs cannot take part in pairs. A persistent grid larger than
    what fits runs its last clusters only after the others have finished all their tiles: twice the time.
    """
    from cuda.bindings import driver

    kernel = source.function(name, device.index)  # compiled here rather than at the first launch
    cupy = kernel_cupy()
    pointer = function_pointer(kernel)
    cupy.cuda.driver.funcSetAttribute(pointer, cupy.cuda.driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem)
    config = driver.CUlaunchConfig()
    # a grid of more CTAs than can be resident (two per SM for 64-row tiles): the answer is what fits
    config.gridDimX, config.gridDimY, config.gridDimZ = 4 * sm_count(device), 1, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = threads, 1, 1
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


def swapped_problem(a, b, c, bn: int, l2_promotion: int = 256):
    """(TmaProblem, refresh) of Cᵀ = Bᵀ·Aᵀ for the SWAP_AB tiles of BN columns: maps of the same stored matrices
    with M and N exchanged, A's boxes BN rows high (it is the kernel's B, K-major). A box row is 128 bytes of k:
    64 16-bit elements, or 128 of fp8 (v19)."""
    row = 128 // a.element_size()
    return tma_problem(b.mT, a.mT, c.mT, l2_promotion, boxes=lambda a_t, b_t: ((row, 64), (row, bn)), b_k_major=True)


def prepare_cuda(a, b, c, tiles=CUDA_CANDIDATES, clusters: int | None = None, l2_promotion: int = 256,
                 timeline: torch.Tensor | None = None, source: CudaSource = KERNELS, epilogue: str = "NoEpilogue",
                 bias: torch.Tensor | None = None, boxes=v15_boxes, scales: torch.Tensor | None = None):
    """(refresh, {tile: launch}) for these candidates, sharing one problem's tensor maps (tma_problem, with
    this L2 promotion and `boxes`), `timeline`, the epilogue and fp8's scales (see launch_candidate); the SWAP_AB
    ones on the swapped problem of their BN (each launch copying what it pads itself), where they read the layout
    in place."""
    plain = [tile for tile in tiles if not tile.SWAP_AB]
    options = {"clusters": clusters, "timeline": timeline, "source": source, "epilogue": epilogue, "bias": bias,
               "scales": scales}
    problem, refresh = tma_problem(a, b, c, l2_promotion, boxes)
    runs = launch_candidates(problem, c, plain, **options)
    for bn in sorted({tile.BN for tile in tiles if tile.SWAP_AB and swappable(a)}):
        swapped, copy = swapped_problem(a, b, c, bn, l2_promotion)
        bound = launch_candidates(swapped, c, [t for t in tiles if t.SWAP_AB and t.BN == bn], **options)
        runs |= {tile: with_refresh(copy, run) for tile, run in bound.items()}
    return refresh, {tile: runs[tile] for tile in tiles if tile in runs}


CUDA_SEARCH = Search(__name__, "cuda", CUDA_CANDIDATES + CUDA_SPLIT_CANDIDATES + CUDA_UNPAIRED_CANDIDATES
                     + CUDA_SWAP_CANDIDATES, prepare_cuda, tile=lambda tile: (tile.BM, tile.BN), reads=Tile.reads)


def narrow(candidates, tile) -> tuple:
    """Those of `candidates` whose tile (`tile(candidate)`: rows, columns) is at most 128×128. The search leaves the
    wider ones out for products of fewer 128×128 tiles than SMs (few_tiles), where they leave over half the SMs
    idle and never won in the probes (docs/notes/v15.md): fewer compiles and timings on the first call."""
    return tuple(cand for cand in candidates if tile(cand)[0] * tile(cand)[1] <= 128 * 128)


def cuda_candidates(a, b, c) -> tuple:
    """The tiles the search times for C = a @ b: every candidate, but where 128×128 tiles are fewer than SMs
    (few_tiles) the narrow ones, split-K's and the unpaired tile; for a batch the unpaired tile too; and for
    at most SWAP_ROWS rows of a row-major A the swapped ones that hold them (swap_offered)."""
    products = c.shape[0] if c.dim() == 3 else 1
    swapped = swapped_candidates(CUDA_SWAP_CANDIDATES, a)
    if few_tiles(a.shape[-2], b.shape[-1], products, a.device):
        return narrow(CUDA_CANDIDATES, CUDA_SEARCH.tile) + CUDA_SPLIT_CANDIDATES + CUDA_UNPAIRED_CANDIDATES + swapped
    return CUDA_CANDIDATES + (CUDA_UNPAIRED_CANDIDATES if products > 1 else ()) + swapped


def warp_specialized_cuda(a, b, c):
    if a.shape[-1] == 0:
        return zero_product(c)
    return CUDA_SEARCH.tuned(a, b, c, cuda_candidates(a, b, c))


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
    tma_config(64, 128, 64, 4, 4, FLATTEN=True),  # 64-row tiles: products (or batches of them) of few rows
    tma_config(128, 64, 64, 4, 6, FLATTEN=True),  # 128 rows once: B read once where M is about 128 (skinny)
    tma_config(64, 64, 64, 4, 6, FLATTEN=True),
)
SPLIT_K_CONFIGS = (  # tiles cut along k: for products of fewer tiles than SMs (few_tiles)
    tma_config(64, 128, 64, 4, 6, SPLIT_K=4),  # decode: a deep ring of B per SM
    tma_config(64, 128, 64, 4, 4, SPLIT_K=2),  # skinny: a few dozen rows, N and K of thousands
    tma_config(64, 128, 64, 4, 6, SPLIT_K=2),  # and a deep ring where a slice per SM fills the GPU (128×4096×4096)
)
SWAP_CONFIGS = (  # split-K on Cᵀ = Bᵀ·Aᵀ, as CUDA_SWAP_CANDIDATES: 64 columns of C by BLOCK_N of its rows (decode)
    tma_config(64, 16, 64, 4, 6, SPLIT_K=2, SWAP_AB=True),
    tma_config(64, 16, 64, 4, 6, SPLIT_K=4, SWAP_AB=True),
    tma_config(64, 32, 64, 4, 6, SPLIT_K=2, SWAP_AB=True),
    tma_config(128, 16, 64, 4, 6, SPLIT_K=1, SWAP_AB=True),  # N of tens of thousands: enough programs unsplit
)
POINTER_CONFIGS = (  # v11's kernel (tiles copied by cp.async from pointers: no descriptors, no mbarriers), for
    # products of a few tiles, where the TMA kernel's fixed cost is most of the call, and batches of them
    tma_config(64, 64, 64, 4, 3, TMA=False),
    tma_config(64, 64, 128, 4, 3, TMA=False),
)
PITCH_CONFIGS = (  # B copied to a 128-byte row pitch first (in the timed call): where its own is not (ragged_pitch)
    tma_config(128, 256, 64, 8, 3, FLATTEN=True, PAD_B=True),
    tma_config(128, 256, 64, 8, 4, FLATTEN=True, PAD_B=True),
)
B_PITCH = 128  # bytes
MARKERS = ("TMA", "PAD_B", "SWAP_AB")  # knobs that pick a launcher, not kernel parameters


@triton.jit
def split_k_kernel(
    a_desc, b_desc, c_ptr, partials_ptr, counts_ptr, M, N, K, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    SPLIT_K: tl.constexpr, A_T: tl.constexpr = False, B_T: tl.constexpr = False, A_3D: tl.constexpr = False,
    B_3D: tl.constexpr = False, products=1, stride_cb=0, scales_ptr=None, SCALES: tl.constexpr = "",
    bias_ptr=None, BIAS: tl.constexpr = False, ACTIVATION: tl.constexpr = "", SWAPPED: tl.constexpr = False,
):
    # ---- 1. this program's tile (axis 0, over every product of a batch) and its slice of k (axis 1) ----
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    tiles = grid_m * grid_n
    tile = tl.program_id(0)
    product = tile // tiles
    pid_m, pid_n = grouped_tile(tile % tiles, grid_m, grid_n, GROUP_M)
    k_tiles = tl.cdiv(K, BLOCK_K)
    per_slice = tl.cdiv(k_tiles, SPLIT_K)
    k_first = tl.program_id(1) * per_slice
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kb in tl.range(k_first, tl.minimum(k_first + per_slice, k_tiles)):
        # ---- 2. TMA: a box of A and one of B, as in the persistent kernel ----
        a = operand_box(a_desc, product, pid_m * BLOCK_M, kb * BLOCK_K, BLOCK_M, BLOCK_K, A_T, A_3D)
        b = operand_box(b_desc, product, kb * BLOCK_K, pid_n * BLOCK_N, BLOCK_K, BLOCK_N, B_T, B_3D)
        # ---- 3. multiply ----
        acc = tl.dot(a, b, acc)
    # ---- 4. the fp32 partial sum to this slice's place in the workspace; the tile's counter counts the slices
    #         done (release: the partial is visible before the count); the last slice adds all of them, in slice
    #         order (the same sum whichever finishes last), scales it (v19's fp8), applies v17's epilogue (its
    #         bias along the rows where the block is of Cᵀ: SWAPPED), writes C and sets the counter back to 0
    #         for the next launch. One slice (a swapped config, unsplit) takes the same path: its round trip
    #         through the workspace is a tile of C's few rows in fp32, beside the whole of B read ----
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    inside = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    in_tile = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    slice_size = tl.num_programs(0).to(tl.int64) * BLOCK_M * BLOCK_N
    mine = partials_ptr + tl.program_id(1) * slice_size + tile.to(tl.int64) * BLOCK_M * BLOCK_N + in_tile
    tl.store(mine, acc, mask=inside)
    tl.debug_barrier()  # every thread's part of the partial is written before the count
    if tl.atomic_add(counts_ptr + tile, 1, sem="acq_rel", scope="gpu") == SPLIT_K - 1:
        first = partials_ptr + tile.to(tl.int64) * BLOCK_M * BLOCK_N + in_tile
        total = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for s in tl.static_range(SPLIT_K):
            total += tl.load(first + s * slice_size, mask=inside, other=0.0, cache_modifier=".cg")
        total = apply_scales(total, scales_ptr, offs_m, offs_n, M, N, SCALES, SWAPPED)
        total = apply_epilogue(total, bias_ptr, offs_m, offs_n, M, N, BIAS, ACTIVATION, SWAPPED)
        c_ptrs = c_ptr + product.to(tl.int64) * stride_cb + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
        tl.store(c_ptrs, total.to(c_ptr.dtype.element_ty), mask=inside)
        tl.store(counts_ptr + tile, 0)


def bind_split_k(a_t, b_t, c, M, N, K, layout, config: triton.Config, **extra):
    """`split_k_kernel` on TMA-ready operands (tma_views): a program per tile and slice of k, its own fp32
    workspace (a tile per program) and zeroed counters (a launch leaves them zeroed); `extra`: further
    arguments (v19: the scales)."""
    split_k, block_m, block_n, block_k = (config.kwargs[k] for k in ("SPLIT_K", "BLOCK_M", "BLOCK_N", "BLOCK_K"))
    products = c.shape[0] if c.dim() == 3 else 1
    a_desc, b_desc, knobs = operand_descriptors(a_t, b_t, c, block_m, block_n, block_k, config.kwargs | layout)
    grid = (products * triton.cdiv(M, block_m) * triton.cdiv(N, block_n), split_k)
    check_grid(grid)
    partials = torch.empty(grid[0] * split_k * block_m * block_n, device=c.device, dtype=torch.float32)
    counts = torch.zeros(grid[0], device=c.device, dtype=torch.int32)
    return prebound(split_k_kernel, grid, a_desc, b_desc, c, partials, counts, M, N, K, c.stride(-2),
                    c.stride(-1), **knobs, **extra, num_warps=config.num_warps, num_stages=config.num_stages)


def few_tiles(M: int, N: int, products: int, device: torch.device) -> bool:
    """Whether a product (or batch) has fewer 128×128 tiles than the GPU has SMs: then cutting k fills the GPU
    where tiles cannot, and the split-K candidates join the search (on the Triton side v11's kernel too)."""
    sms = sm_count(device) if device.type == "cuda" else 132
    return products * triton.cdiv(M, 128) * triton.cdiv(N, 128) < sms


def c_descriptor(c: torch.Tensor, config: triton.Config) -> dict:
    """The C arguments of v14's kernel: a TMA descriptor of half a tile when TMA can write C, else none
    (masked stores)."""
    if not tma_writable(c):
        return {"c_desc": None, "C_BY_TMA": False}
    block = [1] * (c.dim() - 2) + [config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"] // 2]
    return {"c_desc": TensorDescriptor.from_tensor(c, block), "C_BY_TMA": True}


def ragged_pitch(b: torch.Tensor) -> bool:
    """Whether B is stored row-major with its rows not a multiple of B_PITCH bytes apart. TMA's boxes of such a B
    cost Triton's kernel about twice the L2 requests (docs/notes/v15.md), so PITCH_CONFIGS join the search."""
    return layout_of(b) == "n" and (b.stride(-2) * b.element_size()) % B_PITCH != 0


def pitch_padded(s: torch.Tensor):
    """(the stored matrix `s` in a buffer with rows B_PITCH bytes apart, copy(): fills it from `s`)."""
    padded, copy = padded_rows(s, B_PITCH)
    return padded[..., :s.shape[-1]], copy


def config_reads(config: triton.Config, layout: str) -> bool:
    """Whether a config's kernel reads this layout in place: a swapped one needs A row-major (SWAP_LAYOUTS)."""
    return not config.kwargs.get("SWAP_AB") or layout in SWAP_LAYOUTS


def prepare_triton(a, b, c, configs, flags: dict | None = None):
    """(refresh, {config: launch}): the persistent kernel's configs (v14's), the split-K ones and those that copy
    B to a 128-byte pitch first (PAD_B), sharing one set of TMA-ready operands; and v11's kernel (TMA=False).
    `flags`: arguments every launch takes (v17's epilogue; v11's kernel takes none)."""
    flags = flags or {}
    M, K = a.shape[-2:]
    a_t, b_t, layout, refresh = tma_views(a, b)
    launches = {}
    b_padded, copy_b = pitch_padded(b_t) if any("PAD_B" in config.kwargs for config in configs) else (None, None)
    swapped = None  # Bᵀ and Aᵀ as TMA reads them, for the SWAP_AB configs
    for config in configs:
        if config.kwargs.get("SWAP_AB"):
            if not swappable(a):
                continue
            swapped = swapped or tma_views(b.mT, a.mT, b_k_major=True)
            plain = triton.Config({k: v for k, v in config.kwargs.items() if k not in MARKERS},
                                  num_warps=config.num_warps, num_stages=config.num_stages)
            launch = bind_split_k(swapped[0], swapped[1], c.mT, b.shape[-1], M, K, swapped[2], plain, **flags,
                                  SWAPPED=True)
            launches[config] = with_refresh(swapped[3], launch)
            continue
        if "SPLIT_K" in config.kwargs:
            launches[config] = bind_split_k(a_t, b_t, c, M, b.shape[-1], K, layout, config, **flags)
            continue
        knobs = {k: v for k, v in config.kwargs.items() if k not in MARKERS}
        if config.kwargs.get("TMA") is False:  # the operands as given: strides, batch strides, no padding
            if flags:
                raise ValueError(f"{describe_config(config)}: v11's kernel takes no {', '.join(flags)}")
            launches[config] = launch_pointer_config(a, b, c, triton.Config(knobs, num_warps=config.num_warps,
                                                                            num_stages=config.num_stages))
            continue
        launch = bind_tma_persistent(a_t, b_padded if "PAD_B" in config.kwargs else b_t, c, M, b.shape[-1], K,
                                     **knobs, **layout, **c_descriptor(c, config), **flags, num_warps=config.num_warps,
                                     num_stages=config.num_stages)
        launches[config] = with_refresh(copy_b, launch) if "PAD_B" in config.kwargs else launch
    return refresh, launches


TRITON_SEARCH = Search(__name__, "triton", TRITON_CONFIGS + SPLIT_K_CONFIGS + POINTER_CONFIGS + PITCH_CONFIGS
                       + SWAP_CONFIGS, prepare_triton, tile=block_of, describe=describe_config,
                       reference=("unflattened", TRITON_CONFIGS[2]), reads=config_reads)


def triton_candidates(a, b, c) -> tuple:
    """The configs the search times for C = a @ b: every persistent one, but where 128×128 tiles are fewer than
    SMs (few_tiles) the narrow ones and split-K's; v11's kernel there and for batches; the PAD_B ones where B's
    rows are not 128 bytes apart; for at most SWAP_ROWS rows of a row-major A the swapped ones that hold them
    (swap_offered)."""
    products = c.shape[0] if c.dim() == 3 else 1
    split = few_tiles(a.shape[-2], b.shape[-1], products, a.device)
    batch = 1 < products <= MAX_GRID[1]  # v11's kernel walks a batch along grid axis 1
    configs = narrow(TRITON_CONFIGS, block_of) + SPLIT_K_CONFIGS if split else TRITON_CONFIGS
    swapped = swapped_candidates(SWAP_CONFIGS, a, narrowest=16)  # tl.dot: N of 16 at least
    return (configs + (POINTER_CONFIGS if split or batch else ()) + (PITCH_CONFIGS if ragged_pitch(b) else ())
            + swapped)


def warp_specialized_triton(a, b, c):
    if a.shape[-1] == 0:
        return zero_product(c)
    return TRITON_SEARCH.tuned(a, b, c, triton_candidates(a, b, c))


VARIANT = Variant(
    __name__,
    title="warp-specialized, clusters",
    dtypes=("fp16", "bf16"),
    cuda=warp_specialized_cuda,
    triton=warp_specialized_triton,
    cuda_source=KERNELS,
    min_cc=(9, 0),
    searches=(CUDA_SEARCH, TRITON_SEARCH),
    layouts={"cuda": LAYOUTS, "triton": LAYOUTS},  # TMA boxes of the stored matrices; wgmma reads either order
    batched=("cuda", "triton"),  # 3-D tensor maps; the persistent tile loop walks every product's tiles
)
