"""v16 wgmma tf32: fp32 matrices on Hopper's tensor cores at wgmma speed, by computing Cᵀ = Bᵀ·Aᵀ.

The idea. tf32 products (fp32 operands rounded to 10 mantissa bits, fp32 accumulation) are what cuBLAS
runs for fp32 when TF32 is allowed. v13 does them with Ampere's mma.sync at a quarter of cuBLAS's speed.
wgmma has a tf32 form, with a catch: a 32-bit operand in shared memory must be K-major (the transpose
bits of the instruction exist for 16-bit types only). Row-major A is K-major; row-major B is not.
- Transposing B first costs a pass over B (2·K·N·4 bytes, about 0.05 ms at 4096² on an H100 with a
  good transpose, 0.14 ms with torch's) on every call.
- wgmma's *first* operand may come from registers instead, in any layout the threads can load. So
  this rung computes Cᵀ = Bᵀ·Aᵀ: the first operand is Bᵀ, read from the swizzled B tile into the
  documented fragment layout (and rounded to tf32 there); the second is Aᵀ, which must be K-major: A's
  rows are. The accumulators hold Cᵀ and are stored transposed.
The rest is v15's machinery (producer and consumer warpgroups, setmaxnreg, the full/empty ring, the
grouped persistent order) on a 256×128 tile: each consumer warpgroup computes 64 columns of C for 256
rows with m64n256k8.

CUDA C and Triton side by side:

| concept | CUDA C (kernels_cuda/v16_wgmma_tf32.cu) | Triton (below) |
|---|---|---|
| Cᵀ = Bᵀ·Aᵀ | accumulators indexed as Cᵀ, stored transposed | `tl.dot(round_to_tf32(b.T), a.T)`, stored |
|  |  | through transposed pointers |
| Bᵀ in registers | four scalar loads per k8 step from the | the operand is computed (rounded), so the |
|  | swizzled tile, `wgmma ... {a0..a3}, b-desc` | compiler feeds wgmma from registers |
| tf32 rounding | `cvt.rna.tf32.f32` on each fragment element | integer add and mask (round to nearest, |
|  |  | ties away: what cvt.rna computes) |
| Aᵀ from shared memory | TMA box 32 k × 256 rows, K-major descriptor | `a_desc.load`, `.T` is a view |
| pipeline, roles | v15's producer/consumers, by hand | `num_stages`, as v14 |
| epilogue | transposed into swizzled shared memory, TMA store | `tl.store` through transposed pointers |
| search | CUDA_CANDIDATES, `search_fastest` (v11) | `triton.autotune` over TRITON_CONFIGS |

What Triton does for you, and what it does not: given `tl.dot(a, b)` on fp32 with tf32 precision it
also emits wgmma, but it meets B's N-major tile by copying it through registers into a second, K-major
shared-memory buffer every k-step and waiting for each wgmma before the next: 19-21% of cuBLAS at
4096³ on an H100 (v14's kernel on fp32, scripts/probe_hopper.py). The Cᵀ form is this rung's, in both
languages. Transposing B with torch first would cost 0.142 ms per call at 4096², 39% of cuBLAS's time.

A trap on the CUDA side, and what it costs: wgmma reads a register operand *asynchronously*, until the
wgmma.wait_group that retires it, but the compiler's liveness ends at the instruction. With v15's
"wait for the previous k-block only" (wait_group 1), ptxas loaded the next fragments into the very
registers the running wgmmas were reading (SASS: LDS into R152-R167 with one group in flight): wrong
results, different from run to run. Keeping the old fragments alive with an empty asm after the wait
makes ptxas serialise every wgmma instead (warning C7513). So each k-block waits for its own wgmmas
(wait_group 0) before the next fragments are loaded; the other consumer warpgroup's wgmmas keep the
tensor cores busy meanwhile. Triton's pipeliner handles this itself.

The epilogue is v15's: C goes through a swizzled staging buffer, transposed on the way in, and out
by TMA stores (from registers when N % 4 != 0).

What it should reach: tf32 wgmma runs at half the 16-bit rate, so about v15's fraction of cuBLAS.
Measured at 4096³ (H100 80GB HBM3, same run as cuBLAS TF32, docs/results/h100_tc_tf32.md): CUDA C
92.7%, Triton 91.7% (91.4% and 91.4%, 92.2% and 91.6%, 92.8% and 90.8% in earlier runs). Before the TMA-store epilogue
the CUDA side was at 91.1% (Triton 89.3% in that run, 90.7-92.6% in others); with CUDA-graph timing it
was 99.5% and Triton 93.9%. Error 4.7e-4 against cuBLAS's 2.9e-4, consistent with A being truncated to
tf32 by the tensor core (only Bᵀ is rounded here) where cuBLAS rounds both. What limits it: the wait
per k-block, scalar fragment loads with 2-way bank conflicts, and no clusters (v15's pairs share B;
here a pair would share A).
"""

from typing import NamedTuple

import numpy as np
import triton
import triton.language as tl

from .core.cuda_c import CudaSource, bind, tensor_map_2d
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
    a_map = tensor_map_2d(a_t, (BK, BM))  # box: 32 k × 256 rows (128-byte rows)
    b_map = tensor_map_2d(b_t, (32, BK))  # box: 32 columns × 32 k; four per stage
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
