"""v11 autotuned: v10's block routine in an L2-friendly block order, its tile sizes chosen by measurement.

The idea. Two changes, neither touching v10's inner loop, and on the Triton side a second kernel.
- Block order. Blocks start roughly in launch order. Row-major order runs, at any moment, blocks
  from a few block rows and *all* block columns, so each column panel of B is read from DRAM again
  for every block row. Grouped order walks GROUP_M = 8 block rows column by column: the blocks in
  flight share 8 row panels of A and a few column panels of B, which stay in L2.
- Tile sizes. The best BM, BN, BK, warp tile and pipeline depth depend on the GPU (SMs, registers,
  shared memory) and on the shape (the waves its tiles make: a 4096² C in 128×128 tiles is 3.9 waves
  of 2 blocks on 132 SMs). So they are searched, not guessed: the rung declares its candidates, and the
  shared search (implementations/core/search.py) times them at the first call per device and shape,
  for both languages. v10's tile in row-major order (GROUP_M = 1) is one of them: the search shows what
  grouping is worth. CUDA C's tiles need not be powers of two (80 rows: one even wave where 64 or 128
  make two; a Triton block's must be); so is its store of C (float4s pin accumulators to register quads).
- Gluon. `tl.dot` in ieee fp32 lowers to FMAs over a default layout that cannot be chosen, and stays
  short of the CUDA tile. So the Triton side adds a Gluon kernel (`triton.experimental.gluon`, the same
  compiler with layouts and pipeline written out): the CUDA kernel's structure, phase for phase.

CUDA C and Triton side by side:

| concept             | CUDA C (kernels_cuda/v11_autotuned.cu)        | Triton (below)                              |
|---------------------|-----------------------------------------------|---------------------------------------------|
| the block routine   | v10's `warptile_block`, `#include`d           | v10's `block_tile`, imported and called     |
| grouped order       | `autotuned<..., GROUP_M>`: blockIdx.x ->      | the same arithmetic on `tl.program_id(0)`   |
|                     | (block_m, block_n) on grid axis x             | (as in Triton's matmul tutorial)            |
| the candidates      | template instantiations, each compiled by     | `tl.dot` configs (block sizes, GROUP_M,     |
|                     | NVRTC on first use                            | num_warps, num_stages) and Gluon tiles      |
| search and report   | the shared search, at the first call per      | the same search, one timer for both (as     |
|                     | device and shape                              | `triton.autotune` would for Triton alone)   |
| warp/lane tiling    | `warptile_block`'s index arithmetic           | Gluon: `acc_layout`, a `BlockedLayout`      |
| cp.async pipeline   | `cp_async4/16`, commit, wait, `__syncthreads` | Gluon: `async_copy`, commit, wait, barrier  |
| A's tile, no bank   | A^T padded by 4 floats a row (v08's fix)      | Gluon: `a_tile_layout`, XOR-swizzled (a     |
| conflicts           |                                               | padded one: not on NVIDIA in Triton 3.6)    |
| transposed operands | A_T, B_T: K-major A, Bᵀ: 4-byte copies into a | the strides in the pointer arithmetic; Bᵀ   |
|                     | padded tile; M/N-major B, Aᵀ: 16-byte chunks  | is copied (see below)                       |
| batch               | grid y, then z; a matrix stride (0: shared)   | grid axis 1; the same strides               |

What Triton did for you here: with `tl.dot`, the layouts and the pipeline, as in v10; with Gluon, the
compilation only: what matches the CUDA tile is written out, layouts, copies, waits and barriers.

Constraints: fp32, sm_80+ (cp.async). In Triton's interpreter the first `tl.dot` candidate runs,
untimed. Gluon has no interpreter: the CPU tests compile every Gluon candidate for sm_80 and sm_90 (no
spills) and check `a_tile_layout`'s banks; the GPU tests check every candidate on ragged shapes.
Layouts and batches: both languages batch in one launch. CUDA C reads nn, tn, tt in place (tt as Cᵀ =
Bᵀ·Aᵀ: nn's copies, C written by columns; nt copies B, faster than in place; 80- and 48-row tiles skip
tn); ALIGNED asks 16-byte rows of C and of the chunked operands (B, Aᵀ). Triton reads Aᵀ in place and copies a
transposed B (reading it in place scatters a warp over rows: slower); batches up to 65535.

What it should reach: cuBLAS fp32's level at large sizes on an H100, within a few per cent, in both.
Its story (measurements, what was tried): docs/notes/v11.md.
"""

