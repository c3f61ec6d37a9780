"""v14 wgmma + TMA: Hopper's own matrix instruction fed by its copy engine, on a persistent grid.

The idea. Two Hopper units change who does the work:
- The Tensor Memory Accelerator (TMA) copies a whole 2-D box of a matrix into shared memory from
  one instruction issued by one thread: it computes the addresses, clips at the matrix edges (zeros
  outside, so no masks), swizzles the tile for conflict-free reads, and reports completion by counting
  bytes down on an *mbarrier*. In v13 every thread computed addresses and issued 16-byte cp.async copies.
- `wgmma` is issued by a warpgroup (4 warps, 128 threads) for a 64×N×16 product, reads both operands
  straight from shared memory through 64-bit descriptors (no ldmatrix, no operand registers), and runs
  asynchronously: the warpgroup issues, then waits (`wgmma.wait_group`) only when it must.
A ring of STAGES slots connects them: per slot a `full` barrier (TMA bytes landed) and an `empty`
barrier (both warpgroups' multiplies have read it). The grid is persistent: one CTA per SM walks
tiles blockIdx.x, + gridDim.x, ..., so the copies of the next tile start while the last one finishes.

CUDA C and Triton side by side:

| concept | CUDA C (kernels_cuda/v14_wgmma_tma.cu + hopper.cuh) | Triton (below) |
|---|---|---|
| tensor map | cuTensorMapEncodeTiled on the host (cuda-python), | `TensorDescriptor.from_tensor(a, block)` |
|  | passed as a `__grid_constant__` parameter | (the same CUtensorMap, built by Triton) |
| tile copy | `cp.async.bulk.tensor.2d` + mbarrier expect_tx | `a_desc.load([row, k])` |
| slots and phases | full/empty mbarriers, parity per pass, by hand | `num_stages`: the pipeliner allocates them |
| the product | `wgmma.mma_async` m64n128k16, smem descriptors | `tl.dot` (lowered to wgmma) |
| operand layouts | A K-major, B N-major (imm-trans-b), 128-byte swizzle | chosen by the compiler |
| persistent grid | min(SMs, tiles) CTAs, `tile += gridDim.x` | min(SMs, tiles) programs, `tl.num_programs` |

TMA needs 16-byte aligned row pitches: when K or N is not a multiple of 8 (16-bit elements), both
sides copy A and B once per call into zero-padded buffers (inside the timed call: it is part of the
cost), which changes nothing in the product. C is written with masked stores, so any M and N work.
Layouts and batches: Triton's kernel reads a transposed operand in place (A_T / B_T: boxes of the matrix
the view transposes, `.T` in the kernel; wgmma reads 16-bit operands of either major order from shared
memory) and a batch in one launch (3-D descriptors, boxes of one matrix; the persistent loop walks every
product's tiles); the CUDA C kernel takes one product of a K-major A and an N-major B, so the shared layer
copies other layouts for it and launches a batch matrix by matrix.
The Triton kernel has two knobs off here that v15 turns on: FLATTEN (one software pipeline over the
tile and k-block loops) and C_BY_TMA (the epilogue as TMA stores); and v17's BIAS and ACTIVATION, v19's SCALES.

What it should reach: about cuBLAS's level minus what the single-role design costs (the thread that
issues the copies is also a consumer, so its warpgroup waits whenever a slot is late), and the
128×128 tile reads B from shared memory once per 64 rows. v15 removes both.
"""


import numpy as np
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from .core.check import LAYOUTS
from .core.cuda_c import CudaSource, bind, check_grid, tensor_map
from .core.registry import Variant, layout_of, reads_as
from .core.triton_util import prebound
from .v11_autotuned import grouped_tile

BM, BN, BK = 128, 128, 64
STAGES = 4
IS_BF16 = {torch.float16: 0, torch.bfloat16: 1}
KERNELS = CudaSource(__name__, [f"wgmma_tma<{flag},{STAGES}>" for flag in IS_BF16.values()], arch="sm_90a")
BARRIER_BYTES = 1024 + 2 * 8 * 8  # alignment slack for the 1024-byte swizzle atoms + up to 8 stages of two barriers


