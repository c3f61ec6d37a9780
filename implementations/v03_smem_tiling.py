"""v03 shared-memory tiling: stage TILE×TILE tiles of A and B on chip, reuse each loaded value TILE times.

The idea. In v02 every multiply-add needs a load. A block that computes a TILE×TILE tile of C needs
the same TILE rows of A and TILE columns of B for all of its outputs, so it loads a TILE×TILE tile of
each into shared memory once per step along K, waits for every thread to finish loading
(`__syncthreads()`), multiplies out of shared memory, and waits again before the next step
overwrites the tiles. Global traffic drops from 2·M·N·K to 2·M·N·K/TILE floats. Ragged edges (M, N
or K not a multiple of TILE) are padded with zeros as the tiles are loaded.

CUDA C and Triton side by side:

| concept             | CUDA C (kernels_cuda/v03_smem_tiling.cu)   | Triton (below)                                   |
|---------------------|--------------------------------------------|--------------------------------------------------|
| one tile of C       | a block of TILE×TILE threads               | a program computing a BLOCK_M×BLOCK_N block      |
| tile loop along K   | `for (k0 = 0; k0 < K; k0 += TILE)`         | `for k0 in range(0, K, BLOCK_K)`                 |
| staging             | `__shared__ float a_tile[TILE][TILE]`      | `tl.load` of a block: Triton decides where it    |
|                     | + one store per thread                     | lives (registers / shared memory) and stages it  |
| barriers            | two `__syncthreads()` per step, by hand    | inserted by the compiler: there is none to forget|
| tile product        | `for k: acc += a_tile[ty][k]*b_tile[k][tx]`| `acc = tl.dot(a, b, acc, input_precision="ieee")`|
| zero padding        | `cond ? a[...] : 0.0f`                     | `tl.load(..., mask=..., other=0.0)`              |
| tile size           | template `<int TILE>`: TILE² threads, so   | `tl.constexpr` BLOCK_M/N/K: decoupled from the   |
|                     | 8, 16, 32 launch and 64 (4096) cannot      | thread count (num_warps), so 64 is fine; `tl.dot`|
|                     |                                            | needs sides of at least 16                       |

What Triton did for you here: chose the thread layout of the blocks, staged the tiles in shared
memory and placed the barriers (its PTX has `bar.sync`), and software-pipelined the loop on its own:
with the default `num_stages` it loads the next tiles with `cp.async` while it multiplies the current
ones, double-buffering them. Evidence (H100, TILE 32; `pytest -s tests/rungs/test_v03.py -k pipelines`
checks it and prints the figures): 16384 B of shared memory and 20 `cp.async` in the PTX by default,
8192 B and none with `num_stages=1`; the CUDA kernel has 8192 B. On top of that, with
`input_precision="ieee"`, `tl.dot` on fp32 is an exact-fp32 FMA tile product in which each thread
computes several outputs from registers (56 registers against the CUDA kernel's 32), i.e. register
blocking, which this CUDA rung does not have yet (one output per thread).
So the Triton side runs well ahead of the CUDA side from this rung on; the CUDA ladder catches up
with register blocking, vector loads and cp.async in the next rungs.

What it should reach: the CUDA side about a sixth of cuBLAS fp32 at TILE 32 (one shared-memory load
per FMA still limits it), TILE 16 a little less; the Triton side, register-blocked already, several
times that at TILE 32.

Its story (measurements, what was tried): docs/notes/v03.md.
"""

import functools

import numpy as np
import triton
import triton.language as tl

from .core.cuda_c import CudaSource, bind, check_grid
from .core.registry import Variant
from .core.triton_util import check_blocks
from .core.validate import check_tile

CUDA_TILES = (8, 16, 32)  # TILE² threads per block: 64 would be 4096 threads, above CUDA's 1024
KERNELS = CudaSource(__name__, [f"smem_tiling<{t}>" for t in CUDA_TILES])


# ---- CUDA C launcher ----------------------------------------------------------------------------------


def smem_tiling_cuda(a, b, c, TILE=32):
    check_tile(TILE)
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(N, TILE), triton.cdiv(M, TILE))
    args = (a, b, c, np.int32(M), np.int32(N), np.int32(K))
    return bind(KERNELS, f"smem_tiling<{TILE}>", grid, (TILE, TILE), args)


# ---- Triton kernel and launcher -----------------------------------------------------------------------


@triton.jit
def smem_tiling_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    # ---- 1. map this program to one BLOCK_M×BLOCK_N tile of C ----
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # ---- 2. march along K one tile at a time ----
    for k0 in range(0, K, BLOCK_K):
        # ---- 3. load the A and B tiles (zeros past the edges of the matrices) ----
        a = tl.load(
            a_ptr + offs_m[:, None] * stride_am + (k0 + offs_k)[None, :] * stride_ak,
            mask=(offs_m[:, None] < M) & ((k0 + offs_k)[None, :] < K), other=0.0,
        )
        b = tl.load(
            b_ptr + (k0 + offs_k)[:, None] * stride_bk + offs_n[None, :] * stride_bn,
            mask=((k0 + offs_k)[:, None] < K) & (offs_n[None, :] < N), other=0.0,
        )
        # ---- 4. multiply the tiles (Triton stages them and places the barriers itself) ----
        acc = tl.dot(a, b, acc, input_precision="ieee")

    # ---- 5. write back ----
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def launch_smem_tiling(a, b, c, *, BLOCK_M, BLOCK_N, BLOCK_K, **knobs):
    """`smem_tiling_kernel` on one BLOCK_M×BLOCK_N tile per program; `knobs`: num_warps, num_stages.

    Rungs v05-v09 launch this same kernel with other block shapes and knobs: what their CUDA sides do
    by hand, Triton does here by itself (their docstrings show the evidence).
    """
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(N, BLOCK_N), triton.cdiv(M, BLOCK_M))
    check_grid(grid)
    return functools.partial(
        smem_tiling_kernel[grid],
        a, b, c, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, **knobs,
    )


def smem_tiling_triton(a, b, c, TILE=32):
    check_blocks(TILE=TILE)
    return launch_smem_tiling(a, b, c, BLOCK_M=TILE, BLOCK_N=TILE, BLOCK_K=TILE)


VARIANT = Variant(
    __name__,
    title="shared-memory tiling",
    dtypes=("fp32",),
    cuda=smem_tiling_cuda,
    triton=smem_tiling_triton,
    cuda_source=KERNELS,
    configs=({"TILE": 16}, {"TILE": 32}),
)
