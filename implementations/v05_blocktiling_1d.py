"""v05 1D register blocking: each thread computes a column of TM outputs instead of one.

The idea. In v03 every FMA needs two shared-memory loads: shared memory, not arithmetic, sets the
pace. If a thread computes TM outputs of one column, the B value of each k is the same for all of
them: load it once into a register and use it TM times. The block grows to BM×BN = 64×64 with
BM·BN/TM = 512 threads, and steps along K BK = 8 at a time. Per k a thread now issues TM + 1 shared
loads for TM FMAs (the TM A values are the same for the whole warp, so they broadcast), against
2 per FMA in v03.

CUDA C and Triton side by side:

| concept               | CUDA C (kernels_cuda/v05_blocktiling_1d.cu) | Triton (below)                             |
|-----------------------|---------------------------------------------|--------------------------------------------|
| outputs per thread    | TM = 8, a column, by hand: `float acc[TM]`  | BLOCK_M·BLOCK_N / (32·num_warps): Triton's |
|                       |                                             | layout gives each thread a block of acc    |
| block tile            | template <BM, BN, BK, TM> = <64, 64, 8, 8>  | BLOCK_M = BLOCK_N = 64, BLOCK_K = 32       |
| threads               | BM·BN/TM = 512                              | num_warps = 16 (the same 512 threads)      |
| the kernel            | new: kernels_cuda/v05_blocktiling_1d.cu      | none: v03's `smem_tiling_kernel`, unchanged|

What Triton did for you: the register blocking. There is no Triton code in this rung: `tl.dot`
already had each thread compute several outputs from registers in v03 (56 registers, against the
CUDA v03's 32). What the CUDA programmer chooses here by hand (outputs per thread, their shape, the
thread count) is, in Triton, the block shape and `num_warps`. Both sides run without software
pipelining (`num_stages=1`) until v09 adds it to the CUDA side.

What it should reach: roughly twice v03's CUDA speed (siboehm's worklog: 2.7×), some two fifths of
cuBLAS fp32; the Triton side near its v03 TILE 32 figure (a little below: v03 also had `num_stages`
pipelining on).

Its story (measurements, what was tried): docs/notes/v05.md.
"""

import numpy as np
import triton

from .core.cuda_c import CudaSource, bind
from .core.registry import Variant
from .core.triton_util import check_blocks, warps_for
from .v03_smem_tiling import launch_smem_tiling

BK = 8  # CUDA: K step of the block tile
BLOCK_K = 32  # Triton: K step (tl.dot needs at least 16)
KERNELS = CudaSource(__name__, [f"blocktiling_1d<64,64,{BK},8>"])


# ---- CUDA C launcher ----------------------------------------------------------------------------------


def blocktiling_1d_cuda(a, b, c, BM=64, BN=64, TM=8):
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(N, BN), triton.cdiv(M, BM))
    args = (a, b, c, np.int32(M), np.int32(N), np.int32(K))
    return bind(KERNELS, f"blocktiling_1d<{BM},{BN},{BK},{TM}>", grid, (BM * BN // TM,), args)


# ---- Triton launcher (the kernel is v03's) ------------------------------------------------------------


def blocktiling_1d_triton(a, b, c, BM=64, BN=64, TM=8):
    check_blocks(BM=BM, BN=BN)
    return launch_smem_tiling(a, b, c, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BLOCK_K,
                              num_warps=warps_for(BM * BN // TM), num_stages=1)


VARIANT = Variant(
    __name__,
    title="1D register blocking",
    dtypes=("fp32",),
    cuda=blocktiling_1d_cuda,
    triton=blocktiling_1d_triton,
    cuda_source=KERNELS,
    configs=({"BM": 64, "BN": 64, "TM": 8},),
)
