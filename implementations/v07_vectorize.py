"""v07 vectorized loads: 16 bytes per load instruction, and A's tile transposed in shared memory.

The idea. v06 moves every float with its own instruction. Global memory serves 32-byte sectors, and
a float4 load (LDG.128) fetches four floats with one instruction: a quarter of the load
instructions and of their address arithmetic. Two changes make float4 possible everywhere:
- global loads of A and B and stores of C are float4, where K and N are multiples of 4 and the bases
  16-byte aligned (the launcher's `aligned` flag; otherwise, and at ragged edges, the same code takes
  checked scalar accesses);
- A's tile is stored transposed, `a_tile[k][m]`, so that a thread's TM values of one k are contiguous
  and come from shared memory as float4 too (LDS.128) instead of TM loads BK floats apart.
The transpose has a price that v08 removes: the 4 floats of one A float4 go to 4 different rows of
`a_tile`, and two lanes of a warp write the same bank (a 2-way bank conflict).

CUDA C and Triton side by side:

| concept              | CUDA C (kernels_cuda/v07_vectorize.cu)       | Triton (below)                              |
|----------------------|----------------------------------------------|---------------------------------------------|
| vector global loads  | `float4` casts, only when the launcher has   | chosen by the compiler when it can prove    |
|                      | checked alignment (`aligned`), scalar else   | 16-byte alignment: from arguments it        |
|                      |                                              | specializes (divisible by 16, stride == 1)  |
| transposed A tile    | `a_tile[k][m] = A[m][k]`, by hand            | Triton picks each operand's shared layout   |
| vector smem reads    | `lds4()`: LDS.128 of a_tile and b_tile       | chosen with the layout                      |
| the kernel           | new: kernels_cuda/v07_vectorize.cu            | none: v03's `smem_tiling_kernel`, unchanged |

What Triton did for you: the vector loads, without a change to the source. Triton specializes each
integer argument on whether it is divisible by 16 (and equals 1), and pointers on 16-byte alignment,
compiling one kernel per combination; with K and N multiples of 16 it can prove that 4 consecutive
floats are aligned and contiguous and emits 16-byte loads (`ld.global.v4`, or 16-byte `cp.async`
once loads are pipelined). The knob is that specialization: the same kernel jitted with
`do_not_specialize` on the strides and sizes loads 4 bytes at a time. `scripts/triton_knobs.py`
times both and counts the vector loads in their PTX: without them Triton is nearly three times slower.

What it should reach: CUDA a little above v06. The Triton side is v06's launch again (same figures),
shown here to compare with the CUDA step.

Its story (measurements, what was tried): docs/notes/v07.md.
"""

import numpy as np
import triton

from .core.cuda_c import CudaSource, bind, rows_aligned
from .core.registry import Variant
from .core.triton_util import check_blocks, warps_for
from .v03_smem_tiling import launch_smem_tiling

BK = 8
BLOCK_K = 32
KERNELS = CudaSource(__name__, [f"vectorize<128,128,{BK},8,8>"])


# ---- CUDA C launcher ----------------------------------------------------------------------------------


def vectorize_cuda(a, b, c, BM=128, BN=128, TM=8, TN=8):
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(N, BN), triton.cdiv(M, BM))
    args = (a, b, c, np.int32(M), np.int32(N), np.int32(K), rows_aligned(a, b, c))
    return bind(KERNELS, f"vectorize<{BM},{BN},{BK},{TM},{TN}>", grid, (BM * BN // (TM * TN),), args)


# ---- Triton launcher (the kernel is v03's) ------------------------------------------------------------


def vectorize_triton(a, b, c, BM=128, BN=128, TM=8, TN=8):
    check_blocks(BM=BM, BN=BN)
    return launch_smem_tiling(a, b, c, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BLOCK_K,
                              num_warps=warps_for(BM * BN // (TM * TN)), num_stages=1)


VARIANT = Variant(
    __name__,
    title="vectorized float4 loads",
    dtypes=("fp32",),
    cuda=vectorize_cuda,
    triton=vectorize_triton,
    cuda_source=KERNELS,
    configs=({"BM": 128, "BN": 128, "TM": 8, "TN": 8},),
)
