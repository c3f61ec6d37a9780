"""v16 wgmma tf32: fp32 matrices on Hopper's tensor cores at wgmma speed, by computing Cᵀ = Bᵀ·Aᵀ.

The idea. tf32 products (fp32 operands rounded to 10 mantissa bits, fp32 accumulation) are what cuBLAS
runs for fp32 when TF32 is allowed; v13 does them with Ampere's mma.sync, far below cuBLAS. wgmma has a
tf32 form, but a 32-bit operand in shared memory must be K-major (the transpose bits exist for 16-bit
types only): row-major A is, row-major B is not, and transposing B would cost a pass over it
(2·K·N·4 bytes) on every call. wgmma's *first* operand may come from registers, in any layout, so this
rung computes Cᵀ = Bᵀ·Aᵀ: Bᵀ is read from the swizzled B tile into the documented fragment layout (and
rounded to tf32 there), Aᵀ is K-major because A's rows are, and the accumulators hold Cᵀ, stored
transposed.

The rest is v15's machinery (producer and consumer warpgroups, setmaxnreg, the
full/empty ring, the grouped persistent order, the TMA-store epilogue) on a 256×128 tile: each
consumer warpgroup computes 64 columns of C for 256 rows with m64n256k8. The rung declares a few
candidates, and the shared search times them at the first call per device and shape.

CUDA C and Triton side by side:

| concept | CUDA C (kernels_cuda/v16_wgmma_tf32.cu) | Triton (below) |
|---|---|---|
| Cᵀ = Bᵀ·Aᵀ | accumulators indexed as Cᵀ, stored transposed | `tl.dot(round_to_tf32(b.T), a.T)` |
| Bᵀ in registers | 4 scalar loads per k8 step, `wgmma ... {a0..a3}, b-desc` | computed (rounded): fed from registers |
| tf32 rounding | `cvt.rna.tf32.f32` per fragment element | integer add and mask (nearest, ties away) |
| Aᵀ from shared memory | TMA box 32 k × 256 rows, K-major descriptor | `a_desc.load`, `.T` is a view |
| pipeline, roles | v15's producer/consumers, by hand | `num_stages`, as v14 |
| epilogue | transposed into swizzled staging, TMA store (N % 4 == 0) | `tl.store`, transposed pointers |
| search | the rung's candidates, timed by the shared search | the same; Triton's own `triton.autotune` would do it, |
|  |  | the suite searches both languages with one timer |

What Triton does for you, and what it does not: given `tl.dot(a, b)` on fp32 with tf32 precision it
also emits wgmma, but it meets B's N-major tile by copying it through registers into a second, K-major
shared-memory buffer every k-step and waiting for each wgmma before the next: a fraction of cuBLAS's
speed. The Cᵀ form is this rung's, in both languages.

A trap on the CUDA side: wgmma reads a register operand *asynchronously*, until the wgmma.wait_group
that retires it, but the compiler's liveness ends at the instruction. Waiting only for the previous
k-block (v15's wait_group 1) lets ptxas load the next fragments into registers the running wgmmas
still read: wrong results. So each k-block waits for its own wgmmas (wait_group 0); the other consumer
warpgroup's wgmmas keep the tensor cores busy meanwhile. Triton's pipeliner handles this itself.

Constraints: tf32 (fp32 in and out) on sm_90a.

What it should reach: tf32 wgmma runs at half the 16-bit rate, so about v15's fraction of cuBLAS, with
an error a little above cuBLAS's (only Bᵀ is rounded; A is left to the tensor core, which seems to
truncate it). What limits it: the wait per k-block, scalar fragment loads with 2-way bank conflicts,
no clusters (a pair would share A).

Its story (measurements, what was tried): docs/notes/v16.md.
"""

from typing import NamedTuple

import numpy as np
import triton
import triton.language as tl

from .core.cuda_c import CudaSource, bind, tensor_map
from .core.registry import Variant
from .core.search import Search
from .core.triton_util import block_of, describe_config
from .v11_autotuned import grouped_tile
from .v14_wgmma_tma import BARRIER_BYTES, bind_configs, sm_count, tma_operands, zero_product
from .v15_warp_specialized import C_STAGE_BYTES, c_tensor_map

