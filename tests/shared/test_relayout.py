"""The transposing copy of an operand a rung does not read in place (core/relayout.py), in both languages:
every element width, both directions, ragged and degenerate matrices, batches (strided, shared by the batch,
longer than the grid's y axis), against torch's own copy. The Triton side runs in the interpreter on the CPU;
the CUDA C side compiles here and runs on a GPU."""

import shutil
from unittest import mock

import pytest
import torch

from implementations.core import relayout
from implementations.core.cuda_c import compile_report
from implementations.core.registry import stored_as

LANGS = [pytest.param("cuda", marks=pytest.mark.gpu), "triton"]
DTYPES = [torch.float32, torch.float16, torch.float8_e4m3fn]


def operand(shape, dtype, op, device, seed=3):
    """A matrix (or batch) of distinct values stored row-major (op "n") or as a transposed view ("t")."""
    values = torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(dtype).to(device)
    return values if op == "n" else values.mT.contiguous().mT


def bits(t):
    """t's elements as integers of their width: compared bit for bit, NaN where every bit is set."""
    return t.view(relayout.BITS[t.element_size()][0])


def copied(lang, src, op):
    dst = stored_as(src, op)
    bits(dst).fill_(-1)  # every bit set: an element the copy misses stays so
    relayout.bind(lang, dst, src)()
    return dst


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("src_op", ["n", "t"])
@pytest.mark.parametrize("shape", [(37, 70), (64, 64), (1, 5), (65, 1), (130, 33), (256, 130)], ids=str)
def test_copies_into_the_other_storage_order(lang, dtype, src_op, shape, device):
    src = operand(shape, dtype, src_op, device)
    assert torch.equal(bits(copied(lang, src, "t" if src_op == "n" else "n")), bits(src))


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("src_op", ["n", "t"])
def test_copies_a_batch_and_a_matrix_shared_by_it(lang, src_op, device):
    batch = operand((5, 33, 47), torch.float32, src_op, device)
    assert torch.equal(bits(copied(lang, batch, "t" if src_op == "n" else "n")), bits(batch))
    shared = operand((33, 47), torch.float32, src_op, device).expand(4, 33, 47)
    assert shared.stride(0) == 0
    assert torch.equal(bits(copied(lang, shared, "t" if src_op == "n" else "n")), bits(shared))


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("dtype", DTYPES[1:], ids=str)
@pytest.mark.parametrize("rows_of", ["padded", "offset"])
def test_rows_that_do_not_start_on_a_word(lang, dtype, rows_of, device):
    """Narrow elements go a word at a time only where every row starts on one: a pitch of 68 with 67 columns
    ends rows mid-word, and a matrix one element into its storage starts every row off a word."""
    whole = operand((37, 68), dtype, "n", device)
    src = whole[:, :67] if rows_of == "padded" else whole.flatten()[1:].view(-1)[:37 * 67].view(37, 67)
    assert torch.equal(bits(copied(lang, src, "t")), bits(src))
    assert torch.equal(bits(copied(lang, src.mT, "n")), bits(src.mT))


@pytest.mark.parametrize("lang", LANGS)
def test_a_batch_longer_than_the_grid_walks_the_rest(lang, device):
    batch = operand((7, 9, 40), torch.float16, "n", device)
    with mock.patch.object(relayout, "MAX_GRID_Y", 2):
        assert torch.equal(bits(copied(lang, batch, "t")), bits(batch))


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("shape", [(4, 0), (0, 4, 5)], ids=str)
def test_an_empty_operand_copies_nothing(lang, shape, device):
    src = operand(shape, torch.float32, "n", device)
    relayout.bind(lang, stored_as(src, "t"), src)()


@pytest.mark.parametrize("lang", LANGS)
def test_a_sliced_operand_is_copied_elementwise(lang, device):
    sliced = operand((6, 16), torch.float32, "n", device)[:, ::2]
    assert relayout.stored(sliced, stored_as(sliced, "t")) is None
    assert torch.equal(copied(lang, sliced, "t"), sliced)


def test_refuses_what_is_not_a_copy_into_a_storage_order(device):
    src = operand((6, 8), torch.float32, "n", device)
    with pytest.raises(ValueError, match="one shape and dtype"):
        relayout.bind("triton", stored_as(src, "t").to(torch.float16), src)
    with pytest.raises(ValueError, match="one shape and dtype"):
        relayout.bind("triton", torch.empty(8, 6, device=device), src)
    with pytest.raises(ValueError, match="into a row-major matrix"):
        relayout.bind("triton", torch.empty(6, 16, device=device)[:, ::2], src)
    with pytest.raises(ValueError, match="language"):
        relayout.bind("fortran", stored_as(src, "t"), src)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_the_cuda_copies_compile_without_spills(arch):
    reports = compile_report(relayout.KERNELS, arch)
    assert sorted(r.kernel for r in reports) == sorted(name.replace(" ", "") for name in relayout.KERNELS.kernels)
    assert all(r.spills == 0 and r.stack_bytes == 0 for r in reports)
