"""v16 wgmma tf32: fp32 matrices on Hopper's tensor cores at wgmma speed, by computing Cᵀ = Bᵀ·Aᵀ.

The idea. tf32 products (fp32 operands rounded to 10 mantissa bits, fp32 accumulation) are what cuBLAS
runs for fp32 when TF32 is allowed; v13 does them with Ampere's mma.sync, far below cuBLAS. wgmma has a
tf32 form, but a 32-bit operand in shared memory must be K-major (the transpose bits exist for 16-bit
types only); its *first* operand may come from registers, in any layout. So the operand stored with rows
of K goes to wgmma from shared memory and the other is read into registers (and rounded there): for nn,
Cᵀ = Bᵀ·Aᵀ (A's rows are K; Bᵀ from B's N-major tile; the accumulators hold Cᵀ, stored transposed); nt
the same with Bᵀ from B's K-major tile; tt is nn's mirror, C = A·B with A in registers and B (stored N×K)
from shared memory. tn has no K-major operand: the shared layer copies one, the smaller (A at equal sizes: nn).

The rest is v15's machinery (producer and consumer warpgroups, setmaxnreg, the full/empty ring, the
grouped persistent order over every product of a batch, the TMA-store epilogue): each consumer warpgroup
multiplies 64 rows of the register operand by BS (256, or 128 or 64 for small products) of the other
with m64nBSk8. The shared search times the candidates at the first call per device, shape and layout.

CUDA C and Triton side by side:

| concept | CUDA C (kernels_cuda/v16_wgmma_tf32.cu) | Triton (below) |
|---|---|---|
| Cᵀ = Bᵀ·Aᵀ (nn, nt) | accumulators indexed as Cᵀ, stored transposed | `tl.dot(round_to_tf32(b.T), a.T)` |
| C = A·B (tt) | the same kernel, roles swapped (A_T), stored as is | nn's kernel on (Bᵀ, Aᵀ), through Cᵀ's strides |
| register operand | 4 scalar loads per k8 step, `wgmma ... {a0..a3}, desc` | computed (rounded): fed from registers |
| tf32 rounding | `cvt.rna.tf32.f32` per fragment element | integer add and mask (nearest, ties away) |
| K-major operand | TMA boxes of 64 stored rows × 32 k, K-major descriptor | `desc.load`, `.T` is a view |
| transposed operand | boxes of the stored matrix (A_T, B_T) | `.T` of the box (v14's `operand_box`) |
| batch | 3-D tensor maps; tile t is product t / tiles per product | 3-D descriptors, the same walk |
| pipeline, roles | v15's producer/consumers, by hand | `num_stages`, as v14 |
| epilogue | through swizzled staging, TMA store (N % 4 == 0) | `tl.store`, transposed pointers for Cᵀ |
| search | the rung's candidates, timed by the shared search | the same, over its configs |

What Triton does for you, and what it does not: it reads a transposed or batched operand in place from
descriptors (a `.T` of the box), and given `tl.dot` on fp32 with tf32 precision it emits wgmma. But when
the operand it reads from shared memory is not K-major (`tl.dot(a, b)` on nn, or any form of tn), it
copies that tile through registers into a second, K-major buffer every k-step and waits for each wgmma:
a fraction of cuBLAS's speed. Which operand goes where is this rung's choice, in both languages.

A trap on the CUDA side: wgmma reads a register operand *asynchronously*, until the wgmma.wait_group
that retires it. So each k8 step has its own fragment registers and its own group, two groups stay in
flight, and a step's registers are loaded again only after the wait that retired their last reader.

Constraints: tf32 on sm_90a. nn, nt, tt in place, tn with A copied in the timed call. Batches in one launch.

What it should reach: tf32 wgmma runs at half the 16-bit rate, so about v15's fraction of cuBLAS in every
native layout, with an error a little above cuBLAS's (only the register operand is rounded; the other is
left to the tensor core, which seems to truncate it). What limits it is not pinned down: removing the
fragment loads' 2-way bank conflicts bought nothing (notes); there are no clusters.

Its story (measurements, what was tried): docs/notes/v16.md.
"""

from typing import NamedTuple

import numpy as np
import triton
import triton.language as tl

from .core.cuda_c import CudaSource, bind
from .core.registry import Variant, layout_of
from .core.search import Search
from .core.triton_util import block_of, describe_config
from .v11_autotuned import grouped_tile
from .v14_wgmma_tma import BARRIER_BYTES, bind_configs, operand_box, sm_count, zero_product
from .v15_warp_specialized import C_STAGE_BYTES, c_tensor_map, tma_problem

