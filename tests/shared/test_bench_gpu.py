"""GPU: the baseline is what it claims to be, and both timing modes record what the reports show."""

import pytest
import torch

from implementations import select
from implementations.core import bench
from implementations.core.check import PRECISIONS, make_inputs, reference
from implementations.core.env import set_cublas_math

pytestmark = pytest.mark.gpu


def test_cublas_baseline_is_ieee_fp32_and_tf32_would_fail_the_fp32_check():
    fp32 = PRECISIONS["fp32"]
    a, b = make_inputs(2048, 2048, 2048, fp32, "cuda", 5)
    ref = reference(a, b)
    try:
        set_cublas_math(tf32=True)
        tf32_error = ((a @ b).double() - ref).norm() / ref.norm()
    finally:
        set_cublas_math(tf32=False)
    ieee_error = ((a @ b).double() - ref).norm() / ref.norm()
    assert ieee_error < fp32.bound(2048) < tf32_error


@pytest.mark.parametrize("mode", ["events", "graph"])
@pytest.mark.parametrize("lang", ["cuda", "triton"])
def test_timing_records_median_spread_and_resources(mode, lang):
    v03 = select("smem_tiling")[0]
    options = bench.TimingOptions(mode=mode, warmup_ms=2, rep_ms=20, min_runs=5)
    result = bench.measure(
        rung="v03", name=v03.name, config="TILE=32", impl=lang, precision=PRECISIONS["fp32"],
        shape=(512, 512, 512), device=torch.device("cuda"), seed=1,
        prepare=lambda a, b: v03.prepare(lang, a, b, TILE=32), timing=options, cublas_ms=1.0)
    assert result.status == bench.STATUS_OK, result.note
    assert 0 < result.ms_p20 <= result.ms <= result.ms_p80 and result.runs >= 5 and result.tflops > 0
    assert result.pct_cublas == pytest.approx(100.0 / result.ms)
    assert result.registers > 0 and result.local_bytes == 0
    if lang == "cuda":
        assert result.smem_bytes == 2 * 32 * 32 * 4, "CuPy reports the two static TILE×TILE fp32 tiles"
