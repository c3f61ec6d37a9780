"""The ladder's structure: numbering, one .cu per module and back, docstrings, selection."""

import inspect
import re
import sys

import pytest
from triton.experimental.gluon._runtime import GluonJITFunction
from triton.runtime.jit import KernelInterface

from implementations import all_variants, select
from implementations.core.cuda_c import KERNEL_DIR
from implementations.core.registry import Variant

PACKAGE_DIR = KERNEL_DIR.parent / "implementations"


def test_rungs_are_numbered_from_one_without_gaps():
    numbers = [v.number for v in all_variants()]
    assert numbers == list(range(1, len(numbers) + 1))


def test_every_rung_module_has_its_cu_file_and_back():
    modules = {p.stem for p in PACKAGE_DIR.glob("v[0-9][0-9]_*.py")}
    sources = {p.stem for p in KERNEL_DIR.glob("v[0-9][0-9]_*.cu")}
    assert modules == sources
    assert modules == {v.stem for v in all_variants()}
    for v in all_variants():
        assert v.cuda_source is not None and v.cuda_source.path.is_file()


@pytest.mark.parametrize("variant", all_variants(), ids=lambda v: v.stem)
def test_rung_is_documented_in_both_languages(variant):
    doc = variant.doc
    assert "CUDA C and Triton side by side" in doc, "the docstring maps CUDA concepts to Triton's"
    assert f"kernels_cuda/{variant.stem}.cu" in doc
    assert "What it should reach" in doc or variant.expect_wrong
    cu = variant.cuda_source.path.read_text()
    assert cu.startswith(f"// {variant.tag} "), "the .cu opens with what it is"
    assert "C (M×N) = A (M×K) · B (K×N)" in cu, "shapes are written at the top of every kernel file"


def _defined_in(kernel) -> str:
    """The module that defines a Triton kernel (through an autotuner's wrapping, if any)."""
    while hasattr(kernel, "fn"):
        kernel = kernel.fn
    return kernel.__module__


def triton_kernel_home(variant) -> str:
    """The module whose Triton kernel this rung launches: its own, or the earlier rung's it reuses
    (a kernel it imports, else the latest rung whose launch helpers it calls)."""
    module = sys.modules[variant.module]
    kernels = {_defined_in(obj) for obj in vars(module).values() if isinstance(obj, KernelInterface)}
    if module.__name__ in kernels:
        return module.__name__
    if kernels:
        assert len(kernels) == 1, f"{variant.stem} defines no Triton kernel and imports those of {sorted(kernels)}"
        return kernels.pop()
    # No kernel imported: the latest rung whose launch helpers it calls (which build on the earlier rungs')
    homes = {obj.__module__ for obj in vars(module).values()
             if callable(obj) and getattr(obj, "__module__", "").startswith("implementations.v")} - {module.__name__}
    assert homes, f"{variant.stem} defines no Triton kernel and reuses none"
    return max(homes)


def gluon_sources(module) -> list[str]:
    """The source of each Gluon function the module defines."""
    return [inspect.getsource(obj.fn) for obj in vars(module).values()
            if isinstance(obj, GluonJITFunction) and obj.fn.__module__ == module.__name__]


@pytest.mark.parametrize("variant", all_variants(), ids=lambda v: v.stem)
def test_cuda_and_triton_share_numbered_phase_comments(variant):
    """Same numbered phases in the .cu and in the Triton kernel's module (a rung whose Triton side
    reuses an earlier rung's kernel unchanged is compared with that kernel). A .cu with one kernel per
    precision (v13) repeats its phases once per kernel body (v15's two kernels, a cluster launch and a plain one,
    share one body). A Gluon kernel (v11) spells out the whole
    kernel, so its phases are those of the .cu with the .cu files it includes. A .cu that defines no kernel
    and instantiates the kernel of the rung it includes (v17) has that kernel's phases."""
    cu = variant.cuda_source.path.read_text()
    if "__global__" not in cu:
        cu = included_rungs(cu)
    module = sys.modules[triton_kernel_home(variant)]
    py = inspect.getsource(module)
    gluon = gluon_sources(module)
    for source in gluon:
        py = py.replace(source, "")
    cuda_phases = re.findall(r"// ---- (\d+)\. ", cu)
    triton_phases = re.findall(r"# ---- (\d+)\. ", py)
    bodies = cuda_phases.count(triton_phases[0]) if triton_phases else 0
    assert triton_phases and bodies >= 1 and cuda_phases == triton_phases * bodies
    if gluon:
        included = included_rungs(cu)
        gluon_phases = set(re.findall(r"# ---- (\d+)\. ", "".join(gluon)))
        assert gluon_phases == set(re.findall(r"// ---- (\d+)\. ", cu + included))


def test_rungs_that_reuse_a_triton_kernel_say_so():
    for v in all_variants():
        home = triton_kernel_home(v)
        if home != v.module:
            assert f"{home.rpartition('.')[2][:3]}'s `" in v.doc, f"{v.stem} must name the kernel it reuses"


def included_rungs(cu: str) -> str:
    """The text of the earlier rungs' .cu files a .cu includes."""
    return "".join((KERNEL_DIR / name).read_text() for name in re.findall(r'#include "(v\d\d_\w+\.cu)"', cu))


@pytest.mark.parametrize("variant", all_variants(), ids=lambda v: v.stem)
def test_cuda_kernel_names_are_in_the_source(variant):
    """Every kernel the launcher names is defined in the rung's .cu, or in an earlier rung's .cu it includes and
    instantiates with types of its own (v17: v15's kernel with its epilogues)."""
    cu = variant.cuda_source.path.read_text()
    cu += included_rungs(cu)
    for kernel in variant.cuda_source.kernels:
        attributes = r"((__launch_bounds__|__cluster_dims__)\(.*?\)\s+)*"
        assert re.search(rf"__global__ void {attributes}{re.escape(kernel.split('<')[0])}\(", cu)


def test_only_the_race_rung_is_broken_on_purpose():
    assert [v.stem for v in all_variants() if v.expect_wrong] == ["v04_smem_no_sync"]


ALL = [v.number for v in all_variants()]


@pytest.mark.parametrize("spec, expected", [
    (None, ALL), ("", ALL), ("3", [3]), ("v03", [3]), ("smem_tiling", [3]), ("v03_smem_tiling", [3]),
    ("1-3", [1, 2, 3]), ("v02-v04", [2, 3, 4]), ("1,3-4", [1, 3, 4]), ("4,1", [1, 4]), ("10-11", [10, 11]),
])
def test_select(spec, expected):
    assert [v.number for v in select(spec)] == expected


@pytest.mark.parametrize("spec", ["99", "nope", "50-99", " , ", "3-"])
def test_select_rejects_unknown_rungs(spec):
    with pytest.raises(ValueError, match="no rung matches"):
        select(spec)


def test_variant_refuses_badly_named_modules_and_unknown_dtypes():
    with pytest.raises(ValueError, match="vNN_name"):
        Variant("implementations.tiling", title="", dtypes=("fp32",), cuda=None, triton=None, cuda_source=None)
    with pytest.raises(ValueError, match="unknown dtypes"):
        Variant("implementations.v99_x", title="", dtypes=("fp4",), cuda=None, triton=None, cuda_source=None)
