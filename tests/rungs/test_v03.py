"""v03 shared-memory tiling: what its docstring claims Triton does by itself, and CUDA's TILE 64 refusal."""

import pytest
import torch

from implementations import select

pytestmark = pytest.mark.gpu


def test_cuda_tile_64_is_refused_on_the_gpu_and_the_context_survives():
    v03 = select("smem_tiling")[0]
    a, b = torch.randn(128, 128, device="cuda"), torch.randn(128, 128, device="cuda")
    with pytest.raises(ValueError, match="4096 threads cannot launch"):
        v03.matmul("cuda", a, b, TILE=64)
    c = v03.matmul("cuda", a, b, TILE=32)
    torch.cuda.synchronize()
    assert torch.allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_triton_places_the_barriers_itself():
    """v03's Triton kernel has no barrier in its source, yet its PTX synchronises the CTA."""
    v03 = select("smem_tiling")[0]
    a, b = torch.randn(256, 256, device="cuda"), torch.randn(256, 256, device="cuda")
    prepared = v03.prepare("triton", a, b, TILE=32)
    kernel = prepared.run()
    assert "bar.sync" in kernel.asm["ptx"] or "barrier.sync" in kernel.asm["ptx"]


def test_triton_pipelines_the_tile_loads_by_itself():
    """v03's docstring claims Triton stages the tiles through shared memory with cp.async and, with its
    default num_stages, multi-buffers them: more shared memory than with the pipeline switched off."""
    from implementations.v03_smem_tiling import smem_tiling_kernel

    a, b = torch.randn(256, 256, device="cuda"), torch.randn(256, 256, device="cuda")
    c = torch.empty(256, 256, device="cuda")
    shared, ptx = {}, {}
    for stages in (1, 3):
        kernel = smem_tiling_kernel[(8, 8)](
            a, b, c, 256, 256, 256, 256, 1, 256, 1, 256, 1, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, num_stages=stages)
        shared[stages], ptx[stages] = kernel.metadata.shared, kernel.asm["ptx"]
    print(f"Triton v03 TILE=32 shared memory by num_stages: {shared}; "
          f"cp.async in PTX: {[p.count('cp.async') for p in ptx.values()]}")
    assert shared[3] > shared[1] > 0
    assert "cp.async" in ptx[3]
