"""v02 coalesced: v01 with the lanes walking the columns of C instead of the rows.

The idea. Nothing but the mapping changes: consecutive threads (CUDA) / consecutive lanes (Triton)
now hold consecutive *columns* of one row of C. At each k a warp reads 32 consecutive floats of B's
row k, which the memory system serves as one 128-byte transaction (coalesced), and one float of A
that every lane shares (a broadcast). Same flops, same number of loads as v01, far fewer
transactions. This is the mapping most textbook naive kernels use.

CUDA C and Triton side by side:

| concept               | CUDA C (kernels_cuda/v02_coalesced.cu)   | Triton (below)                                  |
|-----------------------|------------------------------------------|-------------------------------------------------|
| unit of work          | a thread: one element of C               | a lane of a program's vector: one element of C  |
| who walks the columns | `threadIdx.x` (+ `blockIdx.x·blockDim.x`)| `tl.arange(0, BLOCK_N)` (+ `pid_n·BLOCK_N`)     |
| coalescing            | you arrange it: x must be the fast axis  | you arrange it: the vector must run along the   |
|                       | of the addresses a warp reads            | contiguous axis (stride 1, which Triton sees)   |
| what changed from v01 | swap `threadIdx.x` and `threadIdx.y`     | the vector runs along N instead of M            |

Triton specialises integer arguments equal to 1 at compile time, so it knows `stride_bn == 1` and
emits one wide load per warp for B's row; with v01's layout it cannot, because the lanes' addresses
are K apart. Coalescing is thus not something Triton does for you at this rung: it follows from the
block you ask it to load, exactly as in CUDA it follows from which index `threadIdx.x` feeds.

What it should reach: around a tenth of cuBLAS fp32 on an H100, an order of magnitude above v01
(siboehm's worklog reaches a little less on an A6000); the loads now hit L1/L2 well, but every flop
still needs a load, so it stays far from the FMA units. The Triton program is one row of C, so it
shares less through L1 than the CUDA block's 32 rows over the same 32 columns.

Its story (measurements, what was tried): docs/notes/v02.md.
"""

import functools

import numpy as np
import triton
import triton.language as tl

from .core.cuda_c import CudaSource, bind, check_grid
from .core.registry import Variant

KERNELS = CudaSource(__name__, ["coalesced"])
THREADS = 32  # CUDA block: 32×32 threads
BLOCK_N = 128  # Triton program: 128 lanes (4 warps) along one row of C


# ---- CUDA C launcher ----------------------------------------------------------------------------------


def coalesced_cuda(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(N, THREADS), triton.cdiv(M, THREADS))  # blockIdx.x over columns, .y over rows
    return bind(KERNELS, "coalesced", grid, (THREADS, THREADS), (a, b, c, np.int32(M), np.int32(N), np.int32(K)))


# ---- Triton kernel and launcher -----------------------------------------------------------------------


@triton.jit
def coalesced_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_N: tl.constexpr,
):
    # ---- 1. map this program to BLOCK_N elements of one row of C: the lanes walk the columns ----
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_n = pid % num_pid_n  # consecutive programs: consecutive column blocks, like blockIdx.x
    row = pid // num_pid_n
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < N

    # ---- 2. dot product straight from global memory, one k at a time ----
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for k in range(0, K):
        a = tl.load(a_ptr + row * stride_am + k * stride_ak)  # one float, shared by every lane
        b = tl.load(b_ptr + k * stride_bk + cols * stride_bn, mask=col_ok, other=0.0)  # consecutive floats
        acc += a * b

    # ---- 3. write back ----
    tl.store(c_ptr + row * stride_cm + cols * stride_cn, acc, mask=col_ok)


def coalesced_triton(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(N, BLOCK_N) * M,)
    check_grid(grid)
    return functools.partial(
        coalesced_kernel[grid],
        a, b, c, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_N=BLOCK_N, num_warps=BLOCK_N // 32,
    )


VARIANT = Variant(
    __name__,
    title="naive, coalesced (thread x walks columns)",
    dtypes=("fp32",),
    cuda=coalesced_cuda,
    triton=coalesced_triton,
    cuda_source=KERNELS,
    tile=(1, 1),  # every product reads its A and B values from global memory: no reuse
)