BM, BN, BK = 256, 128, 32  # the first candidate's tile for nn and nt (tt's is its transpose)
BR = 128  # the register operand's width per tile: two consumer warpgroups × 64 rows
THREADS = 384  # a producer warpgroup and two consumer warpgroups
IN_PLACE = ("nn", "nt", "tt")  # tn: neither operand is K-major as stored; the shared layer copies one
TRITON_IN_PLACE = IN_PLACE


class Tile(NamedTuple):
    BS: int  # the tile's width along the shared-memory operand (wgmma's n): BM in nn and nt, BN in tt
    STAGES: int
    GROUP_M: int

    def kernel(self, layout: str = "nn") -> str:
        """The kernel for this layout ("nn", "nt" or "tt": which operands are transposed)."""
        a_t, b_t = (int(op == "t") for op in layout)
        return f"wgmma_tf32<{self.BS},{self.STAGES},{self.GROUP_M},{a_t},{b_t}>"

    def c_tile(self, layout: str = "nn") -> tuple[int, int]:
        """The BM×BN tile of C a CTA computes: S along C's rows (nn, nt) or columns (tt)."""
        return (BR, self.BS) if layout[0] == "t" else (self.BS, BR)

    def __str__(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self._asdict().items())


CUDA_CANDIDATES = (
    Tile(256, 4, 8),
    Tile(256, 3, 8),
    Tile(256, 4, 16),
    Tile(128, 6, 8),  # narrower tiles, for products (or batches of them) too small to fill every SM
    Tile(64, 8, 8),
)
KERNELS = CudaSource(__name__, [t.kernel(lay) for lay in IN_PLACE for t in CUDA_CANDIDATES], arch="sm_90a")


# ---- CUDA C launcher ----------------------------------------------------------------------------------


def operand_boxes(a_t: bool, b_t: bool) -> tuple[tuple[int, int], tuple[int, int]]:
    """The TMA boxes (columns, rows) of the stored A and B: a box row is 32 floats (128 bytes), of k where
    the stored rows are K (A, a transposed B: 64 rows per box), else of M or N (32 k rows per box)."""
    return ((32, BK) if a_t else (BK, 64)), ((BK, 64) if b_t else (32, BK))


def shared_bytes(tile: Tile) -> int:
    """A candidate's dynamic shared memory: its ring of S and R tiles, C's staging buffers, barriers."""
    return tile.STAGES * (tile.BS + BR) * BK * 4 + C_STAGE_BYTES + BARRIER_BYTES


def prepare_cuda(a, b, c, tiles=CUDA_CANDIDATES):
    """(refresh, {tile: launch}) for these candidates, sharing one problem's tensor maps."""
    problem, refresh = tma_problem(a, b, c, boxes=operand_boxes)
    if problem.layout not in IN_PLACE:
        raise ValueError(f"v16's CUDA C kernel reads {', '.join(IN_PLACE)} in place, not {problem.layout}: "
                         "copy A to row-major first")
    c_map, c_by_tma = c_tensor_map(c, (32, 64), problem.a_map)  # box: 32 columns × 64 rows, one of a round's two
    sizes = (problem.M, problem.N, problem.K, problem.products, problem.a_step, problem.b_step)
    args = (problem.a_map, problem.b_map, c_map, c, *map(np.int32, sizes), c_by_tma)

    def launch(tile):
        bm, bn = tile.c_tile(problem.layout)
        tiles_all = problem.products * triton.cdiv(problem.M, bm) * triton.cdiv(problem.N, bn)
        grid = (min(sm_count(c.device), tiles_all),)
        return bind(KERNELS, tile.kernel(problem.layout), grid, (THREADS,), args, shared_mem=shared_bytes(tile))

    return refresh, {tile: launch(tile) for tile in tiles}


CUDA_SEARCH = Search(__name__, "cuda", CUDA_CANDIDATES, prepare_cuda, tile=lambda tile: tile.c_tile())


def wgmma_tf32_cuda(a, b, c):
    if a.shape[-1] == 0:
        return zero_product(c)
    return CUDA_SEARCH.tuned(a, b, c)


# ---- Triton kernel and launcher -----------------------------------------------------------------------


@triton.jit
def round_to_tf32(x):
    """fp32 -> the nearest tf32 (ties away from zero), as cvt.rna does: add half of the 13 dropped bits'
    weight to the magnitude, then clear them."""
    bits = x.to(tl.uint32, bitcast=True)
    return ((bits + 0x1000) & 0xFFFFE000).to(tl.float32, bitcast=True)


