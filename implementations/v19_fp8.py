"""v19 fp8: e4m3 operands with scales on Hopper's tensor cores, twice the 16-bit rate.

The idea. wgmma multiplies fp8 (e4m3: 4 exponent bits, 3 mantissa bits, at most 448) at twice the rate of
bf16, and an fp8 operand is half the bytes. A model's tensors do not fit e4m3's range as they are, so each
is stored divided by a scale (s_A, s_B, fp32: one per tensor, or one per row of A and column of B) and the
product is rescaled in the epilogue: C = s_A·s_B·(A @ B) (C_ij = s_A[i]·s_B[j]·(A @ B)_ij), written in bf16,
as torch._scaled_mm computes it. Only three things change
from v15: a 128-byte row of a tile holds 128 elements of k instead of 64, so the same boxes, swizzle and
shared memory carry twice the k per stage; a k-step (32 bytes) is m64nNk32 instead of m64nNk16; and fp8
wgmma has no transpose bits, so both operands must be K-major in shared memory: A row-major and B stored
N×K, the nt layout (x @ W.T of an nn.Linear weight). Other layouts are copied into nt inside the timed call.

CUDA C and Triton side by side:

| concept | CUDA C (kernels_cuda/v19_fp8.cu: v15's kernel) | Triton (v14's `tma_persistent_kernel`) |
|---|---|---|
| operand type | `wgmma ... .e4m3.e4m3`, TMA as bytes | `float8e4nv` tensors, `tl.dot` |
| k per stage | BK = 128: 128-byte rows, as bf16's 64 | BLOCK_K = 128 in the configs |
| k-step | four m64nNk32 per k-block | chosen by the compiler |
| K-major B | a box of the stored N×K, no transpose bit | `desc.load(...).T` of the N×K box (B_T) |
| scales | s_A·s_B read once, or each thread's rows' and | `SCALES`: `acc *= s_A * s_B`, or the outer |
|  | columns' per tile, × accumulators (apply_scales) | product of two vector loads (apply_scales) |
| output | stmatrix of bf16 + TMA store | `acc.to(bf16)`, TMA stores |
| accumulation | the tensor core's own (about 14 bits kept | the same: Triton's default on sm_90 |
|  | per k32 step: "fast accumulation") | (`max_num_imprecise_acc` not set) |
| search | v15's candidates, on fp8 kernels | its configs, BLOCK_K = 128; v15's `split_k_kernel` |
| few rows | v15's swapped tiles, Cᵀ = Bᵀ·Aᵀ (m64n8k32...) | v15's swapped `split_k_kernel` configs |

What Triton does for you: the fp8 dot is `tl.dot` on fp8 tensors, and the transposed view of the N×K
box is K-major without a word; in CUDA C the kernel must know that fp8 wgmma has no transpose bits (a
row-major B would need a transpose through shared memory), and which k-step instruction the type takes.

Accuracy. What fp8 costs comes first from storing the operands: e4m3 keeps 3 mantissa bits, so an
operand rounded to it errs by up to 2^-4 relative, sixteen times bf16's 2^-8, and a product of rounded
operands by as much more (scripts/fp8_quantization.py). The kernel then adds no error of that size: the
products of two e4m3 values are exact in fp32, and Hopper's fp8 tensor cores add each k32 step to the
accumulator keeping about 14 bits (DeepSeek-V3's report, section 3.3.2; the bound in core/check.py uses
that; the baseline runs the same way, use_fast_accum=True). Promoting the sums to fp32 registers every
few k-steps (DeepGEMM does) would cost registers and adds: not done.

Constraints: e4m3 operands; fp32 scales as one tensor, (s_A, s_B) or (fp8-rowwise, single products only)
s_A's M values then s_B's N; C bf16; nt in place, other layouts copied; batches in one launch (per-tensor
scales); swapped tiles (Cᵀ) for at most 32 rows; no epilogue. sm_90a.

What it should reach: twice bf16's speed where the tensor cores bound it, and at least cuBLASLt's fp8
GEMM (torch._scaled_mm) on the same inputs. Its story: docs/notes/v19.md.
"""

import torch

from .core.check import rowwise
from .core.cuda_c import CudaSource
from .core.registry import Variant
from .core.search import Search
from .core.triton_util import block_of, describe_config
from .v14_wgmma_tma import zero_product
from .v15_warp_specialized import CUDA_CANDIDATES, CUDA_SPLIT_CANDIDATES, CUDA_SWAP_CANDIDATES, Tile, config_reads
from .v15_warp_specialized import few_tiles, swapped_candidates, tma_config
from .v15_warp_specialized import prepare_cuda as prepare_v15_cuda
from .v15_warp_specialized import prepare_triton as prepare_v15_triton

FP8 = torch.float8_e4m3fn
LAYOUTS = ("nt",)  # both operands K-major: fp8 wgmma has no transpose bits
KERNELS = CudaSource(__name__, [t.kernel(FP8, t.kernel_layout("nt"))
                                for t in CUDA_CANDIDATES + CUDA_SPLIT_CANDIDATES + CUDA_SWAP_CANDIDATES],
                     arch="sm_90a")


