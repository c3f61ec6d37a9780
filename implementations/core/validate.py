"""Operand checks shared by every implementation: a clear error before any kernel sees bad input."""

from __future__ import annotations

from collections.abc import Iterable

import torch

INT32_MAX = 2**31 - 1
# Kernels index with 32-bit ints and step along K one tile at a time, so each dimension keeps room
# for one tile of overrun past its end.
MAX_TILE_OVERRUN = 1024


class Refused(ValueError):
    """A launch or config the kernel cannot take (too many threads per block, a block side tl.dot refuses,
    a grid past CUDA's limits): a stated limit of the rung, reported as refused rather than failed."""


def check_operands(
    a, b, *, dtypes: Iterable[torch.dtype], lang: str, triton_on_cpu: bool = False
) -> tuple[int, int, int]:
    """Return (M, N, K) for C = A @ B, or raise TypeError / ValueError saying what is wrong.

    `triton_on_cpu`: the Triton kernels run in the interpreter, which takes CPU tensors.
    """
    for label, t in (("A", a), ("B", b)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{label} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() not in (2, 3):
            raise ValueError(f"{label} must be a matrix (2-D) or a batch of matrices (3-D), got {t.dim()}-D with "
                             f"shape {tuple(t.shape)}")
    batch_of(a, b)
    (M, K), (K2, N) = a.shape[-2:], b.shape[-2:]
    if K != K2:
        raise ValueError(f"inner dimensions differ: A is {M}×{K} and B is {K2}×{N}; A's columns must equal B's rows")
    allowed = tuple(dtypes)
    if a.dtype != b.dtype:
        raise TypeError(f"A and B must share a dtype, got {a.dtype} and {b.dtype}")
    if a.dtype not in allowed:
        names = ", ".join(str(d).removeprefix("torch.") for d in allowed)
        raise TypeError(f"this implementation takes {names} operands, got {str(a.dtype).removeprefix('torch.')}")
    if a.device != b.device:
        raise ValueError(f"A and B must be on one device, got {a.device} and {b.device}")
    if a.device.type != "cuda" and not (lang == "triton" and triton_on_cpu):
        hint = " (or set TRITON_INTERPRET=1 before importing the kernels to run Triton on the CPU)"
        raise ValueError(
            f"the {lang} implementation needs CUDA tensors, got tensors on {a.device}: move them with "
            f".cuda(){hint if lang == 'triton' else ''}"
        )
    for what, count in (("A (M·K)", M * K), ("B (K·N)", K * N), ("C (M·N)", M * N)):  # per matrix of a batch
        if count > INT32_MAX:
            raise ValueError(
                f"{what} has {count:,} elements: too large for the 32-bit indexing these kernels use "
                f"(at most {INT32_MAX:,})"
            )
    if max(M, N, K) > INT32_MAX - MAX_TILE_OVERRUN:
        raise ValueError(f"dimension {max(M, N, K):,} is too large for 32-bit indexing with tile overrun")
    return M, N, K


def batch_of(a: torch.Tensor, b: torch.Tensor) -> int:
    """How many products a batched call computes: B for 3-D operands of one batch B, or one 3-D operand
    beside a 2-D one (the matrix shared by every product of the batch); 0 for two matrices."""
    batches = [t.shape[0] for t in (a, b) if t.dim() == 3]
    if len(set(batches)) > 1:
        raise ValueError(f"batch sizes differ: A holds {batches[0]} matrices and B {batches[1]}; they must be equal, "
                         "or one operand a single 2-D matrix shared by the batch")
    return batches[0] if batches else 0


def check_bias(bias, a: torch.Tensor, N: int, needed: bool) -> None:
    """The epilogue's bias: a contiguous vector of C's N columns, of the operands' dtype and device, given when
    the epilogue adds one and only then."""
    if not needed:
        if bias is not None:
            raise ValueError("a bias was given, but the epilogue adds none (choose bias, bias+relu or bias+gelu)")
        return
    if not isinstance(bias, torch.Tensor):
        raise TypeError(f"the epilogue adds a bias: give a torch.Tensor of {N} elements, got {type(bias).__name__}")
    if bias.shape != (N,) or bias.dtype != a.dtype or bias.device != a.device or not bias.is_contiguous():
        raise ValueError(f"the bias must be a contiguous vector of C's {N} columns, {a.dtype} on {a.device}; got "
                         f"{tuple(bias.shape)} {bias.dtype} on {bias.device}"
                         + ("" if bias.is_contiguous() else ", not contiguous"))


def check_scales(scales, a: torch.Tensor, b: torch.Tensor, needed: bool) -> None:
    """The scales of fp8 operands: a contiguous fp32 tensor on the operands' device, (s_A, s_B) per tensor or,
    for a single product, s_A's M values then s_B's N (a scale per row of A and column of B); given for scaled
    operands and only for them."""
    if not needed:
        if scales is not None:
            raise ValueError(f"scales were given, but {a.dtype} operands take none (fp8 operands do)")
        return
    if not isinstance(scales, torch.Tensor):
        raise TypeError(f"{a.dtype} operands need their scales: a torch.Tensor (s_A, s_B), got "
                        f"{type(scales).__name__}")
    M, N = a.shape[-2], b.shape[-1]
    single = a.dim() == 2 and b.dim() == 2
    if (scales.shape not in ((2,), (M + N,) if single else (2,)) or scales.dtype != torch.float32
            or scales.device != a.device or not scales.is_contiguous()):
        rows = f", or {M} + {N} (s_A's rows, then s_B's columns)" if single else " (per-row scales: single products)"
        raise ValueError(f"the scales must be a contiguous float32 tensor on {a.device} of 2 (s_A, s_B){rows}; got "
                         f"{tuple(scales.shape)} {scales.dtype} on {scales.device}"
                         + ("" if scales.is_contiguous() else ", not contiguous"))


def check_groups(a: torch.Tensor, b: torch.Tensor, offsets) -> tuple[int, ...]:
    """The rows of each group of a grouped product (A: every group's rows, one after another; B: one K×N matrix
    per group; offsets: torch._grouped_mm's, int32, each group's end row), or TypeError / ValueError saying what
    is wrong. Reads the offsets on the host: call it when preparing, not in a timed call."""
    if not isinstance(offsets, torch.Tensor):
        raise TypeError(f"offsets must be a torch.Tensor of int32 group ends, got {type(offsets).__name__}")
    if a.dim() != 2 or b.dim() != 3:
        raise ValueError(f"a grouped product takes A as one matrix of every group's rows (2-D) and B as one matrix "
                         f"per group (3-D), got {a.dim()}-D A and {b.dim()}-D B")
    if offsets.dim() != 1 or offsets.dtype != torch.int32 or offsets.device != a.device or not offsets.is_contiguous():
        raise ValueError(f"offsets must be a contiguous 1-D int32 tensor on {a.device} (the kernels read them as an "
                         f"array), got {offsets.dim()}-D {offsets.dtype} on {offsets.device}"
                         + ("" if offsets.is_contiguous() else f", strides {offsets.stride()}"))
    if offsets.shape[0] != b.shape[0]:
        raise ValueError(f"{offsets.shape[0]} offsets for {b.shape[0]} matrices of B: one group per matrix")
    ends = [0, *offsets.tolist()]
    for g in range(1, len(ends)):
        if ends[g] < ends[g - 1]:
            raise ValueError(f"offsets must be non-decreasing from 0: offsets[{g - 1}] = {ends[g]} follows "
                             f"{ends[g - 1]}")
    M = a.shape[0]
    if ends[-1] != M:
        where = "past the end of" if ends[-1] > M else "short of"
        raise ValueError(f"the last offset is {ends[-1]}, {where} A's {M} rows: the groups must cover A's rows "
                         "exactly")
    return tuple(end - start for start, end in zip(ends, ends[1:]))


def check_tile(TILE) -> None:
    """A tile side is a positive Python int (a launch shape and a template or constexpr argument)."""
    if not isinstance(TILE, int) or isinstance(TILE, bool):
        raise TypeError(f"TILE must be an int, got {TILE!r}")
    if TILE < 1:
        raise ValueError(f"TILE must be positive, got {TILE}")
