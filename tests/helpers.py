"""What several test files share: the awkward shapes and one checked run through the real path."""

import itertools

import pytest
import torch

from implementations.core import bench
from implementations.core.check import PRECISIONS

# Awkward on purpose: a single element, primes, shapes that are not multiples of any tile, non-square,
# and one multiple of every tile.
AWKWARD_SHAPES = [(1, 1, 1), (17, 33, 5), (97, 61, 130), (33, 128, 47), (64, 64, 64)]

_seeds = itertools.count(1000)


def checked_run(variant, lang, shape, device, dtype="fp32", inputs="normal", layout="nn", batch=0,
                epilogue="none", **config) -> bench.Result:
    """Fresh inputs (and bias), NaN-poisoned output, one run, both checks, a second run on new inputs checked
    again: what compare.py does, minus timing."""
    return bench.measure(
        rung=variant.tag, name=variant.name, config=str(config), impl=lang, precision=PRECISIONS[dtype],
        shape=shape, device=torch.device(device), seed=next(_seeds),
        prepare=lambda a, b, **fused: variant.prepare(lang, a, b, **fused, **config),
        expect_wrong=variant.expect_wrong, inputs=inputs, layout=layout, batch=batch, epilogue=epilogue)


def rung_configs(langs=("cuda", "triton")):
    """(variant, lang, config, dtype) for every rung, language, declared config and dtype, as pytest params."""
    from implementations import all_variants

    return [(v, lang, dict(c), d) for v in all_variants() for lang in langs if getattr(v, lang)
            for c in v.configs for d in v.dtypes]


def gpu_skip_reason(variant, lang, dtype) -> str:
    """Why this GPU cannot run it (compute capability, an sm_90a build), as compare.py says; "" if it can."""
    from implementations.core.cli import Task, skip_reason

    return skip_reason(Task(variant, {}, lang, (1, 1, 1)), dtype, torch.device("cuda"))


INTERPRETER_BF16 = ("Triton's interpreter computes with numpy, which has no bf16 type: bf16 runs are checked "
                    "on the GPU only")


INTERPRETER_BF16_ROUNDING = ("Triton's interpreter rounds fp32 to bf16 by truncation, not to nearest even as the GPU "
                             "does: a bf16 C of integer inputs (fp8's) is checked bit for bit on the GPU only")


def exact_inputs(dtype: str, device) -> str:
    """"integers" (C exact to the bit), or "normal" where C is bf16 in Triton's interpreter (fp8's C): see
    INTERPRETER_BF16_ROUNDING."""
    return "normal" if device.type == "cpu" and PRECISIONS[dtype].c_dtype == torch.bfloat16 else "integers"


def param_id(value):
    if hasattr(value, "stem"):
        return value.stem
    if isinstance(value, dict):
        return ",".join(f"{k}{v}" for k, v in value.items()) or "default"
    if isinstance(value, tuple):
        return "x".join(map(str, value))
    return None


def candidate(a, b, launcher):
    """A Prepared for one autotune candidate: `launcher(c)` binds it to a, b and a fresh c."""
    from implementations.core.check import output_dtype
    from implementations.core.registry import Prepared

    batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    c = torch.empty(*batch, a.shape[-2], b.shape[-1], device=a.device, dtype=output_dtype(a.dtype))
    return Prepared(launcher(c), c)


def skip_unless_batchable(dtype) -> None:
    """Skip, with the reason, a batch of a dtype that scales single products only (per-row fp8 scales)."""
    from implementations.core.check import PRECISIONS

    if PRECISIONS[dtype].scaled == "rowwise":
        pytest.skip("per-row scales scale single products, as torch._scaled_mm does: a batch is refused "
                    "(tests/rungs/test_v19.py)")


def skip_unless_runnable(variant, lang, dtype, device) -> None:
    """Skip, with the reason, a rung's language and dtype that cannot run here: CUDA C without a GPU, bf16 in
    Triton's interpreter, or what this GPU cannot run."""
    if lang == "cuda" and device.type != "cuda":
        pytest.skip("needs a CUDA device; none was found")
    if device.type == "cpu" and dtype == "bf16":
        pytest.skip(INTERPRETER_BF16)
    if device.type == "cuda" and gpu_skip_reason(variant, lang, dtype):
        pytest.skip(gpu_skip_reason(variant, lang, dtype))
