"""v01 naive: one thread (CUDA) / one vector lane (Triton) per element of C, lanes walking the rows.

The idea. C[i, j] is the dot product of row i of A and column j of B, so give every element of C its
own thread and let it loop over k, reading A and B straight from global memory. Nothing is reused:
the kernel moves 2·M·N·K floats for 2·M·N·K flops (0.25 flop per byte), and on top of that this
rung maps consecutive threads to consecutive *rows* of C. A warp then reads 32 floats of A that lie
K floats apart (32 memory transactions where one would do) and one float of B that all lanes share.

CUDA C and Triton side by side:

| concept               | CUDA C (kernels_cuda/v01_naive.cu)       | Triton (below)                                  |
|-----------------------|------------------------------------------|-------------------------------------------------|
| unit of work          | a thread: one element of C               | a lane of a program's vector: one element of C  |
| who walks the rows    | `threadIdx.x` (+ `blockIdx.x·blockDim.x`)| `tl.arange(0, BLOCK_M)` (+ `pid_m·BLOCK_M`)     |
| group of lanes        | a warp of 32 threads, a block of 32×32   | a program of BLOCK_M lanes over `num_warps` warps|
| bounds                | `if (row >= M ...) return;`              | `mask=rows < M` on the loads and the store      |
| memory access         | scalar loads per thread                  | one vector load per k: BLOCK_M addresses K apart|

Triton has no `threadIdx`: a program works on whole blocks, and the vector axis of `tl.arange` is
what `threadIdx.x` is in CUDA. A program whose lanes walk a column of C (rows of A, K floats apart)
issues the same scattered loads as the CUDA warp, so this is the honest Triton form of the
uncoalesced mapping; v02 flips the axis in both languages.

What it should reach: a few per cent of cuBLAS (fp32, TF32 off). The CUDA and Triton sides issue the
same scattered loads, so they should land close to each other, bound by memory transactions, not flops.

Its story (measurements, what was tried): docs/notes/v01.md.
"""

import functools

import numpy as np
import triton
import triton.language as tl

from .core.cuda_c import CudaSource, bind, check_grid
from .core.registry import Variant

KERNELS = CudaSource(__name__, ["naive"])
THREADS = 32  # CUDA block: 32×32 threads
BLOCK_M = 128  # Triton program: 128 lanes (4 warps) down one column of C


# ---- CUDA C launcher ----------------------------------------------------------------------------------


def naive_cuda(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, THREADS), triton.cdiv(N, THREADS))  # blockIdx.x over rows, .y over columns
    return bind(KERNELS, "naive", grid, (THREADS, THREADS), (a, b, c, np.int32(M), np.int32(N), np.int32(K)))


# ---- Triton kernel and launcher -----------------------------------------------------------------------


@triton.jit
def naive_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr,
):
    # ---- 1. map this program to BLOCK_M elements of one column of C: the lanes walk the rows ----
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    pid_m = pid % num_pid_m  # consecutive programs: consecutive row blocks, like blockIdx.x
    col = pid // num_pid_m
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M

    # ---- 2. dot product straight from global memory, one k at a time ----
    acc = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for k in range(0, K):
        a = tl.load(a_ptr + rows * stride_am + k * stride_ak, mask=row_ok, other=0.0)  # K floats apart
        b = tl.load(b_ptr + k * stride_bk + col * stride_bn)  # one float, shared by every lane
        acc += a * b

    # ---- 3. write back ----
    tl.store(c_ptr + rows * stride_cm + col * stride_cn, acc, mask=row_ok)


def naive_triton(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, BLOCK_M) * N,)
    check_grid(grid)
    return functools.partial(
        naive_kernel[grid],
        a, b, c, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=BLOCK_M, num_warps=BLOCK_M // 32,
    )


VARIANT = Variant(
    __name__,
    title="naive, uncoalesced (thread x walks rows)",
    dtypes=("fp32",),
    cuda=naive_cuda,
    triton=naive_triton,
    cuda_source=KERNELS,
    tile=(1, 1),  # every product reads its A and B values from global memory: no reuse
)
