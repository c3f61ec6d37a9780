"""v12 WMMA: the first tensor-core rung. fp16 and bf16 operands, fp32 accumulation.

The idea. From here on the multiply-adds run on the tensor cores: one instruction multiplies whole
small matrices (a warp-wide 16×16×16 product is 4096 multiply-adds) at 16 times the CUDA cores' fp32
rate on an H100. The structure is still v03's (stage tiles in shared memory, barrier, multiply,
barrier); what changes is the unit of work: a warp owns a WM×WN block of C as (WM/16)·(WN/16)
accumulator *fragments*, and `wmma::mma_sync` is the multiply. Precision changes too: operands are
16-bit (fp16: 11 significant bits, bf16: 8), products are exact in fp32 and summed in fp32, and C is
rounded to the operand type at the end.

CUDA C and Triton side by side:

| concept                 | CUDA C (kernels_cuda/v12_wmma.cu)              | Triton (below)                            |
|-------------------------|------------------------------------------------|-------------------------------------------|
| the tensor-core product | `wmma::mma_sync(acc, a_frag, b_frag, acc)`     | `tl.dot(a, b, acc)` on fp16/bf16 tiles    |
| operand fragments       | `wmma::load_matrix_sync` from padded smem      | chosen by the compiler (ldmatrix/wgmma)   |
| fragment layout         | opaque: the epilogue stages through smem       | opaque too; `tl.store` handles it         |
| rounding C              | `__float2half_rn` / `__float2bfloat16_rn`      | `acc.to(c_ptr.dtype.element_ty)`          |
| which instruction       | HMMA (mma.sync) on every GPU since Volta       | the best the GPU has: on an H100, wgmma   |

What Triton does for you here is more than before: the same `tl.dot` that meant FFMA loops in the
fp32 rungs now becomes tensor-core instructions, and on Hopper the *newest* ones (wgmma, reading
operands straight from shared memory, issued asynchronously), which WMMA cannot reach. So on an H100
the Triton side of this rung is far ahead of the CUDA side: that gap is the lesson of v13-v15, which
take the CUDA side down to mma.sync, then wgmma and TMA. The Triton kernel here runs with
num_stages=1 (no software pipelining), like the CUDA side's synchronous copies; v13 adds the stages.

bf16 is GPU-only in the tests: Triton's interpreter computes with numpy, which has no bf16 type.

What it should reach: WMMA with synchronous copies and a shared-memory epilogue is far from the
tensor cores' peak (roughly a fifth to a third of cuBLAS on an H100): the copies and the barriers are
not overlapped with the math, and WMMA compiles to mma.sync, which on Hopper runs at about half of
wgmma's rate. The measured figures stand beside this on the lesson page and in the tensor-core tables.
"""

import functools

import numpy as np
import torch
import triton
import triton.language as tl

from .core.cuda_c import CudaSource, bind, check_grid, rows_aligned
from .core.registry import Variant
from .core.triton_util import check_blocks, warps_for
from .v11_autotuned import grouped_tile

CUDA_TYPES = {torch.float16: "__half", torch.bfloat16: "__nv_bfloat16"}
TILE = {"BM": 128, "BN": 128, "BK": 32, "WM": 64, "WN": 32}


def kernel_name(dtype: torch.dtype, BM, BN, BK, WM, WN) -> str:
    return f"wmma_gemm<{CUDA_TYPES[dtype]},{BM},{BN},{BK},{WM},{WN}>"


KERNELS = CudaSource(__name__, [kernel_name(t, **TILE) for t in CUDA_TYPES])


# ---- CUDA C launcher ----------------------------------------------------------------------------------


def wmma_cuda(a, b, c, BM=128, BN=128, BK=32, WM=64, WN=32):
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(N, BN), triton.cdiv(M, BM))
    args = (a, b, c, np.int32(M), np.int32(N), np.int32(K), rows_aligned(a, b))
    return bind(KERNELS, kernel_name(a.dtype, BM, BN, BK, WM, WN), grid, ((BM // WM) * (BN // WN) * 32,), args)


# ---- Triton kernel and launcher -----------------------------------------------------------------------


@triton.jit
def dot_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
):
    # ---- 1. map this program to a tile of C, GROUP_M block rows at a time (GROUP_M = 1: row-major) ----
    pid_m, pid_n = grouped_tile(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        # ---- 2. load the A and B tiles (zeros past the edges; num_stages decides how far ahead) ----
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k0), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k0) & (offs_n[None, :] < N), other=0.0)
        # ---- 3. multiply on the tensor cores (fp16/bf16: exact products; fp32 operands: INPUT_PRECISION) ----
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    # ---- 4. write back, rounded to C's type, masked at the edges ----
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def launch_dot(a, b, c, *, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M=1, INPUT_PRECISION="tf32", **knobs):
    """`dot_kernel` on one BLOCK_M×BLOCK_N tile per program; `knobs`: num_warps, num_stages.

    INPUT_PRECISION applies to fp32 operands only ("tf32", "tf32x3", "ieee"); 16-bit operands are
    multiplied exactly whatever it says.
    """
    check_blocks(BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    check_grid(grid)
    return functools.partial(
        dot_kernel[grid],
        a, b, c, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, INPUT_PRECISION=INPUT_PRECISION, **knobs,
    )


def wmma_triton(a, b, c, BM=128, BN=128, BK=32, WM=64, WN=32):
    return launch_dot(a, b, c, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK,
                      num_warps=warps_for((BM // WM) * (BN // WN) * 32), num_stages=1)


VARIANT = Variant(
    __name__,
    title="WMMA tensor cores",
    dtypes=("fp16", "bf16"),
    cuda=wmma_cuda,
    triton=wmma_triton,
    cuda_source=KERNELS,
    min_cc=(8, 0),  # bf16 fragments
    configs=(TILE,),
)
