"""Triton launches bound once (core/triton_util.prebound): the first call goes through `kernel[grid]`, later ones
hand the same arguments, in the kernel's parameter order with its defaults, straight to the compiled kernel;
on a GPU every tuned rung's Triton candidates stay right launch after launch."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from implementations import all_variants
from implementations.core.check import PRECISIONS, check, make_inputs, poison, scales_argument
from implementations.core.triton_util import prebound

from ..helpers import gpu_skip_reason


class FakeCompiled:
    """What `kernel[grid](...)` returns on a GPU: a compiled kernel whose `[grid]` is its direct launcher."""

    packed_metadata = ()

    def __init__(self, calls):
        self.calls = calls

    def __getitem__(self, grid):
        return lambda *args: self.calls.append(("direct", grid, args))


class FakeKernel:
    def __init__(self, returns_compiled=True):
        self.calls = []
        self.returns_compiled = returns_compiled

    @staticmethod
    def fn(a, b, n, BLOCK, FLAG=False, extra=7):  # a kernel's parameters: BLOCK and FLAG its constexprs
        pass

    def __getitem__(self, grid):
        def run(*args, **kwargs):
            self.calls.append(("jit", grid, args, kwargs))
            return FakeCompiled(self.calls) if self.returns_compiled else None

        return run


def test_the_first_launch_compiles_and_the_rest_go_straight_to_the_compiled_kernel():
    kernel = FakeKernel()
    launch = prebound(kernel, lambda meta: (meta["n"] // meta["BLOCK"],), "A", "B", 64, BLOCK=16, num_warps=4)
    for _ in range(3):
        launch()
    first, *rest = kernel.calls
    assert first == ("jit", first[1], ("A", "B", 64), {"BLOCK": 16, "num_warps": 4})
    # every parameter in order, defaults filled in, the launch options (num_warps) left to the compiled kernel,
    # the grid computed from the arguments and padded to three dimensions
    assert rest == [("direct", (4, 1, 1), ("A", "B", 64, 16, False, 7))] * 2


def test_under_the_interpreter_every_launch_goes_through_the_kernel():
    kernel = FakeKernel(returns_compiled=False)
    launch = prebound(kernel, (2, 3), "A", "B", 1, BLOCK=16)
    launch()
    launch()
    assert [call[0] for call in kernel.calls] == ["jit", "jit"] and kernel.calls[0][1] == (2, 3)


TRITON_SEARCHES = [(v, s) for v in all_variants() for s in v.searches if s.lang == "triton"]


@pytest.mark.gpu
@pytest.mark.parametrize("variant, tuned", TRITON_SEARCHES, ids=lambda x: getattr(x, "stem", None) or "triton")
def test_every_triton_candidate_is_right_launch_after_launch(variant, tuned):
    """The first launch of a candidate compiles through `kernel[grid]`; the second and third take the direct
    path, each into a NaN-poisoned C."""
    dtype = variant.dtypes[0]
    if gpu_skip_reason(variant, "triton", dtype):
        pytest.skip(gpu_skip_reason(variant, "triton", dtype))
    precision = PRECISIONS[dtype]
    a, b = make_inputs(97, 61, 130, precision, "cuda", 3, layout=variant.layouts.get("triton", ("nn",))[0])
    scaled = scales_argument(precision, "cuda", 3, 97, 61)
    for cand in tuned.candidates:
        c = torch.empty(97, 61, device="cuda", dtype=precision.c_dtype)
        run = tuned.one(a, b, c, cand, **scaled)
        for launch in range(3):
            poison(c)
            run()
            outcome = check(c, a, b, precision, **scaled)
            assert outcome.ok, (tuned.describe(cand), launch, outcome.why())


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU the scripts time kernels (minutes)")
@pytest.mark.parametrize("script, why", [("launch_cost.py", "it times launches on a GPU"),
                                         ("small_probe.py", "it times Hopper kernels")])
def test_the_timing_scripts_say_in_one_line_that_they_need_a_gpu(script, why):
    done = subprocess.run([sys.executable, str(Path(__file__).resolve().parents[2] / "scripts" / script)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [f"{script} needs a CUDA device{' (sm_90)' if 'probe' in script else ''}: {why}"]
