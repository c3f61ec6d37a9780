"""Every rung against the float64 reference on awkward shapes.

Triton rungs run wherever the tests run: compiled on a GPU, in Triton's interpreter on a CPU-only
machine. CUDA C rungs need a GPU (marker `gpu`).
"""

import importlib

import pytest

from implementations.core import bench
from implementations.core.check import PRECISIONS

from .helpers import (AWKWARD_SHAPES, INTERPRETER_BF16, candidate, checked_run, gpu_skip_reason, param_id,
                      rung_configs)

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


@pytest.mark.parametrize("shape", AWKWARD_SHAPES, ids=param_id)
@pytest.mark.parametrize("config", [{"TILE": 16}, {"TILE": 32}], ids=param_id)
def test_triton_race_cannot_show_in_the_interpreter(config, shape, device):
    """The interpreter runs programs one after another, so v04's lost updates never happen there."""
    if device.type == "cuda":
        pytest.skip("on a GPU the race shows: tests/test_gpu.py checks that it is caught")
    from implementations.v04_smem_no_sync import VARIANT

    result = checked_run(VARIANT, "triton", shape, device, **config)
    assert result.status == bench.STATUS_RACE_HID, (result.error, result.note)


@pytest.mark.parametrize("shape", [*AWKWARD_SHAPES, (1100, 70, 20)], ids=param_id)
def test_every_triton_autotune_config_matches_reference(shape, device):
    """Whichever config v11's search picks on some GPU has been checked: all of them, here. (1100 rows
    make several GROUP_M groups, the last one short.)"""
    from implementations import v11_autotuned as v11

    for config in v11.TRITON_CONFIGS:
        result = bench.measure(
            rung="v11", name="autotuned", config=v11.describe(config), impl="triton", precision=PRECISIONS["fp32"],
            shape=shape, device=device, seed=11,
            prepare=lambda a, b, config=config: candidate(a, b, lambda c: v11.launch_config(a, b, c, config)))
        assert result.status == bench.STATUS_OK, (v11.describe(config), result.error, result.bound, result.note)


@pytest.mark.parametrize("module, dtype", [("v15_warp_specialized", "fp16"), ("v16_wgmma_tf32", "tf32")])
@pytest.mark.parametrize("shape", [*AWKWARD_SHAPES, (300, 600, 70)], ids=param_id)
def test_every_hopper_triton_config_matches_reference(shape, device, module, dtype):
    """v15's and v16's Triton searches may pick any of their configs on some GPU: all of them are checked."""
    from implementations.v11_autotuned import describe

    rung = importlib.import_module(f"implementations.{module}")
    for config in rung.TRITON_CONFIGS:
        result = bench.measure(
            rung=rung.VARIANT.tag, name=rung.VARIANT.name, config=describe(config), impl="triton",
            precision=PRECISIONS[dtype], shape=shape, device=device, seed=15,
            prepare=lambda a, b, config=config: candidate(a, b, lambda c: rung.launch_config(a, b, c, config)))
        assert result.status == bench.STATUS_OK, (describe(config), result.error, result.bound, result.note)
