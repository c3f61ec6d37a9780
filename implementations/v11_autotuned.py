"""v11 autotuned: v10's block routine in an L2-friendly block order, its tile sizes chosen by measurement.

The idea. Two changes, neither touching the inner loop.
- Block order. Blocks start roughly in launch order. Row-major order runs, at any moment, blocks
  from a few block rows and *all* block columns, so each column panel of B is read from DRAM again
  for every block row. Grouped order walks GROUP_M = 8 block rows column by column: the blocks in
  flight share 8 row panels of A and a few column panels of B, which stay in L2.
- Tile sizes. The best BM, BN, BK, warp tile and pipeline depth depend on the GPU (SMs, registers,
  shared memory) and on the shape (a 4096² C in 128×128 tiles is 1024 blocks: 3.9 waves of 2 blocks
  on 132 SMs, and the last wave is partly idle). So they are searched, not guessed: both sides
  compile every candidate below, time each on the actual operands at the first call for a device and
  shape, cache the winner in memory for that key, and report it (the note column of compare.py).
  The candidates include the v10 tile without grouping (GROUP_M = 1), so the search itself shows what
  grouping is worth.

CUDA C and Triton side by side:

| concept             | CUDA C (kernels_cuda/v11_autotuned.cu)        | Triton (below)                              |
|---------------------|-----------------------------------------------|---------------------------------------------|
| the block routine   | v10's `warptile_block`, `#include`d           | v10's `block_tile`, imported and called     |
| grouped order       | `autotuned<..., GROUP_M>`: blockIdx.x ->      | the same arithmetic on `tl.program_id(0)`   |
|                     | (block_m, block_n), a 1-D grid                | (as in Triton's matmul tutorial)            |
| the search space    | CUDA_CANDIDATES: template instantiations,     | TRITON_CONFIGS: `triton.Config`s of block   |
|                     | each compiled by NVRTC on first use           | sizes, GROUP_M, num_warps, num_stages       |
| search and cache    | `search_fastest`: do_bench each candidate,    | `@triton.autotune(key=["M", "N", "K"])`:    |
|                     | keep the fastest per (device, M, N, K)        | the same, built in                          |
| report              | `TunedRun.chosen()`                           | the autotuner's `best_config`               |

Under Triton's interpreter there is nothing to time: the launcher runs the first config (the CPU
tests run every config on awkward shapes, so whichever one a GPU picks has been checked).

What it should reach: the aim is at least 95% of cuBLAS fp32 on an H100 at 4096³ on both sides.
Measured (H100 80GB HBM3, 4096³ fp32, `compare.py --rungs 1-11 --rounds 3`, same run as cuBLAS with
TF32 off at 2.648 ms): **CUDA C 2.745 ms, 96.5%** (BM=128 BN=256 BK=8 WM=64 WN=64 STAGES=3 GROUP_M=8;
the row-major candidate, v10's 128×128 tile, 3.225 ms, and grouped 3.21 ms in the probe below: at
this size grouping is worth little for that tile); Triton 3.106 ms, 85.3%
(BLOCK 64×128×32, 4 warps, 4 stages). Size sweep 256-8192 (docs/results/h100_fp32_sweep.md): CUDA
95.9-97.9% of cuBLAS from 2048³ to 8192³, 104.5% at 1024³; Triton 85-89% from 2048³ up (96.5% at
3072³), 103% at 1024³.

How the CUDA side got from 91.4% to 96.5% (docs/results/h100_fp32_loop_probe.txt, every tile built
from the old and new sources in one process, interleaved rounds): v10's block routine lost the
branches in its k-loop body (v10's docstring; the 128×256 tile 91.2% → 92.4%), and the blocks per SM
it is built for are now declared in `__launch_bounds__` (92.4% → 96.4%; the SASS has the same
instructions in another order). Before, against cuBLAS's own kernel (sm80_xmma 256×128×8 FFMA, 8
warps per SM like ours) the instruction mix was as lean (88% FFMA) but the issue slots were busy 84%
of cycles against 90%, lost to fixed-latency waits (0.11 per issued instruction against 0.01: the
copy prologue) and dispatch stalls (0.22 against 0.10). Now (docs/results/h100_ncu_fp32_loop.md):
issue slots busy 86.4%, the FMA pipe 78.2% against cuBLAS's 79.8%, waits 0.03, dispatch stalls
0.26. What is left is in ptxas's schedule, which cuBLAS's kernel controls at the SASS level.
Tried and dropped earlier (docs/results/h100_v11_copy_schedule_probe.txt): the next tile's copies
spread a pass per k-step by hand, 77.6% (255 registers); BK = 16 in dynamic shared memory, 87%;
four or five stages, 90.9%.

The Triton side is held back by `tl.dot`'s FMA path: in ieee fp32 it lowers to FMAs over Triton's
default accumulator layout (there is no layout choice for the FMA path, as there is for the tensor
core ones), and it issues more shared loads per FMA than the CUDA tile (168 M against 101 M at 4096³,
docs/results/h100_ncu_fp32.md; issue 78%, dispatch 0.60 per instruction). Its search space is not
the limit: 252 configs timed at 4096³ (`scripts/triton_config_sweep.py`,
docs/results/h100_triton_config_sweep.txt) top out at 85.9%. Triton's lower-level Gluon language
(`triton.experimental.gluon`: explicit `BlockedLayout`s and `dot_fma`) would let a kernel set that
layout; it does not run in the interpreter, so the CPU tests could not cover it.
"""