import dataclasses
import re
import subprocess
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy

from .core.check import LAYOUTS
from .core.cuda_c import (MAX_GRID, STATIC_SMEM_LIMIT, CudaSource, PtxasReport, bind, check_grid, cpp_bool, parse_ptxas,
                          rows_aligned)
from .core.registry import Variant, layout_of
from .core.search import Search, each
from .core.triton_util import block_of, describe_config, prebound
from .v10_warptiling import block_tile


class Tile(NamedTuple):
    BM: int
    BN: int
    BK: int
    WM: int
    WN: int
    STAGES: int
    GROUP_M: int
    C_STORE: int = 0  # CUDA C only: how a row-major C is stored, an index into C_STORES (the Gluon kernel: float4s)

    @property
    def threads(self) -> int:
        return (self.BM // self.WM) * (self.BN // self.WN) * 32

    def grid(self, M: int, N: int, layout: str = "nn") -> tuple[int]:
        """A 1-D grid of one block per tile of C, or in tt of Cᵀ (the kernel maps blockIdx.x to a tile in grouped
        order)."""
        rows, cols = (N, M) if layout == "tt" else (M, N)
        return (triton.cdiv(rows, self.BM) * triton.cdiv(cols, self.BN),)

    def kernel(self, aligned: bool, layout: str = "nn", batched: bool = False) -> str:
        """The instantiation for a layout ("nn", "nt", "tn", "tt"), rows copied in 16-byte chunks that are
        16-byte aligned or not (see `chunked_rows_aligned`), and a batch of products or one."""
        a_t, b_t = (cpp_bool(op == "t") for op in layout)
        return f"autotuned<{','.join(map(str, self))},{cpp_bool(aligned)},{a_t},{b_t},{cpp_bool(batched)}>"

    def tile_bytes(self, layout: str = "nn") -> int:
        """The STAGES stages of the A and B tiles in shared memory. A K-major operand's tile is padded by 4
        floats a row: A's but in tn, B's in nt (tt reads nn's way)."""
        a_pad, b_pad = (0 if layout == "tn" else 4), (4 if layout == "nt" else 0)
        return self.STAGES * self.BK * (self.BM + a_pad + self.BN + b_pad) * 4

    def shared_mem(self, layout: str = "nn") -> int:
        """Bytes of dynamic shared memory the kernel asks at launch: its tiles where they pass the 48 KB a
        kernel may declare statically (warptile_block's test), else 0."""
        size = self.tile_bytes(layout)
        return size if size > STATIC_SMEM_LIMIT else 0

    def reads(self, layout: str) -> bool:
        """Whether this tile runs in `layout`. warptile_block's copies must divide it (its static_asserts): a
        transposed A's stored rows of BM floats go a 16-byte chunk, or a float, per thread in whole passes of
        the block, which 80-row tiles' 128 threads do not make. tt reads nn's way (Cᵀ = Bᵀ·Aᵀ) and stores C by
        columns, its own way: it takes only the float4 C_STORE."""
        if layout == "tt":
            return self.C_STORE == 0
        return layout != "tn" or all(self.threads % along == 0 and self.BK % (self.threads // along) == 0
                                       for along in (self.BM // 4, self.BM))

    def __str__(self) -> str:
        fields = self._asdict()
        store = C_STORES[fields.pop("C_STORE")]
        return " ".join([f"{k}={v}" for k, v in fields.items()] + ([f"C={store}"] if self.C_STORE else []))


# Tile.C_STORE: warptile_block's C_FLOAT4, C_FLOATS, C_FLOAT4_OF_SUMS. Which registers ptxas gives the
# accumulators follows from the store (a float4 asks an aligned quad per row of four), and the k-loop's schedule
# with them: which one is fastest depends on the tile and the shape.
C_STORES = ("float4s", "floats", "float4s of sums")


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
    Tile(128, 256, 8, 64, 64, 3, 8, 1),  # C a float at a time, the accumulators in any registers: single products
    # a 16-deep k step: half the barriers per FMA, where a batch's blocks wait at them; past 48 KB of shared memory
    Tile(128, 256, 16, 64, 64, 2, 8),
    Tile(128, 256, 16, 64, 64, 3, 8, 2),
    Tile(256, 128, 8, 64, 64, 3, 8),
    Tile(64, 128, 8, 32, 64, 4, 8),  # smaller tiles: more blocks for small shapes
    Tile(64, 64, 8, 32, 32, 4, 8),  # a whole 64×64 product per block: batches of small matrices
    Tile(48, 64, 8, 48, 32, 4, 8),  # 2 warps of 48×32 (3 lane rows): a row past 256 costs 48 more, not 64 (257×4099)
    # 4 warps of 80×32 (5 lane rows): one balanced wave where powers of two make a second (1000×1100: 117 tiles,
    # 257×4099: 132); not tn (`reads`)
    Tile(80, 128, 8, 80, 32, 4, 8),
)
# A single product runs a kernel without the batch offsets (BATCHED false), except in nt: that layout is not
# read in place (the registry copies B), and its single-product 128×128 kernels spill on sm_80.
SINGLE = ("nn", "tn", "tt")
KERNELS = CudaSource(__name__, [t.kernel(aligned, layout, batched) for layout in LAYOUTS for t in CUDA_CANDIDATES
                                 for aligned in (True, False) for batched in (False, True)
                                 if (batched or layout in SINGLE) and t.reads(layout)])


# ---- CUDA C launcher ----------------------------------------------------------------------------------


def operand_args(a, b, c) -> tuple[int, tuple]:
    """(products, (M, N, K and the strides both Triton kernels take)) for matrices or a batch of them: the
    strides within a matrix, then from one matrix of the batch to the next (0 for a 2-D operand, shared),
    which the CUDA kernels take too."""
    M, K = a.shape[-2:]
    N = b.shape[-1]
    products = c.shape[0] if c.dim() == 3 else 1
    within = (a.stride(-2), a.stride(-1), b.stride(-2), b.stride(-1), c.stride(-2), c.stride(-1))
    across = tuple(t.stride(0) if t.dim() == 3 else 0 for t in (a, b, c))
    return products, (M, N, K, *within, *across)


def chunked_rows_aligned(a, b, c, layout: str) -> bool:
    """Whether every row the kernel moves in 16-byte chunks starts 16-byte aligned, in every matrix of a
    batch: C's, B's as given (not when transposed: its rows run along K, copied 4 bytes at a time), and the
    stored rows of a transposed A (of M; A as given runs along K)."""
    chunked = [c, *([a.mT] if layout[0] == "t" else []), *([b] if layout[1] == "n" else [])]
    return bool(rows_aligned(*chunked))


def launch_candidate(a, b, c, tile: Tile, source: CudaSource = KERNELS):
    """One CUDA candidate, bound to these operands (the search times these; the tests check each): matrices
    or a batch of them, each row-major or a transposed view; `source` instantiates it (a probe's may hold
    tiles that are not candidates)."""
    layout = layout_of(a) + layout_of(b)
    if len(layout) != 2:
        raise ValueError("the v11 CUDA kernels read row-major matrices and transposed views of them, not other strides")
    if not c.is_contiguous():
        raise ValueError(f"the v11 CUDA kernels write a contiguous C (matrix after matrix), not strides {c.stride()}")
    products, (M, N, K, *_, a_step, b_step, _) = operand_args(a, b, c)
    y = min(products, MAX_GRID[1])  # a longer batch continues along z
    grid = (*tile.grid(M, N, layout), y, triton.cdiv(products, y))
    args = (a, b, c, np.int32(M), np.int32(N), np.int32(K), np.int64(a_step), np.int64(b_step), np.int32(products))
    kernel = tile.kernel(chunked_rows_aligned(a, b, c, layout), layout, batched=products > 1 or layout not in SINGLE)
    return bind(source, kernel, grid, (tile.threads,), args, shared_mem=tile.shared_mem(layout))


CUDA_SEARCH = Search(__name__, "cuda", CUDA_CANDIDATES, each(launch_candidate), tile=lambda t: (t.BM, t.BN),
                     reference=("row-major order", CUDA_CANDIDATES[1]), reads=Tile.reads)


def autotuned_cuda(a, b, c):
    return CUDA_SEARCH.tuned(a, b, c)


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


def _grouped_tile(tile, grid_m, grid_n, GROUP_M: tl.constexpr):
    """Tile number -> (tile row, tile column): GROUP_M tile rows at a time, column by column."""
    per_group = GROUP_M * grid_n
    first_row = (tile // per_group) * GROUP_M
    rows = min(grid_m - first_row, GROUP_M)  # the last group may be shorter
    in_group = tile % per_group
    return first_row + in_group % rows, in_group // rows


grouped_tile = triton.jit(_grouped_tile)
gluon_grouped_tile = gluon.jit(_grouped_tile)  # the same function for the Gluon kernel below (the interpreter's
# form of a Triton function cannot be called from Gluon)


@triton.jit
def autotuned_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, stride_ab, stride_bb, stride_cb,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    ROW_ALIGN: tl.constexpr = 1,
):
    # Triton knows of an integer argument only whether it is a multiple of 16: rows of 1028 floats start
    # 16-byte aligned, and masks at K or N cut them into whole 16-byte pieces, but unless the kernel can see
    # it they are copied 4 bytes at a time. (x // R) * R is x where the launcher has checked that R divides
    # it (row_align), and the compiler can see that R divides it
    if ROW_ALIGN > 1:
        stride_am = stride_am // ROW_ALIGN * ROW_ALIGN
        stride_bk = stride_bk // ROW_ALIGN * ROW_ALIGN
        stride_cm = stride_cm // ROW_ALIGN * ROW_ALIGN
        K = K // ROW_ALIGN * ROW_ALIGN
        N = N // ROW_ALIGN * ROW_ALIGN
    # the product of a batch this program computes: grid axis 1 (a batch stride of 0: one shared operand)
    product = tl.program_id(1).to(tl.int64)
    a_ptr += product * stride_ab
    b_ptr += product * stride_bb
    c_ptr += product * stride_cb
    # ---- 1. map this program to a tile of C, GROUP_M block rows at a time, column by column ----
    pid_m, pid_n = grouped_tile(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    block_tile(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
               pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K)


def _grid(M, N, batch):
    return lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]), batch)


def row_align(a, b, c) -> int:
    """ROW_ALIGN for the Triton kernel: the elements in 16 bytes when A, B and C are all row-major with every
    row, and every matrix of a batch, starting 16-byte aligned, and K and N are multiples of it (the masks
    along rows); else 1 (no hint)."""
    per_16_bytes = 16 // a.element_size()

    def aligned(t):
        return (t.stride(-1) == 1 and t.stride(-2) % per_16_bytes == 0 and t.data_ptr() % 16 == 0
                and (t.dim() == 2 or t.stride(0) % per_16_bytes == 0))

    rows = all(aligned(t) for t in (a, b, c)) and a.shape[-1] % per_16_bytes == 0 and b.shape[-1] % per_16_bytes == 0
    return per_16_bytes if rows else 1


def launch_config(a, b, c, config: triton.Config):
    """One Triton config, without the search (the interpreter's path; the tests check each config)."""
    products, args = operand_args(a, b, c)
    M, N = args[:2]
    return prebound(autotuned_kernel, _grid(M, N, products), a, b, c, *args, **config.all_kwargs(),
                    ROW_ALIGN=row_align(a, b, c))


def describe(candidate) -> str:
    """A `tl.dot` config or a Gluon tile, as the search reports it."""
    if isinstance(candidate, Tile):
        return f"Gluon {candidate}"
    return f"tl.dot {describe_config(candidate)}"


def launch_triton_candidate(a, b, c, candidate):
    """A `tl.dot` config of `autotuned_kernel`, or a tile of the Gluon kernel (below)."""
    return launch_gluon(a, b, c, candidate) if isinstance(candidate, Tile) else launch_config(a, b, c, candidate)


def autotuned_triton(a, b, c):
    """The `tl.dot` configs and the Gluon tiles, searched together; under the interpreter the first config runs."""
    products, (M, N, K, *_) = operand_args(a, b, c)
    check_grid((triton.cdiv(M, 64) * triton.cdiv(N, 64), products))  # the smallest tile makes the largest grid
    return TRITON_SEARCH.tuned(a, b, c)


# ---- Triton one level down: Gluon, the layouts and the pipeline written out -------------------------

# Triton 3.6 names these async_copy_global_to_shared and thread_barrier; later versions async_load and barrier.
copy_to_shared = getattr(async_copy, "async_load", None) or async_copy.async_copy_global_to_shared
block_barrier = getattr(gl, "barrier", None) or gl.thread_barrier

GLUON_CANDIDATES = (
    Tile(128, 256, 8, 64, 64, 2, 8),  # as the best CUDA tile: 8 warps, 16×8 accumulators per lane
    Tile(128, 256, 8, 64, 64, 4, 8),
    Tile(128, 128, 8, 32, 64, 4, 8),  # v10's tile: 8 warps of 8×8; more blocks for mid-size shapes
    Tile(64, 128, 8, 32, 64, 4, 8),
    Tile(32, 64, 8, 32, 32, 2, 8),  # 2 warps: more tiles, as even a wave as powers of two allow (257×4099)
)

GLUON_KNOBS = {"A_K_LANES": 4, "TRIP_START": 4}


@gluon.constexpr_function
def a_tile_layout(block_k, block_m, k_lanes):
    """A's transposed tile in shared memory, [BLOCK_K, BLOCK_M], without bank conflicts in the copies or the
    reads. The bases give the (k, m) of each bit of a float's offset (k and m combine by XOR).
    - Copies: an instruction writes k_lanes k × 32/k_lanes m (a_copy). Row-major, its k rows are BLOCK_M
      floats apart, all in one bank: a k_lanes-way conflict. Here m's first bits fill the low bank bits and
      k's the rest, so the 32 lanes fill the 32 banks.
    - Reads: an instruction reads 4 float4s of one row k, at m = 0, 4, 8 and 12 (plus 16·i; a_frag). With
      4 k lanes, m = 8 alone would sit 32 floats on, in m = 0's banks; it is XORed with k = 1's offset,
      which moves it to banks a read of one row leaves free. The 4 float4s then fill 16 banks.
    - Slicing: k's bits are single offset bits, so a row k is its offset XORed with m's; Triton's verifier
      asks exactly that of a slice, and Triton applies a slice's offset by XOR.
    CUDA pads each row by 4 floats instead; Triton 3.6 cannot lower a padded layout on NVIDIA."""
    assert k_lanes in (2, 4, 8) and k_lanes <= block_k and block_m >= 16, "A's copy lanes fill the banks"
    m_lanes = (32 // k_lanes).bit_length() - 1  # bits of m among a copy's 32 lanes
    bases = [[0, 1 << b] for b in range(m_lanes)] + [[1 << b, 0] for b in range(5 - m_lanes)]
    bases += [[1 << (b - m_lanes), 1 << b] for b in range(m_lanes, 4)]  # m = 4, 8 of a read, off k's banks
    bases += [[0, 1 << b] for b in range(4, block_m.bit_length() - 1)]
    return gl.SharedLinearLayout(bases + [[1 << b, 0] for b in range(5 - m_lanes, block_k.bit_length() - 1)])


@gluon.jit
def copy_tile(a_smem, b_smem, stage, k0, a_ptrs, b_ptrs, a_ks, a_rows, b_ks, b_cols, M, N, K, stride_ak, stride_bk,
              EVEN: gl.constexpr):
    """Start the cp.async copies of the A tile (transposed: [k, m]) and the B tile at k0 into `stage`;
    zeros past the edges. EVEN: the tiles divide M, N and K, so a tile lies wholly inside or past K."""
    if EVEN:  # no row or column edge: fewer registers
        copy_to_shared(a_smem.index(stage), a_ptrs + k0 * stride_ak, mask=a_ks[:, None] < K - k0)
        copy_to_shared(b_smem.index(stage), b_ptrs + k0 * stride_bk, mask=b_ks[:, None] < K - k0)
    else:
        copy_to_shared(a_smem.index(stage), a_ptrs + k0 * stride_ak,
                       mask=(a_ks[:, None] < K - k0) & (a_rows[None, :] < M))
        copy_to_shared(b_smem.index(stage), b_ptrs + k0 * stride_bk,
                       mask=(b_ks[:, None] < K - k0) & (b_cols[None, :] < N))
    async_copy.commit_group()


@gluon.jit
def load_frags(a_smem, b_smem, stage, k, a_frag: gl.constexpr, acc_layout: gl.constexpr):
    """Row k of the A^T and B tiles in `stage`, as a lane needs them: its rows of A (BLOCK_M×1) and its
    columns of B (1×BLOCK_N) in acc_layout, read as float4s."""
    a = gl.permute(a_smem.index(stage).slice(k, 1).load(a_frag), (1, 0))
    b = b_smem.index(stage).slice(k, 1).load(acc_layout)
    return a, b


@gluon.jit
def multiply_steps(acc, a, b, a_smem, b_smem, a_other, b_other, t, copies, FIRST: gl.constexpr, LAST: gl.constexpr,
                   EVEN: gl.constexpr, BLOCK_K: gl.constexpr, STAGES: gl.constexpr, a_frag: gl.constexpr,
                   acc_layout: gl.constexpr):
    """Steps FIRST..LAST-1 of tile t, its stages in a_smem/b_smem and tile t+1's in a_other/b_other; a and b
    are the fragments of step FIRST. Returns the accumulators and the next step's fragments."""
    HALF: gl.constexpr = STAGES // 2
    for k in gl.static_range(FIRST, LAST):
        # fragments are double-buffered: the reads for step k+1 are issued before the FMAs of step k
        if k == BLOCK_K - 1:
            async_copy.wait_group(STAGES - 2)  # this thread's copies of tile t+1 have landed
            block_barrier()  # everyone's have, and everyone has read its last fragments of tile t
            a_next, b_next = load_frags(a_other, b_other, (t + 1) // 2 % HALF, 0, a_frag, acc_layout)
        else:
            a_next, b_next = load_frags(a_smem, b_smem, t // 2 % HALF, k + 1, a_frag, acc_layout)
        if k == 0:  # into the stage of tile t-1 (the other parity), free since the barrier before this tile's last step
            nxt = t + STAGES - 1
            copy_tile(a_other, b_other, nxt // 2 % HALF, nxt * BLOCK_K, *copies, EVEN)
        # ---- 5. multiply: the outer product of a lane's A rows and B columns, from registers ----
        acc = gl.fma(a, b, acc)
        a, b = a_next, b_next
    return acc, a, b


@gluon.jit
def gluon_warptile_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, stride_ab, stride_bb, stride_cb,
    BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, WARP_M: gl.constexpr,
    WARP_N: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr, EVEN: gl.constexpr, A_K_LANES: gl.constexpr,
    TRIP_START: gl.constexpr,
):
    # the product of a batch this program computes: grid axis 1 (a batch stride of 0: one shared operand)
    product = gl.program_id(1).to(gl.int64)
    a_ptr += product * stride_ab
    b_ptr += product * stride_bb
    c_ptr += product * stride_cb
    # ---- 1. map this program to a tile of C, GROUP_M block rows at a time, column by column ----
    pid_m, pid_n = gluon_grouped_tile(gl.program_id(0), gl.cdiv(M, BLOCK_M), gl.cdiv(N, BLOCK_N), GROUP_M)

    # ---- 2. map: the warp and lane tiling, as layouts. Lane (r, c) of a warp's 4×8 grid holds a 4×4
    # block of C; the pattern repeats over the tile, so a lane holds (WARP_M/4)×(WARP_N/8) accumulators
    # (16×8 for 64×64 warps), as in the CUDA tile. ----
    WARPS: gl.constexpr = (BLOCK_M // WARP_M) * (BLOCK_N // WARP_N)
    acc_layout: gl.constexpr = gl.BlockedLayout([4, 4], [4, 8], [BLOCK_M // WARP_M, BLOCK_N // WARP_N], [1, 0])
    # a row of the A^T tile is read in acc_layout's transpose: each lane gets the A values of its rows
    a_frag: gl.constexpr = gl.BlockedLayout([4, 4], [8, 4], [BLOCK_N // WARP_N, BLOCK_M // WARP_M], [0, 1])
    # the copies: A transposed as it lands (a warp reads 32/A_K_LANES rows × A_K_LANES k), B 16 bytes per
    # lane
    a_copy: gl.constexpr = gl.BlockedLayout([1, 1], [A_K_LANES, 32 // A_K_LANES], [1, WARPS], [0, 1])
    B_LANES: gl.constexpr = min(32, BLOCK_N // 4)
    b_copy: gl.constexpr = gl.BlockedLayout([1, 4], [32 // B_LANES, B_LANES], [WARPS, 1], [1, 0])
    # Two allocations, for even and odd tiles, each of STAGES/2 stages: Triton's barrier analysis cannot
    # tell stage kt % STAGES from stage (kt-1) % STAGES of one allocation, and put two more barriers per tile
    # around the copies. Tiles of one parity are only copied while the other's are read.
    gl.static_assert(STAGES % 2 == 0, "STAGES is even: half the stages hold even tiles, half odd ones")
    plain: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])
    HALF: gl.constexpr = STAGES // 2
    a_layout: gl.constexpr = a_tile_layout(BLOCK_K, BLOCK_M, A_K_LANES)
    a_even = gl.allocate_shared_memory(gl.float32, [HALF, BLOCK_K, BLOCK_M], a_layout)
    b_even = gl.allocate_shared_memory(gl.float32, [HALF, BLOCK_K, BLOCK_N], plain)
    a_odd = gl.allocate_shared_memory(gl.float32, [HALF, BLOCK_K, BLOCK_M], a_layout)
    b_odd = gl.allocate_shared_memory(gl.float32, [HALF, BLOCK_K, BLOCK_N], plain)

    a_ks = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(1, a_copy))
    a_rows = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(0, a_copy))
    b_ks = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(1, b_copy))
    b_cols = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, b_copy))
    a_ptrs = a_ptr + a_ks[:, None] * stride_ak + a_rows[None, :] * stride_am
    b_ptrs = b_ptr + b_ks[:, None] * stride_bk + b_cols[None, :] * stride_bn
    copies = (a_ptrs, b_ptrs, a_ks, a_rows, b_ks, b_cols, M, N, K, stride_ak, stride_bk)

    # ---- 3. prologue: start copying the first STAGES - 1 tiles, wait for the first, read its first fragments ----
    for t in gl.static_range(STAGES - 1):
        if t % 2 == 0:
            copy_tile(a_even, b_even, t // 2, t * BLOCK_K, *copies, EVEN)
        else:
            copy_tile(a_odd, b_odd, t // 2, t * BLOCK_K, *copies, EVEN)
    async_copy.wait_group(STAGES - 2)
    block_barrier()
    a, b = load_frags(a_even, b_even, 0, 0, a_frag, acc_layout)

    # ---- 4. march along K, two tiles per trip (an even one, then an odd one; past K they are zeros):
    # per tile, start tile t+STAGES-1; before its last step, wait for tile t+1. A trip starts at step
    # TRIP_START of its even tile, not at a tile's start: with the barrier at the end of the loop body,
    # ptxas hoists all the FMAs of the last step above it, and after it the warps have nothing to issue
    # but the next fragments' reads and FMAs that wait for them. ----
    gl.static_assert(0 <= TRIP_START and TRIP_START < BLOCK_K, "TRIP_START is a step of a tile: 0 <= it < BLOCK_K")
    acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, acc_layout)
    acc, a, b = multiply_steps(acc, a, b, a_even, b_even, a_odd, b_odd, 0, copies, 0, TRIP_START, EVEN, BLOCK_K,
                               STAGES, a_frag, acc_layout)
    for t in range(0, gl.cdiv(K, BLOCK_K), 2):
        acc, a, b = multiply_steps(acc, a, b, a_even, b_even, a_odd, b_odd, t, copies, TRIP_START, BLOCK_K, EVEN,
                                   BLOCK_K, STAGES, a_frag, acc_layout)
        acc, a, b = multiply_steps(acc, a, b, a_odd, b_odd, a_even, b_even, t + 1, copies, 0, BLOCK_K, EVEN, BLOCK_K,
                                   STAGES, a_frag, acc_layout)
        acc, a, b = multiply_steps(acc, a, b, a_even, b_even, a_odd, b_odd, t + 2, copies, 0, TRIP_START, EVEN,
                                   BLOCK_K, STAGES, a_frag, acc_layout)

    # ---- 6. write back, a float4 per lane and row ----
    c_rows = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))
    c_cols = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))
    gl.store(c_ptr + c_rows[:, None] * stride_cm + c_cols[None, :] * stride_cn, acc,
             mask=(c_rows[:, None] < M) & (c_cols[None, :] < N))


def launch_gluon(a, b, c, tile: Tile, **knobs):
    """One Gluon candidate, bound to these operands (GPU only: Gluon has no interpreter)."""
    products, args = operand_args(a, b, c)
    M, N, K = args[:3]
    return prebound(
        gluon_warptile_kernel, (*tile.grid(M, N), products), a, b, c, *args,
        BLOCK_M=tile.BM, BLOCK_N=tile.BN, BLOCK_K=tile.BK, WARP_M=tile.WM, WARP_N=tile.WN, STAGES=tile.STAGES,
        GROUP_M=tile.GROUP_M, EVEN=M % tile.BM == 0 and N % tile.BN == 0 and K % tile.BK == 0,
        num_warps=tile.threads // 32, **(GLUON_KNOBS | knobs),
    )


def compile_gluon(tile: Tile, capability: tuple[int, int], even: bool = False, **knobs):
    """The Gluon candidate compiled ahead of time for a GPU that need not be here (sm_80: (8, 0)), as
    launched on 16-byte-aligned row-major operands (Triton specializes the unit strides and the
    divisibility of the rest by 16)."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    names = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn",
             "stride_cm", "stride_cn", "stride_ab", "stride_bb", "stride_cb")
    unit = {"stride_ak", "stride_bn", "stride_cn"}
    signature = {n: "*fp32" if n.endswith("_ptr") else "constexpr" if n in unit else "i32" for n in names}
    constants = {n: 1 for n in unit} | {"EVEN": even} | GLUON_KNOBS | knobs | dict(zip(
        ("BLOCK_M", "BLOCK_N", "BLOCK_K", "WARP_M", "WARP_N", "STAGES", "GROUP_M"), tile[:-1], strict=True))
    signature |= {n: "constexpr" for n in constants if n not in unit}
    divisible = {(i,): [["tt.divisibility", 16]] for i, n in enumerate(names) if n not in unit}
    source = GluonASTSource(gluon_warptile_kernel, signature, constants, divisible)
    target = GPUTarget("cuda", capability[0] * 10 + capability[1], 32)
    return triton.compile(source, target=target, options={"num_warps": tile.threads // 32})

TRITON_SEARCH = Search(
    __name__, "triton", TRITON_CONFIGS + GLUON_CANDIDATES, each(launch_triton_candidate),
    tile=lambda cand: (cand.BM, cand.BN) if isinstance(cand, Tile) else block_of(cand), describe=describe,
    family=lambda cand: describe(cand).split()[0], gpu_only=lambda cand: isinstance(cand, Tile))

VARIANT = Variant(
    __name__,
    title="autotuned + grouped order",
    dtypes=("fp32",),
    cuda=autotuned_cuda,
    triton=autotuned_triton,
    cuda_source=KERNELS,
    min_cc=(8, 0),  # cp.async
    searches=(CUDA_SEARCH, TRITON_SEARCH),
    # CUDA C: warptile_block's A_T, B_T; Triton: a transposed B would be read across its rows, copied instead
    # CUDA C nt has both operands K-major, both copied 4 bytes at a time: slower in place than copying B
    layouts={"cuda": ("nn", "tn", "tt"), "triton": ("nn", "tn")},
    batched=("cuda", "triton"),  # a grid axis walks the batch (CUDA C: y, then z)
)


def gluon_report(tile: Tile, arch: str, even: bool) -> PtxasReport:
    """ptxas's report on a Gluon candidate's PTX (registers, spills), as `compile_report` gives for a .cu;
    the ptxas Triton ships and compiled it with (its PTX may be newer than nvcc's ptxas reads)."""
    from triton.backends.nvidia.compiler import get_ptxas

    capability = (int(arch[3]), int(arch[4:]))
    start = time.perf_counter()
    compiled = compile_gluon(tile, capability, even)
    ptx = compiled.asm["ptx"]
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "gluon.ptx"
        source.write_text(ptx)
        ptxas = get_ptxas(capability[0] * 10 + capability[1]).path
        target = re.search(r"^\.target (\w+)", ptx, re.MULTILINE).group(1)  # sm_90a for sm_90: Triton's choice
        proc = subprocess.run([ptxas, f"-arch={target}", "-v", str(source), "-o", str(Path(tmp) / "gluon.cubin")],
                              capture_output=True, text=True, check=True)
    report = parse_ptxas(proc.stdout + proc.stderr, f"gluon {tile} EVEN={even}", arch,
                         time.perf_counter() - start, where="v11's Gluon kernel")
    # the shared memory is dynamic (Triton sizes it at launch), so it is Triton's figure, not ptxas's
    return dataclasses.replace(report, smem_bytes=compiled.metadata.shared)
