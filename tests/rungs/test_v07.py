"""v07 vectorized loads: the float4 and scalar paths agree, and Triton's 16-byte loads come from specialization."""

import pytest
import torch

from implementations import select

pytestmark = pytest.mark.gpu


def test_cuda_float4_path_and_scalar_path_agree_with_an_offset_operand():
    """`aligned` is 0 when a base pointer is not 16-byte aligned (a view one float in): the scalar path."""
    from implementations.core.cuda_c import rows_aligned

    storage = torch.randn(1 + 256 * 256, device="cuda")
    a = storage[1:].view(256, 256)
    b = torch.randn(256, 256, device="cuda")
    assert rows_aligned(a, b) == 0 and rows_aligned(b) == 1
    for v in select("7-11"):
        c = v.matmul("cuda", a, b, **v.configs[0])
        torch.cuda.synchronize()
        assert torch.allclose(c, a @ b, rtol=1e-4, atol=1e-3), v.stem


def test_triton_vector_loads_come_from_argument_specialization():
    """v07's docstring: Triton emits 16-byte loads when it can prove alignment from the arguments it
    specializes; jitted with specialization off, the same kernel loads 4 bytes at a time."""
    import re

    from implementations.core.triton_util import unspecialized
    from implementations.v03_smem_tiling import smem_tiling_kernel

    a, b, c = (torch.randn(512, 512, device="cuda") for _ in range(3))
    args = (a, b, c, 512, 512, 512, 512, 1, 512, 1, 512, 1)
    knobs = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, num_warps=8, num_stages=1)
    vec = re.compile(r"ld\.global(\.\w+)*\.v4")
    counts = {}
    for label, kernel in (("specialized", smem_tiling_kernel), ("unspecialized", unspecialized(smem_tiling_kernel))):
        counts[label] = len(vec.findall(kernel[(4, 4)](*args, **knobs).asm["ptx"]))
    print(f"ld.global.v4 in the PTX of v07's Triton kernel: {counts}")
    assert counts["specialized"] > 0 and counts["unspecialized"] == 0
