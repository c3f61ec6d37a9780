"""v10 warptiling: block tile -> warp tiles -> 4×4 lane tiles, over a STAGES-deep cp.async pipeline.

The idea. Between the block and the thread there is a level the hardware cares about: the warp,
32 lanes that issue together. v10 gives each warp a WM×WN tile of the block's BM×BN tile and walks
it in 16×32 sub-tiles in which the 32 lanes form a 4×8 grid, lane (lr, lc) owning the 4×4 outputs
at rows 4·lr, columns 4·lc. This does by construction what v08 did by hand: in each LDS.128 the
8 lanes served together read one address of A (a broadcast) or 32 consecutive floats of B (no
conflict). A warp's reads stay inside its own WM rows of A and WN columns of B, and the per-thread
tile (WM/16 · WN/32 sub-tiles of 4×4) is a template parameter rather than a fixed 8×8. The copies run
STAGES - 1 tiles ahead (v09 had one) with one barrier per step. The block routine,
`warptile_block` in CUDA and `block_tile` in Triton, is what v11 tunes and reuses.

CUDA C and Triton side by side:

| concept              | CUDA C (kernels_cuda/v10_warptiling.cu)      | Triton (below)                              |
|----------------------|----------------------------------------------|---------------------------------------------|
| warp tile            | `warp_row`, `warp_col` from `threadIdx.x/32`, | `num_warps`; Triton lays the accumulator    |
|                      | template WM×WN                               | out over warps itself (`warpsPerCTA` in its |
|                      |                                              | TTGIR blocked layout)                       |
| lane tile            | 4×4 per sub-tile, (WM/16)×(WN/32) sub-tiles  | `sizePerThread` of the same layout          |
| pipeline depth       | template STAGES, prologue + wait_group       | `num_stages`                                |
| block routine        | `__device__ warptile_block(..., block_row,   | `@triton.jit def block_tile(..., pid_m,     |
|                      | block_col)`, called by the `__global__`      | pid_n)`, called by the kernel (Triton       |
|                      | kernel                                       | inlines jit functions called from a kernel) |
| ragged edges         | checked float4 / cp.async zero fill          | `mask=` / `other=0.0`                       |

What Triton did for you: the warp and lane tiling. `tl.dot`'s accumulator layout assigns each thread
a `sizePerThread` block and each warp a part of the tile (`warpsPerCTA`); `num_warps` is the knob.
The Triton side is v09's computation with the block routine split out for v11; it moves its
pointers along K instead of recomputing them, as Triton's tutorial does.

The k-loop body has no branch, and that is a lesson of its own: ptxas schedules instructions within
a basic block. A test inside the loop (are the rows aligned? is there a tile left to load?) cuts the
unrolled body, and the copies' address arithmetic then runs as a serial prologue before each tile's
first FMA. So alignment is a template parameter (the launcher picks the instantiation) and copies
past K are issued zero-filled. The blocks per SM the tile is built for go into `__launch_bounds__`
(`blocks_per_sm`): ptxas schedules differently once told. The same loop serves v11's larger tiles,
which gain from it more than this one.

What it should reach: CUDA most of cuBLAS fp32, a little short of it (siboehm's warptiling kernel
comes close to cuBLAS on an A6000); Triton about its v09 figure (the same computation).

Its story (measurements, what was tried): docs/notes/v10.md.
"""

import functools

import numpy as np
import triton
import triton.language as tl

from .core.cuda_c import CudaSource, bind, check_grid, cpp_bool, rows_aligned
from .core.registry import Variant
from .core.triton_util import check_blocks, warps_for

BK, STAGES = 8, 3  # CUDA: K step and pipeline depth
BLOCK_K, NUM_STAGES = 32, 3  # Triton
KERNELS = CudaSource(__name__, [f"warptiling<128,128,{BK},32,64,{STAGES},{cpp_bool(a)}>" for a in (True, False)])


# ---- CUDA C launcher ----------------------------------------------------------------------------------


def warptiling_cuda(a, b, c, BM=128, BN=128, WM=32, WN=64):
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(N, BN), triton.cdiv(M, BM))
    args = (a, b, c, np.int32(M), np.int32(N), np.int32(K))
    name = f"warptiling<{BM},{BN},{BK},{WM},{WN},{STAGES},{cpp_bool(rows_aligned(a, b, c))}>"
    return bind(KERNELS, name, grid, ((BM // WM) * (BN // WN) * 32,), args)


# ---- Triton kernel and launcher -----------------------------------------------------------------------


@triton.jit
def block_tile(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    pid_m, pid_n,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    # ---- 2. map: this tile's rows and columns (num_warps splits it over warps and lanes) ----
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    # ---- 3. prologue: pointers to the first tiles (the pipeliner issues the first copies: num_stages) ----
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # ---- 4. march along K: load the next A and B tiles (zeros past the edges) ----
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k0), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k0) & (offs_n[None, :] < N), other=0.0)
        # ---- 5. multiply (Triton spreads the outer products over warps and lanes) ----
        acc = tl.dot(a, b, acc, input_precision="ieee")
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    # ---- 6. write back ----
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def warptiling_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    # ---- 1. map this program to a BLOCK_M×BLOCK_N tile of C, in row-major program order ----
    block_tile(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
               tl.program_id(1), tl.program_id(0), BLOCK_M, BLOCK_N, BLOCK_K)


def warptiling_triton(a, b, c, BM=128, BN=128, WM=32, WN=64):
    check_blocks(BM=BM, BN=BN)
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(N, BN), triton.cdiv(M, BM))
    check_grid(grid)
    return functools.partial(
        warptiling_kernel[grid],
        a, b, c, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BLOCK_K,
        num_warps=warps_for((BM // WM) * (BN // WN) * 32), num_stages=NUM_STAGES,
    )


VARIANT = Variant(
    __name__,
    title="warptiling",
    dtypes=("fp32",),
    cuda=warptiling_cuda,
    triton=warptiling_triton,
    cuda_source=KERNELS,
    min_cc=(8, 0),  # cp.async
    configs=({"BM": 128, "BN": 128, "WM": 32, "WN": 64},),
)