BM, BN, BK = 256, 128, 32
THREADS = 384  # a producer warpgroup and two consumer warpgroups


class Tile(NamedTuple):
    STAGES: int
    GROUP_M: int

    def kernel(self) -> str:
        return f"wgmma_tf32<{self.STAGES},{self.GROUP_M}>"

    def __str__(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self._asdict().items())


CUDA_CANDIDATES = (Tile(4, 8), Tile(3, 8), Tile(4, 16))
KERNELS = CudaSource(__name__, [t.kernel() for t in CUDA_CANDIDATES], arch="sm_90a")


# ---- CUDA C launcher ----------------------------------------------------------------------------------


def prepare_cuda(a, b, c, tiles=CUDA_CANDIDATES):
    """(refresh, {tile: launch}) for these candidates, sharing one set of tensor maps."""
    M, K = a.shape
    N = b.shape[1]
    a_t, b_t, refresh = tma_operands(a, b)
    a_map = tensor_map(a_t, (BK, BM))  # box: 32 k × 256 rows (128-byte rows)
    b_map = tensor_map(b_t, (32, BK))  # box: 32 columns × 32 k; four per stage
    c_map, c_by_tma = c_tensor_map(c, (32, 64), a_map)  # box: 32 columns × 64 rows, one of a round's two
    grid = (min(sm_count(a.device), triton.cdiv(M, BM) * triton.cdiv(N, BN)),)
    args = (a_map, b_map, c_map, c, np.int32(M), np.int32(N), np.int32(K), c_by_tma)
    smem = {t: t.STAGES * (BM * BK + BK * BN) * 4 + C_STAGE_BYTES + BARRIER_BYTES for t in tiles}
    return refresh, {t: bind(KERNELS, t.kernel(), grid, (THREADS,), args, shared_mem=smem[t]) for t in tiles}


CUDA_SEARCH = Search(__name__, "cuda", CUDA_CANDIDATES, prepare_cuda, tile=lambda _: (BM, BN))


def wgmma_tf32_cuda(a, b, c):
    if a.shape[1] == 0:
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
):
    # ---- 1. this program's tiles: pid, pid + programs, ..., each mapped in grouped order ----
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    for tile in range(tl.program_id(0), grid_m * grid_n, tl.num_programs(0)):
        pid_m, pid_n = grouped_tile(tile, grid_m, grid_n, GROUP_M)
        acc_t = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)  # Cᵀ
        for kb in range(tl.cdiv(K, BLOCK_K)):
            # ---- 2. TMA: a box of A and one of B (zeros outside; num_stages of them in flight) ----
            a = a_desc.load([pid_m * BLOCK_M, kb * BLOCK_K])
            b = b_desc.load([kb * BLOCK_K, pid_n * BLOCK_N])
            # ---- 3. Bᵀ rounded in registers, Aᵀ (K-major) from shared memory: wgmma's two operands ----
            acc_t = tl.dot(round_to_tf32(b.T), a.T, acc_t, input_precision="tf32")
        # ---- 4. write back, transposed, masked at the edges ----
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        c_ptrs = c_ptr + offs_n[:, None] * stride_cn + offs_m[None, :] * stride_cm
        tl.store(c_ptrs, acc_t, mask=(offs_n[:, None] < N) & (offs_m[None, :] < M))


def tf32_config(bm, bn, bk, warps, stages, group_m=8):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group_m},
                         num_warps=warps, num_stages=stages)


TRITON_CONFIGS = (
    tf32_config(256, 128, 32, 8, 3),
    tf32_config(256, 128, 32, 8, 4),
    tf32_config(128, 128, 32, 4, 4),
    tf32_config(128, 128, 32, 8, 3),
)


def prepare_triton(a, b, c, configs):
    return bind_configs(a, b, c, configs, kernel=wgmma_tf32_kernel)


TRITON_SEARCH = Search(__name__, "triton", TRITON_CONFIGS, prepare_triton, tile=block_of, describe=describe_config)


def wgmma_tf32_triton(a, b, c):
    if a.shape[1] == 0:
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
)