def tma_operands(a: torch.Tensor, b: torch.Tensor):
    """(a, b, refresh): operands whose row pitch TMA accepts (a multiple of 16 bytes, 16-byte aligned base).

    When a and b already qualify, refresh does nothing. Otherwise zero-padded copies are allocated once
    and refresh() copies the operands into them (call it inside the timed run).
    """
    align = 16 // a.element_size()
    K, N = b.shape

    def ok(t):
        return t.shape[1] % align == 0 and t.data_ptr() % 16 == 0

    if ok(a) and ok(b):
        return a, b, lambda: None
    K_pad, N_pad = triton.cdiv(K, align) * align, triton.cdiv(N, align) * align
    a_pad = torch.zeros((a.shape[0], K_pad), dtype=a.dtype, device=a.device)
    b_pad = torch.zeros((K_pad, N_pad), dtype=b.dtype, device=b.device)

    def refresh():
        a_pad[:, :K].copy_(a)
        b_pad[:K, :N].copy_(b)

    return a_pad, b_pad, refresh


@triton.jit
def copy_rows_kernel(src, dst, rows, cols, src_stride, dst_stride, src_batch, dst_batch,
                     BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr, ALIGN: tl.constexpr):
    # A block of rows × columns of one matrix of a batch (axis 2), to the same place in a buffer of another
    # row pitch. Both pitches and `cols` are multiples of ALIGN elements (the launcher's largest of 16, 8 or 4
    # bytes), which the compiler sees from (x // ALIGN) * ALIGN: then each thread copies ALIGN at a time
    src_stride = src_stride // ALIGN * ALIGN
    dst_stride = dst_stride // ALIGN * ALIGN
    cols = cols // ALIGN * ALIGN
    r = (tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)).to(tl.int64)
    k = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    inside = (r[:, None] < rows) & (k[None, :] < cols)
    product = tl.program_id(2).to(tl.int64)
    x = tl.load(src + product * src_batch + r[:, None] * src_stride + k[None, :], mask=inside)
    tl.store(dst + product * dst_batch + r[:, None] * dst_stride + k[None, :], x, mask=inside)