import functools
import time
from typing import NamedTuple

import numpy as np
import torch
import triton
import triton.language as tl
from triton.runtime.interpreter import InterpretedFunction
from triton.testing import do_bench

from ._cuda import CudaSource, bind, check_grid, cpp_bool, rows_aligned
from ._registry import TunedRun, Variant
from .v10_warptiling import block_tile


class Tile(NamedTuple):
    BM: int
    BN: int
    BK: int
    WM: int
    WN: int
    STAGES: int
    GROUP_M: int

    @property
    def threads(self) -> int:
        return (self.BM // self.WM) * (self.BN // self.WN) * 32

    def grid(self, M: int, N: int) -> tuple[int]:
        """A 1-D grid of one block per tile of C (the kernel maps blockIdx.x to a tile in grouped order)."""
        return (triton.cdiv(M, self.BM) * triton.cdiv(N, self.BN),)

    def kernel(self, aligned: bool) -> str:
        """The instantiation for operands whose rows are 16-byte aligned, or not."""
        return f"autotuned<{','.join(map(str, self))},{cpp_bool(aligned)}>"

    def __str__(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self._asdict().items())


CUDA_CANDIDATES = (
    Tile(128, 128, 8, 32, 64, 3, 8),  # v10's tile, grouped
    Tile(128, 128, 8, 32, 64, 3, 1),  # v10's tile, row-major order: what grouping is worth
    Tile(128, 128, 16, 32, 64, 2, 8),  # deeper K step, two buffers
    Tile(128, 128, 8, 64, 64, 3, 8),  # 4 warps of 16×8 lane tiles: 128 accumulators per thread
    Tile(128, 128, 8, 64, 64, 4, 8),
    Tile(128, 256, 8, 64, 64, 3, 8),  # 8 warps of 16×8: one block per SM (as cuBLAS's own kernel)
    Tile(128, 256, 8, 64, 64, 2, 8),
    Tile(128, 256, 8, 64, 64, 3, 16),
    Tile(128, 256, 8, 32, 128, 3, 8),  # 8×16 lane tiles
    Tile(256, 128, 8, 64, 64, 3, 8),
    Tile(64, 128, 8, 32, 64, 4, 8),  # smaller tiles: more blocks for small shapes
)
KERNELS = CudaSource(__name__, [t.kernel(aligned) for t in CUDA_CANDIDATES for aligned in (True, False)])
SEARCH_WARMUP_MS, SEARCH_REP_MS = 5, 25
_cuda_choices: dict[tuple, tuple[Tile, dict[Tile, float], float]] = {}


# ---- CUDA C launcher ----------------------------------------------------------------------------------


def launch_candidate(a, b, c, tile: Tile):
    """One CUDA candidate, bound to these operands (the search times these; the tests check each)."""
    M, K = a.shape
    N = b.shape[1]
    args = (a, b, c, np.int32(M), np.int32(N), np.int32(K))
    return bind(KERNELS, tile.kernel(rows_aligned(a, b, c)), tile.grid(M, N), (tile.threads,), args)


def search_fastest(runs: dict) -> tuple[object, dict, float]:
    """Time every candidate's run on the real operands: (the fastest, every time in ms, seconds spent)."""
    start = time.perf_counter()
    times = {tile: do_bench(run, warmup=SEARCH_WARMUP_MS, rep=SEARCH_REP_MS) for tile, run in runs.items()}
    return min(times, key=times.get), times, time.perf_counter() - start


def autotuned_cuda(a, b, c):
    runs = {tile: launch_candidate(a, b, c, tile) for tile in CUDA_CANDIDATES}
    key = (torch.cuda.get_device_name(a.device), *a.shape, b.shape[1], int(rows_aligned(a, b, c)))

    def launch():
        if key not in _cuda_choices:
            _cuda_choices[key] = search_fastest(runs)
        return runs[_cuda_choices[key][0]]()

    def chosen() -> str:
        best, times, seconds = _cuda_choices[key]
        ranked = sorted(times, key=times.get)
        return (f"{best}, {times[best]:.3f} ms; runner-up {ranked[1]} {times[ranked[1]]:.3f} ms; "
                f"row-major order {times[CUDA_CANDIDATES[1]]:.3f} ms ({len(times)} candidates, {seconds:.1f} s)")

    return TunedRun(launch, chosen, lambda: (_cuda_choices[key][0].BM, _cuda_choices[key][0].BN))


# ---- Triton kernel and launcher -----------------------------------------------------------------------


def _config(bm, bn, bk, warps, stages, group_m=8):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group_m},
                         num_warps=warps, num_stages=stages)


