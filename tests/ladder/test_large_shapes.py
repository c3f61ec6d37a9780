"""GPU: every rung on large and ragged-large shapes, and the broken-on-purpose rungs caught every time."""

import pytest

from implementations.core import bench

from ..helpers import checked_run, gpu_skip_reason, param_id, rung_configs

pytestmark = pytest.mark.gpu

LARGE_SHAPES = [(1024, 1024, 1024), (4096, 4096, 4096), (1000, 1531, 777), (2048, 384, 4100)]
CORRECT = [p for p in rung_configs() if not p[0].expect_wrong]
RACE = [p for p in rung_configs() if p[0].expect_wrong]
RACE_SHAPES = [(1024, 1024, 1024), (4096, 4096, 4096)]
RACE_REPEATS = 5


@pytest.mark.parametrize("shape", LARGE_SHAPES, ids=param_id)
@pytest.mark.parametrize("variant, lang, config, dtype", CORRECT, ids=param_id)
def test_rung_matches_reference_on_large_shapes(variant, lang, config, dtype, shape):
    if gpu_skip_reason(variant, lang, dtype):
        pytest.skip(gpu_skip_reason(variant, lang, dtype))
    result = checked_run(variant, lang, shape, "cuda", dtype, **config)
    assert result.status == bench.STATUS_OK, (result.error, result.bound, result.unwritten, result.note)


@pytest.mark.parametrize("shape", RACE_SHAPES, ids=param_id)
@pytest.mark.parametrize("variant, lang, config, dtype", RACE, ids=param_id)
def test_the_race_is_caught_every_time(variant, lang, config, dtype, shape):
    """v04 must be reported wrong on every one of several fresh runs (its docstring says why it shows)."""
    for _ in range(RACE_REPEATS):
        result = checked_run(variant, lang, shape, "cuda", **config)
        assert result.status == bench.STATUS_EXPECTED_WRONG, (result.error, result.bound)
        assert not result.error <= 100 * result.bound, "a race moves the error far past rounding (or to NaN)"
