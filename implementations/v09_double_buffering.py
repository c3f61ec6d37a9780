"""v09 double buffering: copy tile k+1 with cp.async while multiplying tile k.

The idea. Up to v08 each step along K is load, wait, store to shared memory, barrier, multiply: the
global-load latency (several hundred cycles) is paid every step, hidden only by other blocks on the
SM. cp.async (sm_80+) copies global memory straight into shared memory in the background, without
registers and without stalling the thread. With two buffers, the block starts the copies of tile
k+1, multiplies tile k out of the other buffer, and only then waits: latency overlaps arithmetic.
One barrier per step is enough: the barrier before multiplying tile k also tells every thread that
all others finished tile k-1, whose buffer the copies of tile k+1 overwrite. The A tile is still
transposed (cp.async cannot transpose a 16-byte chunk, so A goes 4 bytes per element, arranged so
that a warp's copies land in 32 different banks); zero padding at the edges is cp.async's zero fill.

CUDA C and Triton side by side:

| concept              | CUDA C (kernels_cuda/v09_double_buffering.cu) | Triton (below)                             |
|----------------------|-----------------------------------------------|--------------------------------------------|
| asynchronous copies  | `cp.async` PTX by hand (common.cuh), commit   | the pipeliner turns the loads that feed    |
|                      | and wait groups, zero fill at edges           | `tl.dot` into cp.async itself              |
| buffers              | `a_tile[2][BK][BM + 4]`, `b_tile[2][BK][BN]`  | `num_stages=3`: two shared buffers         |
| prologue / steady    | written out: copy tile 0; loop: wait, sync,   | generated from the same loop source        |
| state                | start tile k+1, multiply tile k               |                                            |
| the kernel           | new: kernels_cuda/v09_double_buffering.cu      | none: v03's `smem_tiling_kernel`, unchanged|

What Triton did for you: the whole pipeline, from one number. `num_stages=1` (v05-v08) loads
synchronously; with `num_stages=3` Triton keeps two tiles in flight: its shared memory doubles and
its PTX gains `cp.async` with commit/wait groups (tests/rungs/test_v09.py checks both). The timing with
the knob off is v08's Triton figure.

What it should reach: CUDA above v08 where the SM ran out of other work to hide latency with; some
four fifths of cuBLAS fp32. Triton: well above its v08 figure. The CUDA side stays below Triton: its
8×8 lane tiles read 16 floats from shared memory per 64 FMAs, and v10 changes that.

Its story (measurements, what was tried): docs/notes/v09.md.
"""

import numpy as np
import triton

from .core.cuda_c import CudaSource, bind, rows_aligned
from .core.registry import Variant
from .core.triton_util import check_blocks, warps_for
from .v03_smem_tiling import launch_smem_tiling

BK = 8
BLOCK_K = 32
KERNELS = CudaSource(__name__, [f"double_buffering<128,128,{BK},8,8>"])


# ---- CUDA C launcher ----------------------------------------------------------------------------------


def double_buffering_cuda(a, b, c, BM=128, BN=128, TM=8, TN=8):
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(N, BN), triton.cdiv(M, BM))
    args = (a, b, c, np.int32(M), np.int32(N), np.int32(K), rows_aligned(a, b, c))
    return bind(KERNELS, f"double_buffering<{BM},{BN},{BK},{TM},{TN}>", grid, (BM * BN // (TM * TN),), args)


# ---- Triton launcher (the kernel is v03's) ------------------------------------------------------------


def double_buffering_triton(a, b, c, BM=128, BN=128, TM=8, TN=8):
    check_blocks(BM=BM, BN=BN)
    return launch_smem_tiling(a, b, c, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BLOCK_K,
                              num_warps=warps_for(BM * BN // (TM * TN)), num_stages=3)


VARIANT = Variant(
    __name__,
    title="double buffering (cp.async)",
    dtypes=("fp32",),
    cuda=double_buffering_cuda,
    triton=double_buffering_triton,
    cuda_source=KERNELS,
    min_cc=(8, 0),  # cp.async
    configs=({"BM": 128, "BN": 128, "TM": 8, "TN": 8},),
)
