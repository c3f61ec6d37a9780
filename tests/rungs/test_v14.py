"""v14 wgmma + TMA: TMA-ready operands (CPU) and what its Triton side relies on the compiler for (GPU)."""

import pytest
import torch

from implementations.v14_wgmma_tma import padded_rows, tma_operands


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_tma_operands_pad_rows_to_16_bytes_and_keep_the_product(dtype):
    a = torch.randn(5, 7).to(dtype)
    b = torch.randn(7, 3).to(dtype)
    a_t, b_t, refresh = tma_operands(a, b)
    refresh()
    assert a_t.shape == (5, 8) and b_t.shape == (8, 8), "rows padded to 8 elements = 16 bytes"
    assert torch.equal(a_t[:, :7], a) and torch.equal(b_t[:7, :3], b)
    assert not a_t[:, 7:].any() and not b_t[7:].any() and not b_t[:, 3:].any(), "zeros: the product is unchanged"
    assert torch.equal((a_t.float() @ b_t.float())[:, :3], a.float() @ b.float())


def test_tma_operands_leave_aligned_operands_alone():
    a, b = torch.randn(4, 16).half(), torch.randn(16, 8).half()
    a_t, b_t, _ = tma_operands(a, b)
    assert a_t is a and b_t is b


@pytest.mark.parametrize("source", [
    lambda: torch.randn(37, 50),  # 100-byte rows, no 16-byte copies
    lambda: torch.randn(3, 37, 48),  # a batch, 96-byte rows: 16 bytes at a time
    lambda: torch.randn(300, 264),  # more than one block of rows and of columns
    lambda: torch.randn(2, 40, 80)[:, 3:, :56],  # a slice: rows 160 bytes apart, 56 elements read of each
])
def test_padded_rows_copy_every_element_and_leave_the_padding_zero(source):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    s = source().to(device=device, dtype=torch.bfloat16)
    padded, copy = padded_rows(s, 128)
    padded.fill_(float("nan"))[..., s.shape[-1]:] = 0
    copy()
    assert padded.shape[-1] % 64 == 0 and padded.shape[:-1] == s.shape[:-1]
    assert torch.equal(padded[..., :s.shape[-1]], s) and not padded[..., s.shape[-1]:].any()


@pytest.mark.gpu
def test_triton_tma_rung_compiles_to_wgmma_and_bulk_tensor_copies():
    """What v14's Triton side relies on the compiler for: TMA copies and wgmma in its PTX."""
    from implementations import v14_wgmma_tma as v14

    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("wgmma is Hopper's (sm_90a)")
    a = torch.randn(512, 512, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(512, 512, device="cuda", dtype=torch.bfloat16)
    ptx = v14.wgmma_tma_triton(a, a, c)().asm["ptx"]
    assert "wgmma.mma_async" in ptx and "cp.async.bulk.tensor" in ptx