# stride_cm is not specialised: when it is 1 (N = 1) Triton would make C's rows the contiguous axis of the
# transposed store and convert the 128 KB accumulator layout through shared memory, past the limit.
@triton.jit(do_not_specialize=["stride_cm"])
def wgmma_tf32_kernel(
    a_desc, b_desc, c_ptr, M, N, K, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    B_T: tl.constexpr = False, A_3D: tl.constexpr = False, B_3D: tl.constexpr = False, products=1, stride_cb=0,
    CM_UNIT: tl.constexpr = False,
):
    # ---- 1. this program's tiles: pid, pid + programs, ..., over every product of a batch, each mapped in
    #         grouped order ----
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    tiles = grid_m * grid_n
    for tile in range(tl.program_id(0), products * tiles, tl.num_programs(0)):
        product = tile // tiles
        pid_m, pid_n = grouped_tile(tile % tiles, grid_m, grid_n, GROUP_M)
        acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)  # Cᵀ
        for kb in range(tl.cdiv(K, BLOCK_K)):
            # ---- 2. TMA: a box of A and one of B (zeros outside; num_stages of them in flight), of the
            #         matrix a transposed operand views (.T of the box), of this product's matrix in a batch ----
            a = operand_box(a_desc, product, pid_m * BLOCK_M, kb * BLOCK_K, BLOCK_M, BLOCK_K, False, A_3D)
            b = operand_box(b_desc, product, kb * BLOCK_K, pid_n * BLOCK_N, BLOCK_K, BLOCK_N, B_T, B_3D)
            # ---- 3. the operand stored with rows of K from shared memory (K-major), the other rounded in
            #         registers: wgmma's two operands ----
            acc = tl.dot(round_to_tf32(b.T), a.T, acc, input_precision="tf32")
        # ---- 4. write back (transposed for Cᵀ), masked at the edges ----
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        c_base = c_ptr + product.to(tl.int64) * stride_cb
        if CM_UNIT:  # tt: C written through Cᵀ's strides, whose unit one Triton is told of (vector stores)
            c_ptrs = c_base + offs_n[:, None] * stride_cn + offs_m[None, :]
        else:
            c_ptrs = c_base + offs_n[:, None] * stride_cn + offs_m[None, :] * stride_cm
        tl.store(c_ptrs, acc, mask=(offs_n[:, None] < N) & (offs_m[None, :] < M))


def tf32_config(bm, bn, bk, warps, stages, group_m=8):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group_m},
                         num_warps=warps, num_stages=stages)


TRITON_CONFIGS = (
    tf32_config(256, 128, 32, 8, 3),
    tf32_config(256, 128, 32, 8, 4),
    tf32_config(128, 128, 32, 4, 4),
    tf32_config(128, 128, 32, 8, 3),
    tf32_config(64, 64, 32, 4, 4),  # for products (or batches of them) too small to fill every SM
)


def prepare_triton(a, b, c, configs):
    """(refresh, {config: launch}). tt runs as nn on the stored matrices, Cᵀ = Bᵀ·Aᵀ: Bᵀ's stored rows are K
    (A's place, from shared memory), Aᵀ is stored row-major (B's place, rounded in registers), and the
    kernel's transposed write, given Cᵀ's strides, writes C as it is (CM_UNIT: C's unit stride)."""
    if layout_of(a) == "t":
        return bind_configs(b.mT, a.mT, c.mT, configs, kernel=wgmma_tf32_kernel,
                            extra=lambda config: {"CM_UNIT": True})
    return bind_configs(a, b, c, configs, kernel=wgmma_tf32_kernel)


TRITON_SEARCH = Search(__name__, "triton", TRITON_CONFIGS, prepare_triton, tile=block_of, describe=describe_config)


def wgmma_tf32_triton(a, b, c):
    if a.shape[-1] == 0:
        return zero_product(c)
    return TRITON_SEARCH.tuned(a, b, c)


VARIANT = Variant(
    __name__,
    title="wgmma tf32 (Cᵀ = Bᵀ·Aᵀ)",
    dtypes=("tf32",),
    cuda=wgmma_tf32_cuda,
    triton=wgmma_tf32_triton,
    cuda_source=KERNELS,
    min_cc=(9, 0),
    searches=(CUDA_SEARCH, TRITON_SEARCH),
    layouts={"cuda": IN_PLACE, "triton": TRITON_IN_PLACE},  # the operand stored with rows of K from shared memory
    batched=("cuda", "triton"),  # 3-D tensor maps; the persistent tile loop walks every product's tiles
)
