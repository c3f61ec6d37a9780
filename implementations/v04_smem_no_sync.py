"""v04 tiling without synchronisation: a data race, broken on purpose in both languages.

The idea. Take v03 and delete its two `__syncthreads()`. The block's warps are scheduled
independently, so a warp may read `b_tile[k][tx]` before the warp that owns row k has stored it, and
a warp that finished step k0 may overwrite the tiles of step k0 + TILE while slower warps are still
multiplying step k0. The answer depends on timing: on a GPU it is wrong, by an amount that changes
from run to run (the suite shows this rung as WRONG (expected) and never times it). The classic
classroom demo shows it with all-ones inputs; random inputs and the normwise check make it plain.

Triton has no barrier to forget: inside a program it inserts every barrier itself (v03's Triton
PTX shows them). The synchronisation Triton cannot provide is *between programs*, which share
nothing but global memory. So the Triton side of this rung makes that mistake: it splits K across
SPLIT_K programs per tile of C (split-K) and adds each partial tile into C with a plain load, add,
store instead of `tl.atomic_add`. Programs of the same tile run at the same time and finish at about
the same time; when two read C before either stores, one partial sum is lost. Same bug class as the
CUDA side: a read-modify-write of shared data with nothing ordering the writers.

CUDA C and Triton side by side:

| concept              | CUDA C (kernels_cuda/v04_smem_no_sync.cu) | Triton (below)                                  |
|----------------------|-------------------------------------------|-------------------------------------------------|
| who shares data      | the warps of a block, in `__shared__`     | the SPLIT_K programs of a tile, in C (global)   |
| the missing sync     | `__syncthreads()` after the stores and    | `tl.atomic_add` (or one program per tile)       |
|                      | after the multiply                        |                                                 |
| what goes wrong      | reads of tiles not yet written / already  | lost updates: load, add, store interleave       |
|                      | overwritten                               |                                                 |
| the fix              | v03                                       | `tl.atomic_add(c_ptrs, acc, mask=...)`          |
| other Triton bugs of | -                                         | a missing or wrong mask on a ragged edge (reads |
| this kind            |                                           | or writes out of bounds), a `tl.program_id` to  |
|                      |                                           | tile mapping that skips or repeats tiles        |

Where the race shows: on a GPU the CUDA side goes wrong at every size, the Triton side once K spans
more than one K tile per program (with a single tile, the programs that have nothing to add finish
before the one that does, and no update is lost); so the GPU tests check large sizes, several fresh
runs each. Triton's CPU interpreter runs programs one after another, so there the Triton side always
gives the right answer, and the CPU tests assert exactly that: a race cannot show when nothing runs
concurrently.

Its story (measurements, what was tried): docs/notes/v04.md.
"""

import functools

import numpy as np
import triton
import triton.language as tl

from .core.cuda_c import CudaSource, bind, check_grid
from .core.registry import Variant
from .core.triton_util import check_blocks
from .core.validate import check_tile

CUDA_TILES = (16, 32)
KERNELS = CudaSource(__name__, [f"smem_no_sync<{t}>" for t in CUDA_TILES])
SPLIT_K = 4  # Triton: programs per tile of C that race on it


# ---- CUDA C launcher ----------------------------------------------------------------------------------


def smem_no_sync_cuda(a, b, c, TILE=32):
    check_tile(TILE)
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(N, TILE), triton.cdiv(M, TILE))
    args = (a, b, c, np.int32(M), np.int32(N), np.int32(K))
    return bind(KERNELS, f"smem_no_sync<{TILE}>", grid, (TILE, TILE), args)


# ---- Triton kernel and launcher -----------------------------------------------------------------------


@triton.jit
def smem_no_sync_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr,
):
    # ---- 1. map this program to one BLOCK_M×BLOCK_N tile of C and one of SPLIT_K slices of K ----
    pid_k = tl.program_id(0)  # fastest: the SPLIT_K programs of a tile are launched side by side
    pid_n = tl.program_id(1)
    pid_m = tl.program_id(2)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # ---- 2. march along this program's K tiles: pid_k, pid_k + SPLIT_K, ... ----
    for k0 in range(pid_k * BLOCK_K, K, BLOCK_K * SPLIT_K):
        # ---- 3. load the A and B tiles (zeros past the edges of the matrices) ----
        a = tl.load(
            a_ptr + offs_m[:, None] * stride_am + (k0 + offs_k)[None, :] * stride_ak,
            mask=(offs_m[:, None] < M) & ((k0 + offs_k)[None, :] < K), other=0.0,
        )
        b = tl.load(
            b_ptr + (k0 + offs_k)[:, None] * stride_bk + offs_n[None, :] * stride_bn,
            mask=((k0 + offs_k)[:, None] < K) & (offs_n[None, :] < N), other=0.0,
        )
        # ---- 4. multiply the tiles ----
        acc = tl.dot(a, b, acc, input_precision="ieee")

    # ---- 5. add the partial tile into C: load, add, store, NOT atomic: programs of a tile race ----
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    c_ok = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    partial = tl.load(c_ptrs, mask=c_ok, other=0.0)
    tl.store(c_ptrs, partial + acc, mask=c_ok)


def smem_no_sync_triton(a, b, c, TILE=32):
    check_blocks(TILE=TILE)
    M, K = a.shape
    N = b.shape[1]
    grid = (SPLIT_K, triton.cdiv(N, TILE), triton.cdiv(M, TILE))
    check_grid(grid)
    launch = functools.partial(
        smem_no_sync_kernel[grid],
        a, b, c, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=TILE, BLOCK_N=TILE, BLOCK_K=TILE, SPLIT_K=SPLIT_K,
    )

    def run():
        c.zero_()  # split-K accumulates into C, so C starts at zero (this overwrites the check's NaN poison)
        return launch()

    return run


VARIANT = Variant(
    __name__,
    title="tiling without synchronisation (race)",
    dtypes=("fp32",),
    cuda=smem_no_sync_cuda,
    triton=smem_no_sync_triton,
    cuda_source=KERNELS,
    configs=({"TILE": 16}, {"TILE": 32}),
    expect_wrong="a data race: no __syncthreads() in CUDA, no atomic add between split-K programs in Triton",
)
