"""Every rung against the float64 reference on awkward shapes (registry-wide: a new rung is picked up).

Triton rungs run wherever the tests run: compiled on a GPU, in Triton's interpreter on a CPU-only
machine. CUDA C rungs need a GPU (marker `gpu`).
"""

import pytest

from implementations.core import bench
from implementations.core.check import INPUTS

from ..helpers import (AWKWARD_SHAPES, INTERPRETER_BF16, INTERPRETER_BF16_ROUNDING, checked_run, exact_inputs,
                       gpu_skip_reason, param_id, rung_configs, skip_unless_runnable)

CORRECT = [p for p in rung_configs() if not p[0].expect_wrong]


@pytest.mark.parametrize("shape", AWKWARD_SHAPES, ids=param_id)
@pytest.mark.parametrize("variant, lang, config, dtype", [p for p in CORRECT if p[1] == "triton"], ids=param_id)
def test_triton_rung_matches_reference(variant, lang, config, dtype, shape, device):
    if device.type == "cpu" and dtype == "bf16":
        pytest.skip(INTERPRETER_BF16)
    if device.type == "cuda" and gpu_skip_reason(variant, lang, dtype):
        pytest.skip(gpu_skip_reason(variant, lang, dtype))
    result = checked_run(variant, lang, shape, device, dtype, **config)
    assert result.status == bench.STATUS_OK, (result.error, result.bound, result.unwritten, result.note)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", AWKWARD_SHAPES, ids=param_id)
@pytest.mark.parametrize("variant, lang, config, dtype", [p for p in CORRECT if p[1] == "cuda"], ids=param_id)
def test_cuda_rung_matches_reference(variant, lang, config, dtype, shape):
    if gpu_skip_reason(variant, lang, dtype):
        pytest.skip(gpu_skip_reason(variant, lang, dtype))
    result = checked_run(variant, lang, shape, "cuda", dtype, **config)
    assert result.status == bench.STATUS_OK, (result.error, result.bound, result.unwritten, result.note)


@pytest.mark.parametrize("inputs", [i for i in INPUTS if i != "normal"])
@pytest.mark.parametrize("variant, lang, config, dtype", CORRECT, ids=param_id)
def test_rung_passes_with_inputs_that_do_not_flatter(variant, lang, config, dtype, inputs, device):
    """All-positive, wide-range and small-integer inputs (exact: the output must be too), on a ragged shape."""
    skip_unless_runnable(variant, lang, dtype, device)
    if inputs == "integers" and exact_inputs(dtype, device) != "integers":
        pytest.skip(INTERPRETER_BF16_ROUNDING)
    result = checked_run(variant, lang, (97, 61, 130), device, dtype, inputs, **config)
    assert result.status == bench.STATUS_OK, (result.note, result.worst)