def copy_rows(src: torch.Tensor, dst: torch.Tensor):
    """copy(): `src` (a row-major matrix or batch, any row pitch) into `dst` of the same shape: one launch,
    16 bytes per thread where the pitches allow, where torch's copy of a strided destination moves 2 bytes
    per thread."""
    s3, d3 = (src, dst) if src.dim() == 3 else (src[None], dst[None])
    size = src.element_size()
    align = next(n for n in (16 // size, 8 // size, 4 // size, 1) if n
                 and all(x % n == 0 for x in (s3.stride(1), d3.stride(1), s3.shape[2]))
                 and s3.data_ptr() % (n * size) == 0 and d3.data_ptr() % (n * size) == 0)
    grid = (triton.cdiv(s3.shape[1], 16), triton.cdiv(s3.shape[2], 256), s3.shape[0])
    return prebound(copy_rows_kernel, grid, s3, d3, s3.shape[1], s3.shape[2], s3.stride(1), d3.stride(1),
                    s3.stride(0), d3.stride(0), BLOCK_R=16, BLOCK_C=256, ALIGN=align, num_warps=4)


def padded_rows(s: torch.Tensor, pitch: int):
    """(a zeroed buffer of s's rows, each widened to a multiple of `pitch` bytes, copy(): copies s into it)."""
    per_pitch = pitch // s.element_size()
    padded = torch.zeros((*s.shape[:-1], triton.cdiv(s.shape[-1], per_pitch) * per_pitch), dtype=s.dtype,
                         device=s.device)
    return padded, copy_rows(s, padded[..., :s.shape[-1]])


def tma_views(a: torch.Tensor, b: torch.Tensor, b_k_major: bool = False):
    """(a_s, b_s, layout, refresh) for the Triton kernel: the row-major matrices (or batches of them) TMA
    reads, each operand itself or, for a transposed view, the matrix it views (layout: {"A_T": True} and/or {"B_T": True}), each
    zero-padded to a 16-byte row pitch where it is not one (refresh() copies the operands into the padded
    ones: call it inside the timed run). The padding lies past K or past M or N, where it adds nothing.
    A B of one row or column, both row-major and a transposed view, is read as the latter (K-major) where the
    kernel needs that: fp8's, or `b_k_major`."""
    stored, layout, copies = [], {}, []
    k_major = b_k_major or b.dtype == torch.float8_e4m3fn
    for flag, t in (("A_T", a), ("B_T", b)):
        # row-major matrices or transposed views (a batch may be strided)
        transposed = layout_of(t) == "t" or (flag == "B_T" and k_major and reads_as(t, "t"))
        s = t.mT if transposed else t
        if transposed:
            layout[flag] = True
        if s.shape[-1] % (16 // t.element_size()) or s.data_ptr() % 16:
            s, copy = padded_rows(s, 16)
            copies.append(copy)
        stored.append(s)

    def refresh():
        for copy in copies:
            copy()

    return *stored, layout, refresh


def zero_product(c):
    """K = 0: C is all zeros (and a tensor map of a zero-width matrix does not exist)."""
    def run():
        c.zero_()

    return run


def sm_count(device: torch.device) -> int:
    return torch.cuda.get_device_properties(device).multi_processor_count


# ---- CUDA C launcher ----------------------------------------------------------------------------------


def wgmma_tma_cuda(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    if K == 0:
        return zero_product(c)
    a_t, b_t, refresh = tma_operands(a, b)
    a_map = tensor_map(a_t, (BK, BM))  # box: 64 k × 128 rows (128-byte rows)
    b_map = tensor_map(b_t, (64, BK))  # box: 64 columns × 64 k; two per stage
    grid = (min(sm_count(a.device), triton.cdiv(M, BM) * triton.cdiv(N, BN)),)
    launch = bind(KERNELS, f"wgmma_tma<{IS_BF16[a.dtype]},{STAGES}>", grid, (256,),
                  (a_map, b_map, c, np.int32(M), np.int32(N), np.int32(K)),
                  shared_mem=STAGES * (BM * BK + BK * BN) * 2 + BARRIER_BYTES)

    def run():
        refresh()
        return launch()

    return run


# ---- Triton kernel and launcher -----------------------------------------------------------------------


@triton.jit
def operand_box(desc, product, row, col, ROWS: tl.constexpr, COLS: tl.constexpr, TRANSPOSED: tl.constexpr,
                IN_BATCH: tl.constexpr):
    """The ROWS×COLS box at (row, col) of an operand, through its TMA descriptor: of the matrix a transposed
    operand views (TRANSPOSED: the box read the other way round, transposed in shared memory's description
    only: wgmma reads 16-bit operands either way round), of matrix `product` of a 3-D batch (IN_BATCH)."""
    if TRANSPOSED:
        if IN_BATCH:
            box = desc.load([product, col, row]).reshape(COLS, ROWS).T
        else:
            box = desc.load([col, row]).T
    else:
        if IN_BATCH:
            box = desc.load([product, row, col]).reshape(ROWS, COLS)
        else:
            box = desc.load([row, col])
    return box


@triton.jit
def apply_scales(acc, scales_ptr, offs_m, offs_n, M, N, SCALES: tl.constexpr, SWAPPED: tl.constexpr):
    """fp8's scales (v19) on a block of fp32 sums at rows offs_m and columns offs_n: × s_A·s_B (SCALES "tensor":
    scales = (s_A, s_B)), or × s_A[row]·s_B[column] ("rowwise": s_A's M values, then s_B's N); none (""). SWAPPED:
    the block is of Cᵀ (v15's swapped products), whose rows are C's columns: s_B's, after s_A's N values."""
    if SCALES == "tensor":
        acc *= tl.load(scales_ptr) * tl.load(scales_ptr + 1)
    if SCALES == "rowwise":
        rows_ptr = scales_ptr + N if SWAPPED else scales_ptr
        columns_ptr = scales_ptr if SWAPPED else scales_ptr + M
        s_rows = tl.load(rows_ptr + offs_m, mask=offs_m < M, other=0.0)
        s_columns = tl.load(columns_ptr + offs_n, mask=offs_n < N, other=0.0)
        acc *= s_rows[:, None] * s_columns[None, :]
    return acc


@triton.jit
def apply_epilogue(acc, bias_ptr, offs_m, offs_n, M, N, BIAS: tl.constexpr, ACTIVATION: tl.constexpr,
                   BIAS_ROWS: tl.constexpr):
    """v17's epilogue on a block of fp32 sums at rows offs_m and columns offs_n: + bias (BIAS), one element per
    column, a row vector broadcast over the rows (BIAS_ROWS: one per row, where the block is of Cᵀ: v15's swapped
    products), then ReLU or GELU (ACTIVATION "relu" or "gelu"; none "")."""
    if BIAS:
        if BIAS_ROWS:
            acc += tl.load(bias_ptr + offs_m, mask=offs_m < M, other=0.0).to(tl.float32)[:, None]
        else:
            acc += tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    if ACTIVATION == "gelu":  # torch's tanh form, 0.5·x·(1 + tanh(t)) = x·sigmoid(2t), t = √(2/π)·(x + 0.044715·x³)
        acc = acc / (1 + tl.exp(-1.5957691216057308 * (acc + 0.044715 * acc * acc * acc)))
    return acc


@triton.jit
def tma_persistent_kernel(
    a_desc, b_desc, c_ptr, M, N, K, stride_cm, stride_cn, c_desc,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    FLATTEN: tl.constexpr, C_BY_TMA: tl.constexpr, A_T: tl.constexpr = False, B_T: tl.constexpr = False,
    A_3D: tl.constexpr = False, B_3D: tl.constexpr = False, products=1, stride_cb=0,
    bias_ptr=None, BIAS: tl.constexpr = False, ACTIVATION: tl.constexpr = "", scales_ptr=None,
    SCALES: tl.constexpr = "",
):
    # ---- 1. this program's tiles: pid, pid + programs, ..., over every product of a batch, each mapped in
    #         grouped order (FLATTEN, v15: the tile loop and the k-loop software-pipelined as one) ----
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    tiles = grid_m * grid_n
    for tile in tl.range(tl.program_id(0), products * tiles, tl.num_programs(0), flatten=FLATTEN):
        product = tile // tiles
        pid_m, pid_n = grouped_tile(tile % tiles, grid_m, grid_n, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kb in range(k_tiles):
            # ---- 2. TMA: a box of A and one of B (zeros outside; num_stages of them in flight); of the
            #         matrix a transposed operand views (A_T, B_T), of this product's matrix in a batch ----
            a = operand_box(a_desc, product, pid_m * BLOCK_M, kb * BLOCK_K, BLOCK_M, BLOCK_K, A_T, A_3D)
            b = operand_box(b_desc, product, kb * BLOCK_K, pid_n * BLOCK_N, BLOCK_K, BLOCK_N, B_T, B_3D)
            # ---- 3. multiply (wgmma on Hopper) ----
            acc = tl.dot(a, b, acc)
        # ---- 4. the epilogue on the fp32 accumulators (v19: the scales; v17: + bias, a row vector read once per
        #         column block, then ReLU or GELU), then write back, rounded to C's type: masked stores, or
        #         (C_BY_TMA, v15) two TMA stores of half a tile each, clipped at the edges (C's rows must be
        #         16-byte aligned) ----
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        acc = apply_scales(acc, scales_ptr, offs_m, offs_n, M, N, SCALES, False)
        acc = apply_epilogue(acc, bias_ptr, offs_m, offs_n, M, N, BIAS, ACTIVATION, False)
        out = acc.to(c_ptr.dtype.element_ty)
        if C_BY_TMA:
            left, right = tl.split(tl.permute(tl.reshape(out, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1)))
            if A_3D or B_3D:
                c_desc.store([product, pid_m * BLOCK_M, pid_n * BLOCK_N], left.reshape(1, BLOCK_M, BLOCK_N // 2))
                c_desc.store([product, pid_m * BLOCK_M, pid_n * BLOCK_N + BLOCK_N // 2],
                             right.reshape(1, BLOCK_M, BLOCK_N // 2))
            else:
                c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], left)
                c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N + BLOCK_N // 2], right)
        else:
            c_ptrs = c_ptr + product.to(tl.int64) * stride_cb + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
            tl.store(c_ptrs, out, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def programs(device: torch.device, M: int, N: int, BLOCK_M: int, BLOCK_N: int, products: int = 1) -> int:
    """One program per SM (at most one per tile); on the CPU, where the interpreter runs, one per tile."""
    tiles = products * triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)
    return min(sm_count(device), tiles) if device.type == "cuda" else tiles


def descriptor_box(t: torch.Tensor, rows: int, cols: int, transposed: bool) -> list[int]:
    """The TMA box of a rows×cols block of an operand stored as `t` (the matrix a transposed operand views: the
    box the other way round; a 3-D operand: a box of one of its matrices)."""
    return [1] * (t.dim() - 2) + ([cols, rows] if transposed else [rows, cols])


def operand_descriptors(a_t, b_t, c, block_m: int, block_n: int, block_k: int, knobs: dict):
    """(A's and B's TMA descriptors for these blocks, knobs with a batch's added: which operands are 3-D, the
    products and C's matrix stride) for TMA-ready operands (from `tma_views`; A_T / B_T in knobs)."""
    a_desc = TensorDescriptor.from_tensor(a_t, descriptor_box(a_t, block_m, block_k, knobs.get("A_T")))
    b_desc = TensorDescriptor.from_tensor(b_t, descriptor_box(b_t, block_k, block_n, knobs.get("B_T")))
    if c.dim() == 3:
        knobs = knobs | {"A_3D": a_t.dim() == 3, "B_3D": b_t.dim() == 3, "products": c.shape[0],
                         "stride_cb": c.stride(0)}
    return a_desc, b_desc, knobs


def bind_tma_persistent(a_t, b_t, c, M, N, K, *, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M=8, kernel=None, **knobs):
    """`kernel` (by default `tma_persistent_kernel`, or one with its parameters) bound to TMA-ready operands
    (from `tma_views`; A_T / B_T in knobs: the matrix a transposed operand views) of an M×N×K product:
    returns the launch."""
    kernel = kernel or tma_persistent_kernel
    a_desc, b_desc, knobs = operand_descriptors(a_t, b_t, c, BLOCK_M, BLOCK_N, BLOCK_K, knobs)
    grid = (programs(c.device, M, N, BLOCK_M, BLOCK_N, c.shape[0] if c.dim() == 3 else 1),)
    check_grid(grid)
    return prebound(
        kernel, grid, a_desc, b_desc, c, M, N, K, c.stride(-2), c.stride(-1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, **knobs)


def launch_tma_persistent(a, b, c, **config):
    """`bind_tma_persistent` on padded-if-needed operands: returns the run (refresh + launch)."""
    M, K = a.shape[-2:]
    if K == 0:
        return zero_product(c)
    a_t, b_t, layout, refresh = tma_views(a, b)
    launch = bind_tma_persistent(a_t, b_t, c, M, b.shape[-1], K, **config, **layout)

    def run():
        refresh()
        return launch()

    return run


def bind_configs(a, b, c, configs, kernel=None, extra=lambda config: {}):
    """(refresh, {config: launch}): `triton.Config`s of `kernel` sharing one set of TMA-ready operands, each
    with its own descriptors' boxes and `extra(config)`'s further arguments (v16's search)."""
    M, K = a.shape[-2:]
    a_t, b_t, layout, refresh = tma_views(a, b)
    return refresh, {config: bind_tma_persistent(a_t, b_t, c, M, b.shape[-1], K, **config.kwargs, kernel=kernel,
                                                 num_warps=config.num_warps, num_stages=config.num_stages,
                                                 **extra(config), **layout)
                     for config in configs}


def wgmma_tma_triton(a, b, c):
    return launch_tma_persistent(a, b, c, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=1, num_warps=8,
                                 num_stages=STAGES, c_desc=None, FLATTEN=False, C_BY_TMA=False)


VARIANT = Variant(
    __name__,
    title="wgmma + TMA, persistent",
    dtypes=("fp16", "bf16"),
    cuda=wgmma_tma_cuda,
    triton=wgmma_tma_triton,
    cuda_source=KERNELS,
    min_cc=(9, 0),  # TMA and wgmma: Hopper
    tile=(BM, BN),
    layouts={"triton": LAYOUTS},  # TMA boxes of the matrix a transposed operand views (tma_views)
    batched=("triton",),  # the persistent tile loop walks every product's tiles
)
