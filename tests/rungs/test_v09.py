"""v09 double buffering: its Triton side is v08's with num_stages=3."""

import pytest
import torch

from implementations import select

pytestmark = pytest.mark.gpu


def _ptx_of(variant, shape=(512, 512, 512)):
    M, N, K = shape
    a, b = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
    kernel = variant.prepare("triton", a, b, **variant.configs[0]).run()
    return kernel


def test_triton_double_buffers_with_num_stages():
    """v09's Triton side is v08's with num_stages=3: twice the shared memory, cp.async in its PTX."""
    k08, k09 = _ptx_of(select("8")[0]), _ptx_of(select("9")[0])
    print(f"Triton shared memory: v08 {k08.metadata.shared} B, v09 {k09.metadata.shared} B")
    assert k09.metadata.shared >= 2 * k08.metadata.shared > 0
    assert "cp.async" in k09.asm["ptx"] and "cp.async" not in k08.asm["ptx"]