def fp8_boxes(a_t: bool, b_t: bool) -> tuple[tuple[int, int], tuple[int, int]]:
    """The TMA boxes (columns, rows) of A and of the stored N×K B: 128 e4m3 of k (128 bytes) × 64 rows."""
    return (128, 64), (128, 64)


# ---- CUDA C launcher: v15's candidates on the fp8 kernels ------------------------------------------------


def prepare_cuda(a, b, c, tiles=CUDA_CANDIDATES, scales=None):
    """(refresh, {tile: launch}) for these candidates on one problem's tensor maps (the swapped ones on Cᵀ's),
    scaling by `scales`."""
    return prepare_v15_cuda(a, b, c, tiles, source=KERNELS, boxes=fp8_boxes, scales=scales)


CUDA_SEARCH = Search(__name__, "cuda", CUDA_CANDIDATES + CUDA_SPLIT_CANDIDATES + CUDA_SWAP_CANDIDATES, prepare_cuda,
                     tile=lambda tile: (tile.BM, tile.BN), reads=Tile.reads)


def fp8_cuda(a, b, c, scales):
    if a.shape[-1] == 0:
        return zero_product(c)
    split = few_tiles(a.shape[-2], b.shape[-1], c.shape[0] if c.dim() == 3 else 1, a.device)
    return CUDA_SEARCH.tuned(a, b, c, (CUDA_CANDIDATES + CUDA_SPLIT_CANDIDATES if split else CUDA_CANDIDATES)
                             + swapped_candidates(CUDA_SWAP_CANDIDATES, a), scales=scales)


# ---- Triton: v14's persistent kernel on fp8 operands, SCALES ---------------------------------------------

TRITON_CONFIGS = (
    tma_config(128, 256, 128, 8, 3, FLATTEN=True),
    tma_config(128, 256, 128, 8, 4, FLATTEN=True),
    tma_config(256, 128, 128, 8, 3, FLATTEN=True),
    tma_config(128, 128, 128, 8, 4, FLATTEN=True),
    tma_config(128, 128, 128, 4, 4, FLATTEN=True),
    tma_config(64, 128, 128, 4, 4, FLATTEN=True),  # 64-row tiles: products (or batches of them) of few rows
    tma_config(64, 64, 128, 4, 6, FLATTEN=True),
    tma_config(128, 64, 128, 4, 6, FLATTEN=True),  # 128 rows once: B read once where M is about 128 (skinny)
)
SPLIT_K_CONFIGS = (  # v15's split-K kernel, scaled: products of fewer tiles than SMs (decode)
    tma_config(64, 128, 128, 4, 6, SPLIT_K=4),
    tma_config(64, 128, 128, 4, 4, SPLIT_K=2),
)
SWAP_CONFIGS = (  # the same kernel on Cᵀ = Bᵀ·Aᵀ, as v15's: 64 columns of C by BLOCK_N of its few rows (decode)
    tma_config(64, 16, 128, 4, 6, SPLIT_K=2, SWAP_AB=True),
    tma_config(64, 16, 128, 4, 6, SPLIT_K=4, SWAP_AB=True),
    tma_config(64, 32, 128, 4, 6, SPLIT_K=2, SWAP_AB=True),
    tma_config(128, 16, 128, 4, 6, SPLIT_K=1, SWAP_AB=True),  # N of tens of thousands: enough programs unsplit
)


def prepare_triton(a, b, c, configs, scales=None):
    """(refresh, {config: launch}): v15's, the persistent kernel's configs, the split-K ones and the swapped ones,
    every launch scaling by `scales`."""
    scaled = {"scales_ptr": scales, "SCALES": "rowwise" if rowwise(scales) else "tensor"}
    return prepare_v15_triton(a, b, c, configs, flags=scaled)


TRITON_SEARCH = Search(__name__, "triton", TRITON_CONFIGS + SPLIT_K_CONFIGS + SWAP_CONFIGS, prepare_triton,
                       tile=block_of, describe=describe_config, reads=config_reads)


def fp8_triton(a, b, c, scales):
    if a.shape[-1] == 0:
        return zero_product(c)
    split = few_tiles(a.shape[-2], b.shape[-1], c.shape[0] if c.dim() == 3 else 1, a.device)
    return TRITON_SEARCH.tuned(a, b, c, TRITON_CONFIGS + (SPLIT_K_CONFIGS if split else ())
                               + swapped_candidates(SWAP_CONFIGS, a, narrowest=16), scales=scales)


VARIANT = Variant(
    __name__,
    title="fp8 e4m3, scaled per tensor or per row and column",
    dtypes=("fp8", "fp8-rowwise"),
    cuda=fp8_cuda,
    triton=fp8_triton,
    cuda_source=KERNELS,
    min_cc=(9, 0),
    searches=(CUDA_SEARCH, TRITON_SEARCH),
    layouts={"cuda": LAYOUTS, "triton": LAYOUTS},
    batched=("cuda", "triton"),  # 3-D tensor maps and descriptors; the persistent tile loop walks every product
)
