"""v06 2D register blocking: each thread computes a TM×TN = 8×8 block of C in registers.

The idea. v05 reused each B value TM times; a TM×TN block reuses each A value TN times as well. Per
k a thread loads TM values of A and TN values of B into registers and does their outer product:
TM·TN FMAs for TM + TN shared-memory loads (64 for 16 here, against 8 for 9 in v05). The block tile
grows to 128×128 (256 threads, 64 accumulators each), which also halves the global traffic per FMA
again: each loaded element of A is used by 128 columns of C.

CUDA C and Triton side by side:

| concept               | CUDA C (kernels_cuda/v06_blocktiling_2d.cu)  | Triton (below)                             |
|-----------------------|----------------------------------------------|--------------------------------------------|
| outputs per thread    | TM×TN = 8×8, by hand: `float acc[TM][TN]`,   | 128·128 / (32·8) = 64 per thread, in the   |
|                       | `a_reg[TM]`, `b_reg[TN]`, the outer product  | 2-D block Triton's layout gives each thread|
| block tile            | <BM, BN, BK, TM, TN> = <128, 128, 8, 8, 8>   | BLOCK_M = BLOCK_N = 128, BLOCK_K = 32      |
| threads               | BM·BN/(TM·TN) = 256                          | num_warps = 8                              |
| the kernel            | new: kernels_cuda/v06_blocktiling_2d.cu       | none: v03's `smem_tiling_kernel`, unchanged|

What Triton did for you: as in v05, all of it; the 2-D per-thread blocking is how `tl.dot` lays out
its accumulator across threads, and the rung is v03's kernel with a bigger block and 8 warps.

What's still slow on the CUDA side: A's tile is stored row-major, so a thread's TM values of one k
are BK floats apart and come in one 4-byte load at a time (v07 transposes it and uses float4).

What it should reach: on the CUDA side about two thirds of cuBLAS fp32 (where siboehm's worklog
lands on an A6000), held back by shared-memory bank conflicts that v07 and v08 take on.

Its story (measurements, what was tried): docs/notes/v06.md.
"""

import numpy as np
import triton

from .core.cuda_c import CudaSource, bind
from .core.registry import Variant
from .core.triton_util import check_blocks, warps_for
from .v03_smem_tiling import launch_smem_tiling

BK = 8
BLOCK_K = 32
KERNELS = CudaSource(__name__, [f"blocktiling_2d<128,128,{BK},8,8>"])


# ---- CUDA C launcher ----------------------------------------------------------------------------------


def blocktiling_2d_cuda(a, b, c, BM=128, BN=128, TM=8, TN=8):
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(N, BN), triton.cdiv(M, BM))
    args = (a, b, c, np.int32(M), np.int32(N), np.int32(K))
    return bind(KERNELS, f"blocktiling_2d<{BM},{BN},{BK},{TM},{TN}>", grid, (BM * BN // (TM * TN),), args)


# ---- Triton launcher (the kernel is v03's) ------------------------------------------------------------


def blocktiling_2d_triton(a, b, c, BM=128, BN=128, TM=8, TN=8):
    check_blocks(BM=BM, BN=BN)
    return launch_smem_tiling(a, b, c, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BLOCK_K,
                              num_warps=warps_for(BM * BN // (TM * TN)), num_stages=1)


VARIANT = Variant(
    __name__,
    title="2D register blocking",
    dtypes=("fp32",),
    cuda=blocktiling_2d_cuda,
    triton=blocktiling_2d_triton,
    cuda_source=KERNELS,
    configs=({"BM": 128, "BN": 128, "TM": 8, "TN": 8},),
)
