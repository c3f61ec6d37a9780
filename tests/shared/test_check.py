"""The check layer must catch what it exists to catch; a check that cannot fail is no check."""

import math

import pytest
import torch

from implementations import select
from implementations.core import bench, traffic
from implementations.core.check import PRECISIONS, compare, make_inputs, poison, reference
from implementations.core.registry import Prepared
from implementations.core.search import TunedRun
from implementations.core.validate import Refused

FP32 = PRECISIONS["fp32"]


def product(M=17, N=33, K=40, seed=0):
    a, b = make_inputs(M, N, K, FP32, "cpu", seed)
    return a, b, reference(a, b)


def test_a_correct_fp32_product_passes():
    a, b, ref = product()
    outcome = compare(a @ b, ref, FP32.bound(40))
    assert outcome.ok and outcome.error < 1e-6 and outcome.unwritten == 0


def test_all_zero_output_fails_with_error_one():
    a, b, ref = product()
    outcome = compare(torch.zeros_like(a @ b), ref, FP32.bound(40))
    assert not outcome.ok and outcome.error == pytest.approx(1.0)


def test_one_wrong_element_fails():
    a, b, ref = product()
    c = a @ b
    c[5, 7] += c.abs().mean()  # one element off by a typical element's size
    assert not compare(c, ref, FP32.bound(40)).ok


def test_one_unwritten_element_fails_and_is_counted():
    a, b, ref = product()
    c = torch.empty_like(a @ b)
    poison(c)
    c.copy_(a @ b)
    c[16, 32] = float("nan")  # as if the last thread never stored
    outcome = compare(c, ref, FP32.bound(40))
    assert not outcome.ok and outcome.unwritten == 1 and math.isnan(outcome.error)


def test_poison_fills_with_nan():
    c = torch.zeros(3, 4)
    poison(c)
    assert torch.isnan(c).all()


def test_inputs_are_fresh_per_seed_and_reproducible():
    a1, b1 = make_inputs(8, 8, 8, FP32, "cpu", 1)
    a2, _ = make_inputs(8, 8, 8, FP32, "cpu", 2)
    a1_again, b1_again = make_inputs(8, 8, 8, FP32, "cpu", 1)
    assert not torch.equal(a1, a2)
    assert torch.equal(a1, a1_again) and torch.equal(b1, b1_again)
    assert a1.std() > 0.5, "random normal data, never zeros or ones alone"


def test_zero_reference_only_accepts_exact_zero():
    ref = torch.zeros(3, 3, dtype=torch.float64)
    assert compare(torch.zeros(3, 3), ref, 1e-6).ok
    assert not compare(torch.full((3, 3), 1e-30), ref, 1e-6).ok


def test_bounds_follow_each_precisions_rounding():
    assert FP32.bound(1) < 1e-6 < FP32.bound(4096) < 3e-5
    assert PRECISIONS["tf32"].bound(4096) == pytest.approx(4 * (2**-11 + 2**-24) + 4 * 64 * 2**-24)
    assert PRECISIONS["fp16"].bound(4096) < PRECISIONS["bf16"].bound(4096) < 2e-2


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_low_precision_output_rounding_fits_its_bound_and_fp32_would_not(dtype):
    """torch's own fp16/bf16 product passes at its precision and fails the fp32 bound: the bounds separate."""
    p = PRECISIONS[dtype]
    a, b = make_inputs(64, 64, 256, p, "cpu", 3)
    c = (a.float() @ b.float()).to(p.dtype)
    assert compare(c, reference(a, b), p.bound(256)).ok
    assert not compare(c, reference(a, b), FP32.bound(256)).ok


def _fake(output_fn):
    """A prepare() whose run writes output_fn(a, b) into C: a stand-in kernel on the CPU."""
    def prepare(a, b):
        c = torch.empty(a.shape[0], b.shape[1])

        def run():
            c.copy_(output_fn(a, b))

        return Prepared(run, c)

    return prepare


def _measure(prepare, monkeypatch, expect_wrong=""):
    timed = []
    monkeypatch.setattr(bench, "time_ms", lambda fn, options, device: timed.append(fn) or [1.0, 1.0, 1.0])
    result = bench.measure(
        rung="v00", name="fake", config="", impl="cuda", precision=FP32, shape=(8, 9, 10),
        device=torch.device("cpu"), seed=1, prepare=prepare, expect_wrong=expect_wrong,
        timing=bench.TimingOptions(), cublas_ms=2.0)
    return result, timed


def test_a_correct_result_is_timed(monkeypatch):
    result, timed = _measure(_fake(lambda a, b: a @ b), monkeypatch)
    assert result.status == bench.STATUS_OK and len(timed) == 1
    assert result.ms == 1.0 and result.pct_cublas == pytest.approx(200.0)


