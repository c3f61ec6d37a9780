"""v08 bank-conflict-free shared memory: v07 with its two bank conflicts padded and interleaved away.

The idea. Shared memory has 32 banks, 4 bytes wide; lanes of a warp that touch different addresses
in one bank in the same instruction are served one after another (for 16-byte accesses, 8 lanes are
served at a time, so it is 8 lanes that must not collide). v07 has two such conflicts:
- stores of A's transposed tile: lanes 2r and 2r+1 write `a_tile[k][r]` and `a_tile[k + 4][r]`, 128
  floats apart, the same bank: 2-way. Padding each row of `a_tile` to BM + 4 floats shifts row k + 4
  by 16 banks, and the 32 lanes hit 32 banks;
- reads of B: lane t reads `b_tile[k][8t .. 8t+7]`, so the 8 lanes served together span 64 floats
  and lanes t, t+4 share banks: 2-way. Here a thread's 8 columns are two float4 chunks BN/2 apart
  (lane t reads `[4t ..]` and `[64 + 4t ..]`), so the 8 lanes read 32 consecutive floats.
The evidence is Nsight Compute's bank-conflict counters for v07 and v08, in both languages.

CUDA C and Triton side by side:

| concept              | CUDA C (kernels_cuda/v08_bank_conflicts.cu)  | Triton (below)                              |
|----------------------|----------------------------------------------|---------------------------------------------|
| conflict-free stores | pad `a_tile` rows to BM + 4 floats           | Triton chooses each shared layout with a    |
|                      |                                              | swizzle where its analysis asks for one;    |
|                      |                                              | for this fp32 FMA dot it asks for none      |
| conflict-free reads  | interleave each thread's float4 chunks       | the layout of the dot's operands (the       |
|                      |                                              | accumulator's: a warp spans 128 columns)    |
| evidence             | ncu: shared bank conflicts, v07 vs v08       | ncu on the Triton kernel; the shared layout |
|                      |                                              | in its TTGIR                                |
| the kernel           | new: kernels_cuda/v08_bank_conflicts.cu       | none: v03's `smem_tiling_kernel`, unchanged |

What Triton did for you: less than one might expect. Triton swizzles shared memory where its
layout analysis asks for it (tensor-core operands above all), but for this fp32 FMA `tl.dot` the
TTGIR shows `#ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>`: no
swizzle (`scripts/triton_knobs.py` prints it for v10's launch). Its loads are conflict-free anyway,
thanks to the operand layout it picked; its shared-memory stores at num_stages=1 are not, and there
is no knob to change that. Once loads are pipelined (v09) the stores become cp.async and ncu counts
no conflicts. So the Triton side is v06's launch again.

What it should reach: a few percent above v07 on the CUDA side (store conflicts cost less than their
count suggests: stores are few next to the FMAs); the load conflicts gone, the store conflicts mostly.

Its story (measurements, what was tried): docs/notes/v08.md.
"""

import numpy as np
import triton

from .core.cuda_c import CudaSource, bind, rows_aligned
from .core.registry import Variant
from .core.triton_util import check_blocks, warps_for
from .v03_smem_tiling import launch_smem_tiling

BK = 8
BLOCK_K = 32
KERNELS = CudaSource(__name__, [f"bank_conflicts<128,128,{BK},8,8>"])


# ---- CUDA C launcher ----------------------------------------------------------------------------------


def bank_conflicts_cuda(a, b, c, BM=128, BN=128, TM=8, TN=8):
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(N, BN), triton.cdiv(M, BM))
    args = (a, b, c, np.int32(M), np.int32(N), np.int32(K), rows_aligned(a, b, c))
    return bind(KERNELS, f"bank_conflicts<{BM},{BN},{BK},{TM},{TN}>", grid, (BM * BN // (TM * TN),), args)


# ---- Triton launcher (the kernel is v03's) ------------------------------------------------------------


def bank_conflicts_triton(a, b, c, BM=128, BN=128, TM=8, TN=8):
    check_blocks(BM=BM, BN=BN)
    return launch_smem_tiling(a, b, c, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BLOCK_K,
                              num_warps=warps_for(BM * BN // (TM * TN)), num_stages=1)


VARIANT = Variant(
    __name__,
    title="bank-conflict-free shared memory",
    dtypes=("fp32",),
    cuda=bank_conflicts_cuda,
    triton=bank_conflicts_triton,
    cuda_source=KERNELS,
    configs=({"BM": 128, "BN": 128, "TM": 8, "TN": 8},),
)
