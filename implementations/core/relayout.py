"""The copy a rung makes of an operand it does not read in place: into the other storage order, in the rung's
own language.

A rung declares the layouts its kernel reads (Variant.layouts); for any other, the shared layer copies an
operand from row-major to a transposed view or back, inside the timed call (registry.prepare). That copy is
a transpose of the stored matrix, and torch's `copy_` does it elementwise: either its reads or its writes
step across rows, and it moves far fewer bytes per second than a plain copy. Here both languages turn
TILE×TILE tiles around through shared memory, reading and writing along rows, so a copied layout costs
about what the bytes cost, and the CUDA C row of a comparison runs only CUDA C kernels, the Triton row only
Triton ones.

| concept | CUDA C (kernels_cuda/relayout.cu) | Triton (below) |
|---|---|---|
| the tile | `__shared__ unsigned tile[TILE][32]`, its words XOR-swizzled against bank conflicts | `tl.trans(tile)`: the compiler stages it in shared memory |
| read, write | a warp along a row of src, then along a row of dst | `tl.load` and `tl.store` of 2-D blocks, each with its own strides |
| elements | an unsigned integer of the element's width, packed by hand 4 bytes to a word so that every access moves a word | the same integers, through `Tensor.view`; the compiler vectorizes the accesses |
| the batch | grid axis y, a block walking products y, y + gridDim.y, ... | program axis 1, the same walk |

Constraints: src and dst are the same (batch×)M×N view, one stored row-major and the other a transposed view
of a row-major matrix (each matrix's rows contiguous); elements of 1, 2 or 4 bytes; the batch of dst
contiguous, that of src any stride (0: a matrix shared by the batch). A src with other strides (a sliced
operand) is not a change of storage order: torch's `copy_` copies it, in either language.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
import triton
import triton.language as tl

from .cuda_c import CudaSource, bind as bind_cuda
from .triton_util import prebound

TRITON_TILE = 64
TRITON_WARPS = 4
MAX_GRID_Y = 65535
BITS = {1: (torch.uint8, "unsigned char"), 2: (torch.int16, "unsigned short"), 4: (torch.int32, "unsigned int")}
KERNELS = CudaSource(__name__, [f"transpose_tiles<{t}>" for _, t in BITS.values()])


@triton.jit
def transpose_tiles_kernel(src, dst, rows, cols, src_pitch, dst_pitch, src_step, dst_step, products,
                           TILE: tl.constexpr):
    # ---- 1. map this program to a TILE×TILE tile of src, and to the same elements of dst ----
    tiles_c = tl.cdiv(cols, TILE)
    r = (tl.program_id(0) // tiles_c) * TILE + tl.arange(0, TILE)
    c = (tl.program_id(0) % tiles_c) * TILE + tl.arange(0, TILE)
    inside = (r[:, None] < rows) & (c[None, :] < cols)
    src += tl.program_id(1).to(tl.int64) * src_step
    dst += tl.program_id(1).to(tl.int64) * dst_step
    for _ in range(tl.program_id(1), products, tl.num_programs(1)):
        # ---- 2. read the tile along src's rows ----
        tile = tl.load(src + r[:, None].to(tl.int64) * src_pitch + c[None, :], mask=inside)
        # ---- 3. write it along dst's rows: the transpose is a change of layout, made in shared memory ----
        tl.store(dst + c[:, None].to(tl.int64) * dst_pitch + r[None, :], tl.trans(tile), mask=tl.trans(inside))
        src += tl.num_programs(1).to(tl.int64) * src_step
        dst += tl.num_programs(1).to(tl.int64) * dst_step


def stored(src: torch.Tensor, dst: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(src, dst) as the stored matrices, as unsigned integers of their width, where dst's stored matrix is the
    transpose of src's, each row-major; None where src has other strides (a sliced operand)."""
    if src.dtype != dst.dtype or src.shape != dst.shape or src.element_size() not in BITS:
        raise ValueError(f"relayout copies between views of one shape and dtype of 1, 2 or 4 bytes; got "
                         f"{tuple(src.shape)} {src.dtype} into {tuple(dst.shape)} {dst.dtype}")
    if matrix(dst).mT.is_contiguous():  # dst a transposed view: src should be row-major
        src_rows, dst_rows = src, dst.mT
    else:
        src_rows, dst_rows = src.mT, dst
    if not matrix(dst_rows).is_contiguous():
        raise ValueError(f"relayout copies into a row-major matrix or a transposed view of one; got strides "
                         f"{dst.stride()}")
    if matrix(src_rows).stride(-1) != 1 and src_rows.shape[-1] > 1:
        return None
    as_bits = BITS[src.element_size()][0]
    return src_rows.view(as_bits), dst_rows.view(as_bits)


def matrix(t: torch.Tensor) -> torch.Tensor:
    """t, or the first matrix of a batch: the strides of one matrix."""
    return t[0] if t.dim() == 3 and t.shape[0] else t


def steps(src_rows: torch.Tensor, dst_rows: torch.Tensor) -> tuple[int, int, int]:
    """(products, src_step, dst_step): the batch, and the elements from one matrix to the next."""
    if dst_rows.dim() == 2:
        return 1, 0, 0
    return dst_rows.shape[0], src_rows.stride(0) if src_rows.dim() == 3 else 0, dst_rows.stride(0)


def bind(lang: str, dst: torch.Tensor, src: torch.Tensor) -> Callable[[], object]:
    """A launch that copies src into dst in `lang` ("cuda" or "triton"): the same (batch×)M×N view, dst stored
    row-major or as a transposed view of a row-major matrix, src the other way. A src of other strides (a
    sliced operand) is copied by torch's `copy_`, elementwise, in either language."""
    if lang not in ("cuda", "triton"):
        raise ValueError(f"unknown implementation language {lang!r}")
    found = stored(src, dst)
    if src.numel() == 0:
        return lambda: None
    if found is None:
        return lambda: dst.copy_(src)
    src_rows, dst_rows = found
    rows, cols = src_rows.shape[-2:]
    products, src_step, dst_step = steps(src_rows, dst_rows)
    pitches = (src_rows.stride(-2), dst_rows.stride(-2))
    if lang == "cuda":
        per_word = 4 // src.element_size()
        tile = 32 * per_word
        words = all(t.data_ptr() % 4 == 0 for t in (src_rows, dst_rows)) and all(
            n % per_word == 0 for n in (*pitches, src_step, dst_step))
        grid = (triton.cdiv(rows, tile) * triton.cdiv(cols, tile), min(products, MAX_GRID_Y))
        name = f"transpose_tiles<{BITS[src.element_size()][1]}>"
        return bind_cuda(KERNELS, name, grid, (32, 8), (
            src_rows, dst_rows, np.int32(rows), np.int32(cols), *map(np.int64, pitches), np.int64(src_step),
            np.int64(dst_step), np.int32(products), np.int32(words)))
    grid = (triton.cdiv(rows, TRITON_TILE) * triton.cdiv(cols, TRITON_TILE), min(products, MAX_GRID_Y))
    return prebound(transpose_tiles_kernel, grid, src_rows, dst_rows, rows, cols, *pitches, src_step, dst_step,
                    products, TILE=TRITON_TILE, num_warps=TRITON_WARPS)
