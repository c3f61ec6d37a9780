"""v04, broken on purpose: its Triton race cannot show in the interpreter (the GPU tests check it is caught)."""

import pytest

from implementations.core import bench

from ..helpers import AWKWARD_SHAPES, checked_run, param_id


@pytest.mark.parametrize("shape", AWKWARD_SHAPES, ids=param_id)
@pytest.mark.parametrize("config", [{"TILE": 16}, {"TILE": 32}], ids=param_id)
def test_triton_race_cannot_show_in_the_interpreter(config, shape, device):
    """The interpreter runs programs one after another, so v04's lost updates never happen there."""
    if device.type == "cuda":
        pytest.skip("on a GPU the race shows: tests/ladder/test_large_shapes.py checks that it is caught")
    from implementations.v04_smem_no_sync import VARIANT

    result = checked_run(VARIANT, "triton", shape, device, **config)
    assert result.status == bench.STATUS_RACE_HID, (result.error, result.note)
