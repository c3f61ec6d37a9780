"""v13 mma.sync: tensor cores through PTX, with ldmatrix, a cp.async pipeline and swizzled shared memory.

The idea. v12's WMMA hides three things that decide speed: where each fragment element lives, how
fragments get from shared memory into registers, and whether copies overlap the math. This rung takes
all three into its own hands, as cuBLAS and CUTLASS did on Ampere:
- `mma.sync.m16n8k16` (fp16/bf16) or `m16n8k8` (tf32), whose fragment layouts are documented, so C
  is stored straight from the accumulator registers (no staging through shared memory);
- `ldmatrix` loads four 8×8 fragments per instruction, `.trans` transposes B's row-major blocks;
- XOR-swizzled tiles: the eight 16-byte rows one ldmatrix reads land in eight different bank groups
  (v08 padded; swizzling costs no memory and keeps 16-byte chunks whole for cp.async);
- a STAGES-deep cp.async pipeline (v09-v10's idea), and v11's grouped block order.
It also adds the tf32 form: fp32 operands rounded to tf32 (10 explicit mantissa bits, `cvt.rna`),
products accumulated in fp32. That is what cuBLAS does for fp32 when TF32 is allowed.

CUDA C and Triton side by side:

| concept | CUDA C (kernels_cuda/v13_mma_sync.cu) | Triton (below: v12's `dot_kernel`) |
|---|---|---|
| the product | `mma.sync.aligned.m16n8k16` / `m16n8k8.tf32` | `tl.dot`, input_precision="tf32" for fp32 |
| fragments | `ldmatrix.x4` (A), `ldmatrix.x4.trans` (B) | chosen by the compiler |
| bank conflicts | chunk ^= row bits, by hand | swizzled shared layouts, by the compiler |
| pipeline | cp.async + wait_group<STAGES-2>, one barrier | `num_stages=4` |
| block order | grouped, 1-D grid | GROUP_M=8 (the same arithmetic) |
| tf32 rounding | `cvt.rna.tf32.f32` on each fragment element | done by the compiler; "tf32x3" for more bits |

What Triton does for you: everything in the middle column. On an H100 it also picks wgmma instead of
mma.sync, which the CUDA side only reaches in v14. For tf32, `scripts/tf32_accuracy.py` shows the
error of tf32 beside Triton's "tf32x3" (three tf32 products that recover fp32-level accuracy at about
three times the cost) and IEEE fp32.

What it should reach: mma.sync runs at about half of wgmma's rate on Hopper (it is Ampere's
instruction), so on an H100 this rung should stay well under cuBLAS, which uses wgmma; on an A100 the
same kernel is the fast path. On an H100 the Triton side compiles the same `tl.dot` to wgmma for
fp16/bf16 and runs far ahead; for tf32 neither side reaches wgmma here (wgmma reads tf32 operands
K-major only, and B is row-major: v16 is the way round).

Its story (measurements, what was tried): docs/notes/v13.md.
"""

import numpy as np
import torch
import triton

from .core.cuda_c import CudaSource, bind, rows_aligned
from .core.registry import Variant
from .v12_wmma import launch_dot

TILE = {"BM": 128, "BN": 128, "WM": 64, "WN": 64}
STAGES, GROUP_M = 3, 8  # 3 stages of 16 KB: all of the 48 KB a block may have without opting in
BK = {torch.float16: 32, torch.bfloat16: 32, torch.float32: 16}  # 64-byte A rows in every case


def kernel_name(dtype: torch.dtype, BM, BN, WM, WN) -> str:
    if dtype == torch.float32:
        return f"mma_sync_tf32<{BM},{BN},{BK[dtype]},{WM},{WN},{STAGES},{GROUP_M}>"
    return f"mma_sync<{int(dtype == torch.bfloat16)},{BM},{BN},{BK[dtype]},{WM},{WN},{STAGES},{GROUP_M}>"


KERNELS = CudaSource(__name__, [kernel_name(t, **TILE) for t in BK])


# ---- CUDA C launcher ----------------------------------------------------------------------------------


def mma_sync_cuda(a, b, c, BM=128, BN=128, WM=64, WN=64):
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    args = (a, b, c, np.int32(M), np.int32(N), np.int32(K), rows_aligned(a, b))
    return bind(KERNELS, kernel_name(a.dtype, BM, BN, WM, WN), grid, ((BM // WM) * (BN // WN) * 32,), args)


# ---- Triton launcher (v12's kernel, pipelined and grouped) --------------------------------------------


def mma_sync_triton(a, b, c, BM=128, BN=128, WM=64, WN=64):
    return launch_dot(a, b, c, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK[a.dtype], GROUP_M=GROUP_M,
                      INPUT_PRECISION="tf32", num_warps=(BM // WM) * (BN // WN), num_stages=4)


VARIANT = Variant(
    __name__,
    title="mma.sync + ldmatrix + cp.async",
    dtypes=("fp16", "bf16", "tf32"),
    cuda=mma_sync_cuda,
    triton=mma_sync_triton,
    cuda_source=KERNELS,
    min_cc=(8, 0),
    configs=(TILE,),
)