def test_a_wrong_result_is_never_timed(monkeypatch):
    result, timed = _measure(_fake(lambda a, b: a @ b + 1), monkeypatch)
    assert result.status == bench.STATUS_WRONG and not timed and result.ms is None


@pytest.mark.parametrize("output, status", [
    (lambda a, b: a @ b + 1, bench.STATUS_EXPECTED_WRONG),
    (lambda a, b: a @ b, bench.STATUS_RACE_HID),
])
def test_a_rung_broken_on_purpose_is_never_timed(output, status, monkeypatch):
    result, timed = _measure(_fake(output), monkeypatch, expect_wrong="a race")
    assert result.status == status and not timed


def test_a_failing_implementation_is_recorded_not_raised(monkeypatch):
    def prepare(a, b):
        raise RuntimeError("nvrtc: error: something\nmore detail")

    result, timed = _measure(prepare, monkeypatch)
    assert result.status == bench.STATUS_ERROR and result.note == "RuntimeError: nvrtc: error: something"
    assert not timed


def test_a_refused_launch_is_reported_as_refused_not_as_an_error(monkeypatch):
    def prepare(a, b):
        raise Refused("a block of 64×64 = 4096 threads cannot launch")

    result, timed = _measure(prepare, monkeypatch)
    assert result.status == bench.STATUS_REFUSED and "4096 threads" in result.note and not timed


def test_the_ratios_and_the_traffic_of_a_timed_result(monkeypatch):
    timed = []
    monkeypatch.setattr(bench, "time_ms", lambda fn, options, device: timed.append(fn) or [2.0, 2.0, 2.0])
    result = bench.measure(
        rung="v00", name="fake", config="", impl="cuda", precision=FP32, shape=(8, 9, 10),
        device=torch.device("cpu"), seed=1, prepare=_fake(lambda a, b: a @ b), timing=bench.TimingOptions(),
        cublas_ms=1.0, cpu_ms=50.0, tile_of=lambda run: (4, 8))
    assert result.pct_cublas == pytest.approx(50.0) and result.speedup_cpu == pytest.approx(25.0)
    # A (8×10) read once per block column (ceil(9/8) = 2), B (10×9) once per block row (8/4 = 2), C written once
    assert result.tile == "4x8" and result.traffic_bytes == 4 * (8 * 10 * 2 + 10 * 9 * 2) + 4 * 8 * 9


def test_a_run_that_reads_the_device_on_the_host_is_checked_but_not_timed_in_a_graph(monkeypatch):
    timed = []
    monkeypatch.setattr(bench, "time_ms", lambda fn, options, device: timed.append(options.mode) or [2.0])

    def prepare(a, b):
        return _fake(lambda a, b: a @ b)(a, b)._replace(host_sync="it reads the offsets on the host")

    for mode in ("graph", "events"):
        result = bench.measure(rung="v00", name="fake", config="", impl="grouped_mm", precision=FP32, shape=(8, 9, 10),
                               device=torch.device("cpu"), seed=1, prepare=prepare,
                               timing=bench.TimingOptions(mode=mode))
        if mode == "graph":
            assert result.status == bench.STATUS_REFUSED and "checked ok" in result.note
            assert "offsets on the host" in result.note and not timed
    assert result.status == bench.STATUS_OK and timed == ["events"]


def test_the_cpu_timer_takes_at_least_min_runs_samples():
    calls = []
    samples = bench.time_cpu_ms(lambda: calls.append(1), bench.TimingOptions(rep_ms=0, min_runs=4))
    assert len(samples) == 4 and len(calls) == 5 and all(s >= 0 for s in samples)  # one warm-up call


@pytest.mark.parametrize("tile, flop_per_byte", [
    ((1, 1), 2 * 64**3 / (4 * 2 * 64**3 + 4 * 64**2)),  # naive: 2·N³ loads
    ((16, 16), 2 * 64**3 / (4 * 2 * 64**3 / 16 + 4 * 64**2)),  # tiling: 2·N³/TILE
])
def test_traffic_model(tile, flop_per_byte):
    assert traffic.intensity(64, 64, 64, tile, 4, 4) == pytest.approx(flop_per_byte)


def test_the_tile_behind_the_traffic_model():
    v03, v01, v11 = select("3")[0], select("1")[0], select("11")[0]
    assert traffic.run_tile(v03, {"TILE": 16}, None) == (16, 16)
    assert traffic.run_tile(v03, {"BM": 64, "BN": 32, "TM": 8}, None) == (64, 32)
    assert traffic.run_tile(v01, {}, None) == (1, 1)  # declared by the rung: no reuse
    assert traffic.run_tile(v11, {}, None) is None  # autotuned, not run yet
    chosen = TunedRun(lambda: None, lambda: "", lambda: (128, 256))
    assert traffic.run_tile(v11, {}, chosen) == (128, 256)
    assert traffic.run_tile(None, {}, lambda: None) is None  # cuBLAS
