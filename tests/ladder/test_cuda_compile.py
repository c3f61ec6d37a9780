"""Every kernel each .cu instantiates compiles with nvcc for sm_80 and sm_90, with no spills and no stack frame (no GPU
needed): an accumulator array indexed at run time lives on the stack, where wgmma's asynchronous writes to it are
lost."""

import shutil

import pytest

from implementations import all_variants
from implementations.core.cuda_c import compile_report

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")

SOURCES = [(v, arch) for v in all_variants() if v.cuda_source for arch in v.cuda_source.archs]


@pytest.mark.parametrize("variant, arch", SOURCES, ids=lambda x: getattr(x, "stem", x))
def test_compiles_every_launchable_kernel_without_spills(variant, arch):
    reports = compile_report(variant.cuda_source, arch)
    assert [r.kernel for r in reports] == list(variant.cuda_source.kernels), "exactly the kernels the launcher uses"
    for r in reports:
        assert r.arch == arch
        assert r.spills == 0, f"{r.kernel} spills {r.spill_stores}/{r.spill_loads} bytes on {arch}"
        assert r.stack_bytes == 0, f"{r.kernel} has a {r.stack_bytes}-byte stack frame on {arch}"
        assert 0 < r.registers <= 255


def test_shared_memory_grows_with_the_tile():
    """v03 stages two TILE×TILE fp32 tiles: ptxas must report exactly 2·TILE²·4 bytes for each."""
    v03 = next(v for v in all_variants() if v.name == "smem_tiling")
    smem = {r.kernel: r.smem_bytes for r in compile_report(v03.cuda_source, "sm_90")}
    assert smem == {f"smem_tiling<{t}>": 2 * t * t * 4 for t in (8, 16, 32)}