TRITON_CONFIGS = (
    _config(128, 128, 32, 8, 3),  # v10's Triton launch, grouped
    _config(128, 128, 32, 8, 3, group_m=1),  # ... and in row-major order
    _config(128, 128, 16, 8, 4),
    _config(128, 128, 16, 4, 4),  # 4 warps: 128 accumulators per thread, as the best CUDA tiles
    _config(128, 128, 16, 4, 3),
    _config(128, 256, 16, 8, 3),
    _config(256, 128, 16, 8, 3),
    _config(64, 128, 32, 4, 4),
    _config(64, 128, 16, 4, 4),
    _config(128, 64, 32, 4, 4),
    _config(128, 64, 16, 4, 4),
    _config(64, 64, 32, 4, 4),
    _config(64, 64, 16, 2, 4),
)


@triton.jit
def grouped_tile(tile, grid_m, grid_n, GROUP_M: tl.constexpr):
    """Tile number -> (tile row, tile column): GROUP_M tile rows at a time, column by column."""
    per_group = GROUP_M * grid_n
    first_row = (tile // per_group) * GROUP_M
    rows = min(grid_m - first_row, GROUP_M)  # the last group may be shorter
    in_group = tile % per_group
    return first_row + in_group % rows, in_group // rows


@triton.jit
def autotuned_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    # ---- 1. map this program to a tile of C, GROUP_M block rows at a time, column by column ----
    pid_m, pid_n = grouped_tile(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    block_tile(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
               pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K)


tuned_kernel = triton.autotune(configs=list(TRITON_CONFIGS), key=["M", "N", "K"])(autotuned_kernel)


def _grid(M, N):
    return lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)


def launch_config(a, b, c, config: triton.Config):
    """One Triton config, without the search (the interpreter's path; the tests check each config)."""
    M, K = a.shape
    N = b.shape[1]
    return functools.partial(
        autotuned_kernel[_grid(M, N)],
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        **config.all_kwargs(),
    )


def block_of(config: triton.Config) -> tuple[int, int]:
    return config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"]


def describe(config: triton.Config) -> str:
    knobs = " ".join(f"{k}={v}" for k, v in config.kwargs.items())
    return f"{knobs} num_warps={config.num_warps} num_stages={config.num_stages}"


def autotuned_triton(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    check_grid((triton.cdiv(M, 64) * triton.cdiv(N, 64),))  # the smallest tile makes the largest grid
    if isinstance(autotuned_kernel, InterpretedFunction):
        first = TRITON_CONFIGS[0]
        note = f"{describe(first)} (interpreter: first config, untimed)"
        return TunedRun(launch_config(a, b, c, first), lambda: note, lambda: block_of(first))
    launch = functools.partial(
        tuned_kernel[_grid(M, N)],
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
    )
    return TunedRun(launch, lambda: f"{describe(tuned_kernel.best_config)} (fastest of {len(TRITON_CONFIGS)})",
                    lambda: block_of(tuned_kernel.best_config))


VARIANT = Variant(
    __name__,
    title="autotuned + grouped order",
    dtypes=("fp32",),
    cuda=autotuned_cuda,
    triton=autotuned_triton,
    cuda_source=KERNELS,
    min_cc=(8, 0),  # cp.async
)
