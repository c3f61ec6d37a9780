"""v15 warp specialization: a producer warpgroup, two consumer warpgroups, clusters and TMA multicast.

The idea. v14's parts, reorganised the way the fastest Hopper GEMMs are:
- Roles: warpgroup 0 only issues TMA copies (one thread), warpgroups 1 and 2 only multiply. The
  producer runs ahead across tile boundaries, so the consumers' epilogue overlaps the next copies.
- Registers: each consumer thread holds 128 fp32 accumulators: a 64×256 block per warpgroup, a 128×256
  tile per CTA, and B is read from shared memory once per 64×256 instead of per 64×128. `setmaxnreg`
  moves registers from the producer (40 per thread) to the consumers (232), as CUTLASS's kernels do;
  this kernel's consumers fit in the 168 a thread has at launch anyway (see below).
- Clusters: CLUSTER_M = 2 CTAs computing vertically adjacent tiles share one B tile; each loads half
  and TMA *multicasts* it into both CTAs' shared memory. Slots are released to both producers, so
  every consumer warpgroup arrives on the `empty` barrier of each CTA in the cluster (remote mbarrier
  arrive through `mapa`).
- L2-aware order: clusters walk GROUP_M cluster rows at a time, column by column, and every other
  round of tiles walks k downwards, starting on what the round before read last.
- Epilogue through TMA: each consumer warpgroup rounds its 64×256 block into a swizzled 16 KB staging
  buffer (stmatrix, 16 bytes per lane per instruction), 128 columns at a time, and one thread hands it
  to a TMA bulk tensor store (clipped at the matrix edges); the warpgroup starts its next tile while
  the copy engine writes. When C's rows are not 16-byte aligned (N % 8 != 0) TMA cannot write C, and
  the accumulators go straight from registers to memory as in v14.
- Stream-K (STREAM_K = 1, one candidate): a persistent grid of G clusters runs T cluster tiles in
  rounds of G, and a partial last round leaves clusters idle. The candidate deals that round's
  k-blocks out evenly instead; a tile cut between clusters is finished by the cluster holding its
  first k-block, which waits for the others' fp32 partial sums (global memory, a release/acquire flag
  per consumer warpgroup) and adds them.
The CUDA side searches a few template instantiations (tile width, stages, cluster size, group size,
stream-K) at the first call per device and shape, as v11 does, and reports its choice. The 128×128 and
128×64 candidates are for products too small for 128×256 tiles to reach every SM (1024³ makes 32 of
them on 132 SMs).

CUDA C and Triton side by side:

| concept | CUDA C (kernels_cuda/v15_warp_specialized.cu) | Triton (v14's kernel, its knobs on) |
|---|---|---|
| producer / consumers | `if (warpgroup == 0)` ... `else` ..., by hand | not used: `tl.range(warp_specialize=True)` |
|  |  | crashed Triton 3.6's compiler on the H100 (*) |
| loads run ahead across tiles | the producer's loop over tiles and k-blocks | `tl.range(flatten=True)`: one |
|  |  | pipeline over every (tile, k-block) (FLATTEN) |
| register split | `setmaxnreg.dec 40` / `setmaxnreg.inc 232` | none |
| 128×256 tiles | two m64n256k16 warpgroups | BLOCK 128×256 in the config search |
| clusters + multicast | `__cluster_dims__`, `.multicast::cluster`, `mapa` | none in this kernel |
| tile order | grouped over cluster tiles, k downwards | GROUP_M in the persistent loop (v14's) |
|  | in every other round |  |
| epilogue | stmatrix into staging, `cp.async.bulk.tensor` store | `c_desc.store` of two halves (C_BY_TMA) |
| search | CUDA_CANDIDATES, `search_fastest` (v11) | `triton.autotune` over TRITON_CONFIGS |

What Triton does for you: the pipeline, descriptors, layouts and wgmma, as in v14, and with
`flatten=True` the software pipeliner treats the tile loop and the k-loop as one, so the next tile's
first loads are in flight during this tile's epilogue: what the CUDA producer warpgroup does by hand.
The epilogue goes through TMA descriptor stores. So the Triton side is v14's `tma_persistent_kernel`
with its FLATTEN and C_BY_TMA knobs on and its best Hopper configurations searched (larger tiles,
deeper pipelines, grouped order). What this Triton version leaves out is warp specialization, the
register split and clusters; and the kernel does not alternate its k direction (its loop is the
compiler's to pipeline).

(*) `scripts/tensor_core_check.py` probes it: an assertion in Triton's WSLowerToken pass on a plain
tl.load + tl.dot loop (docs/results/h100_tensor_core_check.txt).

What it should reach: at or above cuBLAS for large bf16/fp16 products on an H100; public H100 worklogs
with these techniques report 101-107%. Measured on an H100 80GB HBM3, in the same run as cuBLAS,
`compare.py --rounds 3` (per-call event timing with an L2 flush, three rounds in alternating order,
samples pooled; docs/results/h100_tc_bf16.md, h100_tc_fp16.md): CUDA C 97.9% (bf16) and 99.3% (fp16) at
4096³, 100.5% and 102.9% at 8192³; Triton 98.0% and 98.1% at 4096³, 100.6% and 99.5% at 8192³. At 8192³
the board's power limit spreads every kernel's calls by a few percent (20th to 80th percentile, ±4-6% in
that run), and runs disagree by a few points: since the descriptor change the saved compare.py runs gave
CUDA C 97.9-100.3% at 4096³ and 100.5-103.9% at 8192³ (docs/results/h100_tc_rerun_bf16.md: 99.0% and
102.1%), and one whose files were lost 99.4% and 97.7% (fp16). Nsight Compute, one
launch at 4096³ bf16 (docs/results/h100_ncu_tc.md): 178.1 µs for the CUDA C kernel and 178.2 µs for
Triton's, against cuBLAS's 177.4 µs. Back to back at the power limit (scripts/steady_clocks.py,
docs/results/h100_steady_clocks_bf16.txt), where the SM clock settles at 1.34-1.40 GHz for every kernel:
CUDA C 98.6% of cuBLAS at 4096³ (99.1% in cycles) and 101.9% at 8192³ (102.2% in cycles, 978 against 959
GFLOP/J); Triton 96.4% and 99.7% (before its loop was flattened).
Findings on the way there:
- `mbarrier.arrive.release.cluster` (the remote arrival that frees a slot in the peer CTA) compiles to
  MEMBAR.ALL.GPU before every arrival. With it the CLUSTER_M = 2 candidates ran at half the speed of
  CLUSTER_M = 1 (0.425 against 0.219 ms at 4096³ bf16, found by reading the SASS); the CTA-scope arrival
  CUTLASS uses needs no fence, and the pairs now beat single CTAs (0.191 against 0.198 ms) because each
  CTA reads only half of B from L2.
- The TMA-store epilogue took the 4096³ bf16 figure from 88.5% to 96-98%. Writing the staging buffer
  with stmatrix instead of 4-byte stores is worth about 1% at 8192³ and nothing measurable at 4096³.
- What the whole epilogue costs: the kernel with its stores compiled in but never executed runs 3-3.5%
  faster at 4096³ and 1.2-1.4% at 8192³ (two runs of interleaved rounds,
  docs/results/h100_v15_epilogue_probe.txt).
  Staging the second half of C in the ring slot just consumed, so that it need not wait for the first
  half's store to read the staging buffer, made no measurable difference and was left out.
- Clusters of four (a quarter of B per CTA, 24 KB per CTA and k-block from L2 instead of 32) were
  slower: 85% against 97% at 4096³ (scripts/v15_tile_probe.py, docs/results/h100_v15_stream_k_probe.md).
  Only 30 fit at once (a cluster's CTAs share a GPC): 120 SMs, and 512 tiles take 5 rounds instead of
  4. With stream-K over the last round the 120 SMs match the 132 SMs of pairs at 8192³ (99.6% against
  99.8%): at the power limit each SM runs its tiles 6% faster there, fewer SMs moving less data.
- Stream-K (docs/results/h100_v15_stream_k_probe.md). It pays where the last round is nearly empty:
  2304×2048×16384 (72 cluster tiles on 66 clusters, 6 in the last round) runs at 87.8% of cuBLAS
  against 61.8% for whole tiles. Where the round is nearly full it costs: 94% against 98-99% at 4096³
  (58 of 66), 85% against 99% at 4096×4096×16384, and within ±2 points at 6144³ and 8192³. Two
  reasons, both measured. Each cut tile costs its writer 128 KB of stores (about 30 bytes per cycle per
  SM) and its reader 128 KB of loads, a few microseconds against the 5.5 µs a perfect balance could
  save at 4096³. And runs that cross tile boundaries put the clusters sharing an A or B panel tens of
  k-blocks apart, where whole tiles read each k-slice in step: Nsight Compute counted 197 MB of DRAM
  reads against 149 MB (280 MB when two rounds were dealt out). Keeping the heads of the round's tiles
  in step and sharing only their tails among the idle clusters brought the reads back to 152 MB but
  gave each idle cluster 7-8 partials to write: 89%. So the search keeps whole tiles at 4096³ and
  8192³, and stream-K is there for shapes like the first.
- Staggering the consumers (warpgroup 2 starting one or two k-blocks after warpgroup 1, so that each
  one's epilogue would overlap the other's multiplies) was slower too: 93.7% and 93.0% against 94.3%
  at 4096³, and 1.60 against 1.40 ms at 8192³ (docs/results/h100_hopper_probe_stagger.txt): both
  warpgroups release a slot together, so the lag takes stages out of the ring.
- The k direction (docs/results/h100_v15_serpentine_probe.txt). A persistent grid runs the tiles in
  rounds of 66 clusters, and with GROUP_M = 8 a round usually shares its A panels with the next. Walking k
  upwards in every round, a round begins on the k-slices the last one read first, the likeliest to
  have left L2; every other round walking downwards cuts DRAM reads at 4096³ bf16 from 148.7 to
  130.9 MB (Nsight Compute, one launch), without measurably changing the time: in two runs of 5
  interleaved rounds, +0.8 and +0.1 points of cuBLAS at 4096³ bf16, 0.0 and -0.6 for fp16, between
  -0.9 and +3.0 at 6144³ and 8192³. Kept for the bytes. Also walking every other group's
  columns right to left, so that the round crossing two groups shares B with the one before, cut the
  reads to 123.8 MB; in its one run it was 3.9 points below to 2.4 above whole tiles by size and dtype,
  and below the k direction alone in 5 of 6: not kept.
- Storing half of C under the next tile's first multiplies (OVERLAP, commit cee17ff, reverted;
  docs/results/h100_v15_overlap_probe.txt). Each k-block became two m64n128k16 groups (columns 0-127
  and 128-255), software-pipelined so that a tile's columns 128-255 went out while the tensor cores
  multiplied the next tile's columns 0-127. ptxas allows that only in this form: with m64n256k16 and
  m64n128k16 on the same accumulators it serialised every wgmma (C7511), and where a loop head was
  reached with differing groups in flight it waited for them there (C7517). The halves read A from
  shared memory twice (L1/TEX throughput 60% -> 72%) and took their descriptors off the uniform
  datapath (2.4x the warp instructions): in cycles it came out where whole tiles are (285.5 K against
  284.6 K at 4096³ bf16), at a lower clock (1.565 against 1.584 GHz, the power limit), and in 5
  interleaved rounds 1-2.6 points below whole tiles at 2048³-8192³, bf16 and fp16, except 4096³ bf16
  (+0.4).
- C kept in registers and stored under the next tile's first multiplies (DEFER, commit c99ac46,
  reverted; docs/results/h100_v15_defer_probe.txt). Each consumer rounded its accumulators into 64
  registers of packed pairs (ptxas gave the consumer region 217 registers after setmaxnreg.inc, no
  spills) and issued the next tile's first k-block before storing them, all of C at once or a round per
  k-block. Under Nsight Compute it took 1.1-1.6% more cycles than storing at once (289.2 K and 290.6 K
  against 286.0 K at 4096³ bf16; 18% more warp instructions from the pending-store test in the k-loop),
  and in 5 interleaved rounds it was within noise (-0.9 to +1.0 points of cuBLAS). With OVERLAP above,
  the second way of taking the store off the tensor cores' path that did not buy time.
- The schedule's tail (docs/results/h100_v15_timeline.txt; scripts/v15_timeline.py reads a timeline
  the kernel writes when given one). At 4096³ a tile after the first takes 67.4-67.8 K cycles, 97.2% of
  the tensor cores' peak for 128×256×4096, the first 69-71 K while the ring fills from DRAM; the busiest
  CTAs end 2-2.4 µs apart. A CTA's speed is chance, not its SM's (its mean tile time does not carry from
  one launch to the next: correlation -0.05 to +0.13), so a dynamic tile schedule, simulated from the
  measured tile times, would end only 0.2-0.3% sooner at 4096³ (0.1-0.2% at 6144³ and 8192³): not built.
- Descriptor arithmetic. Rebuilding both wgmma descriptors from addresses for every k-step cost the
  k-loop 92 SASS instructions per k-block and warp: the warpgroup index (threadIdx.x / 128) was not
  known to be warp-uniform, so the A descriptor went through vector registers and back. Computing them
  once and adding to the address field, with the index through __shfl_sync, leaves 56, mostly on the
  uniform datapath. Against the old kernel in 6 interleaved rounds at 4096³ and 8192³, bf16 and fp16
  (docs/results/h100_v15_variants_probe.txt): +0.5 points of cuBLAS in every per-call median and
  +0.2-0.5 back to back: small, the same sign in all eight.
- setmaxnreg. Without the pair ptxas compiles the same kernel in 166 registers (the SASS differs only
  in register numbers), so the consumers never needed the 232. Where a variant did need more (the last
  k-block split in two m64n128k16 halves, so that the first half's store could overlap the second
  half's multiplies) ptxas serialised every wgmma (warning C7511, "insufficient register resources for
  the wgmma pipeline") with the pair in place, and did not with a 256-thread launch bound: it let wgmma
  have only what a thread has at launch. A producer of one warp instead of a warpgroup (288 threads)
  did not help: ptxas again compiled it in 168 registers, with the same warning (nine warps put three
  on one of the four schedulers, whose register file then gives each 168, a likely reason).
- Waiting with a suspend-time hint (`mbarrier.try_wait` with 10 ms, or 1 µs, which ptxas turns into
  NANOSLEEP.SYNCS instead of a polling loop) and prefetching the tensor maps (`prefetch.tensormap`)
  changed neither the time nor the clock or power back to back (docs/results/h100_v15_variants_probe.txt).
- Flattening the Triton loop: 97.4% against 94.6% at 8192³, no difference at 4096³
  (docs/results/h100_hopper_probe_flat.txt).
- Narrower tiles for small products: 128×128 (BN = 128, six stages) and 128×64 (BN = 64, eight
  stages, no cluster). At 512³: 81.2% and 101.4% of cuBLAS against 59.9-70.7% for the 128×256
  candidates; at 1024³: 65.6% and 72.5% against 49.1-53.8%; at 2048³ the 128×256 tiles win (92.7-97.8%
  against 84.9% and 59.3%) (docs/results/h100_hopper_probe_bn64.txt, h100_hopper_probe_bn128.txt).
What limits it. Under Nsight Compute at 4096³ bf16 (docs/results/h100_ncu_v15_stalls.md, one launch,
clocks not locked) the kernel takes 287.0 K cycles against cuBLAS's 285.2 K (99.4%), with the tensor
pipe busy 89.3% of the time against 90.0%. SMs are idle 5.6% of the time: the fourth and last wave of
clusters is 58 of 66 (512 tiles of 128×256 on 132 SMs) and the ring fills from DRAM at the start. Of the
warp-stall samples, 30% are consumers waiting for their own wgmmas (the tensor pipe busy), 26% the idle
producer warps at the final cluster barrier, and 3.4% consumers waiting for a slot to fill. cuBLAS
(nvjet 256×128, BK 64, 4 stages, cluster 1×2) has the same wave count. Both kernels run into the board's
700 W limit, so what separates them in time is energy per tile as much as cycles, and cuBLAS spends
less on the way (docs/results/h100_ncu_v15_l2.md): it reads 26.1-28.1 M sectors from L2 into the SMs
against v15's 30.8-32.6 M (close to what v15's tiles imply: 512 tiles × 64 k-blocks × (16 KB of A + half
of B's 32 KB) = 33.5 M), with the same DRAM reads then (148.7 against 150.4 MB; 130.9 MB, 13% below
cuBLAS's, since the k direction alternates), and issued 16.9 M warp instructions against 25.5 M before
the descriptor change and 16.7 M after it. Neither the L2 promotion of the tensor maps (256, 128 or 0
bytes: the sectors move by 3-4%, docs/results/h100_v15_l2_promotion_probe.txt) nor the DRAM bytes
(alternating k direction, above) explain it; in one profile at equal clocks v15 took 0.6% more cycles
(docs/results/h100_ncu_v15_memory.txt).
"""

import functools
from typing import NamedTuple

import numpy as np
import torch
import triton
from triton.tools.tensor_descriptor import TensorDescriptor

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
    block = [config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"] // 2]
    return {"c_desc": TensorDescriptor.from_tensor(c, block), "C_BY_TMA": True}


def prepare_triton(a, b, c, configs):
    return bind_configs(a, b, c, configs, extra=lambda config: c_descriptor(c, config))


TRITON_SEARCH = Search(__name__, "triton", TRITON_CONFIGS, prepare_triton, tile=block_of, describe=describe_config,
                       reference=("unflattened", TRITON_CONFIGS[2]))


def warp_specialized_triton(a, b, c):
    if a.shape[1] == 0:
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
)
