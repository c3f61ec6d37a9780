"""compare.py's command line: parsing, listing, files written as results arrive, interruption, failures."""

import argparse
import csv
import dataclasses
import json
import os

import pytest

import torch

from implementations import select
from implementations.core import bench, cli, report, search, tasks


@pytest.mark.parametrize("text, sizes", [
    ("4096", [(4096, 4096, 4096)]),
    ("512x1024x256", [(512, 1024, 256)]),
    ("1024, 17X33X5", [(1024, 1024, 1024), (17, 33, 5)]),
])
def test_parse_sizes(text, sizes):
    assert cli.parse_sizes(text) == sizes


@pytest.mark.parametrize("text", ["", "0", "12x4", "axbxc", "4x4x-1", "1e3"])
def test_parse_sizes_rejects_nonsense(text):
    with pytest.raises(argparse.ArgumentTypeError):
        cli.parse_sizes(text)


def test_parse_impls():
    assert cli.parse_impls("cuda, Triton") == ("cuda", "triton")
    with pytest.raises(argparse.ArgumentTypeError, match="cuda, triton, cublas, cpu"):
        cli.parse_impls("cuda,opencl")


@pytest.mark.parametrize("parse, text, value", [
    (tasks.positive(int), "3", 3), (tasks.positive(float), "0.5", 0.5), (tasks.non_negative(int), "0", 0)])
def test_bounded_numbers(parse, text, value):
    assert parse(text) == value


@pytest.mark.parametrize("parse, text, message", [
    (tasks.positive(int), "0", "must be positive, got 0"),
    (tasks.positive(int), "2.5", "must be a positive integer, got '2.5'"),
    (tasks.non_negative(int), "-1", "must be non-negative, got -1"),
    (tasks.non_negative(float), "soon", "must be a non-negative number, got 'soon'")])
def test_bounded_numbers_refuse_with_the_reason(parse, text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        parse(text)


@pytest.mark.parametrize("argv, message", [
    (["--rungs", "42"], "no rung matches '42'"),
    (["--sizes", "12x4"], "neither N nor MxNxK"),
    (["--dtype", "fp4"], "invalid choice: 'fp4'"),
    (["--impl", "opencl"], "comma-separated choice"),
    (["--min-runs", "0"], "must be positive"),
    (["--rep", "-5"], "must be positive"),
    (["--sweep", "TILE"], "give a config parameter and integer values"),
    (["--sweep", "TILE=a,b"], "give a config parameter and integer values"),
    (["--cpu-limit", "0"], "must be positive"),
    (["--batch", "3,4"], "must be a positive integer, got '3,4'"),
    (["--rep", "fast"], "must be a positive number, got 'fast'"),
])
def test_bad_arguments_exit_with_a_message(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_help_lists_the_options_and_examples(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    for option in ("--rungs", "--impl", "--sizes", "--dtype", "--timing", "--csv", "--json", "--markdown", "--list",
                   "--sweep", "--plots", "--cpu-limit", "--retune"):
        assert option in out
    assert "examples:" in out


def test_list_shows_every_rung(capsys):
    assert cli.main(["--list"]) == 0
    out = capsys.readouterr().out
    for name in ("naive", "coalesced", "smem_tiling", "smem_no_sync", "broken on purpose", "TILE=16; TILE=32"):
        assert name in out


def run_to_files(tmp_path, *extra):
    paths = {ext: tmp_path / f"out.{ext}" for ext in ("csv", "json", "md")}
    # in this process, so that the tests' stand-ins (monkeypatched measure, select) are what runs on a GPU too
    argv = ["--rungs", "2-4", "--sizes", "17x33x5", "--seed", "7", "--rep", "5", "--warmup", "1", "--min-runs", "3",
            "--csv", str(paths["csv"]), "--json", str(paths["json"]), "--markdown", str(paths["md"]), "--in-process",
            *extra]
    return cli.main(argv), paths


def test_results_are_written_to_csv_json_and_markdown(tmp_path, capsys):
    code, paths = run_to_files(tmp_path)
    assert code == 0
    rows = list(csv.DictReader(paths["csv"].open()))
    doc = json.loads(paths["json"].read_text())
    assert len(rows) == len(doc["results"]) > 0
    assert {r["rung"] for r in rows} >= {"v02", "v03", "v04"}
    assert doc["environment"]["seed"] == "7" and "torch" in doc["environment"]
    assert all(r["seed"] for r in rows), "every result records the seed of its inputs"
    assert "| v03 smem_tiling" in paths["md"].read_text()
    out = capsys.readouterr().out
    assert "v03 smem_tiling" in out and "TILE=16" in out


@pytest.mark.parametrize("extra, mode", [((), "first"), (("--retune",), "retune")])
def test_retune_sets_the_search_mode_for_the_run_and_its_workers(extra, mode, monkeypatch):
    """The tasks run, and the worker processes start (inheriting the environment), with the mode set; the
    caller's environment comes back after."""
    seen = []
    monkeypatch.setattr(cli, "run_tasks", lambda *args, **kwargs: seen.append(os.environ[search.MODE_VARIABLE]))
    monkeypatch.setenv(search.MODE_VARIABLE, "first")
    assert cli.main(["--rungs", "11", "--sizes", "17x33x5", "--impl", "triton", *extra]) == 0
    assert seen == [mode] and os.environ[search.MODE_VARIABLE] == "first"


def test_an_interrupted_sweep_keeps_what_it_measured(tmp_path, monkeypatch, capsys):
    real_measure, calls = bench.measure, []

    def measure_then_interrupt(**kwargs):
        calls.append(kwargs)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real_measure(**kwargs)

    monkeypatch.setattr(bench, "measure", measure_then_interrupt)
    code, paths = run_to_files(tmp_path)
    assert code == 130
    assert len(list(csv.DictReader(paths["csv"].open()))) == 2
    assert len(json.loads(paths["json"].read_text())["results"]) == 2
    assert "interrupted: 2 of" in capsys.readouterr().err


def test_one_failing_implementation_is_recorded_and_the_sweep_goes_on(tmp_path, monkeypatch):
    def broken_launcher(a, b, c, TILE=32):
        raise RuntimeError("simulated compile failure")

    real_select = tasks.select

    def select_with_broken_v03(spec=None):
        return [dataclasses.replace(v, triton=broken_launcher) if v.number == 3 else v for v in real_select(spec)]

    monkeypatch.setattr(tasks, "select", select_with_broken_v03)
    code, paths = run_to_files(tmp_path, "--impl", "triton")
    rows = list(csv.DictReader(paths["csv"].open()))
    failed = [r for r in rows if r["status"] == bench.STATUS_ERROR]
    assert code == 1
    assert {r["rung"] for r in failed} == {"v03"} and "simulated compile failure" in failed[0]["note"]
    assert any(r["rung"] == "v04" for r in rows), "later rungs still ran"


def test_parse_sweep():
    assert cli.parse_sweep("TILE=8,16, 32,64") == ("TILE", (8, 16, 32, 64))


def test_sweep_repeats_each_config_with_every_value_on_the_rungs_that_have_it():
    swept = cli.sweep_configs(select("1-3,5"), "TILE", (8, 32, 64))
    assert [v.tag for v in swept] == ["v03"]  # v01, v02 have no config, v05's has no TILE
    assert swept[0].configs == ({"TILE": 8}, {"TILE": 32}, {"TILE": 64})  # v03's two configs collapse per value
    with pytest.raises(SystemExit, match="no.*config parameter 'XYZ'.*parameters: .*TILE"):
        cli.sweep_configs(select("1-3"), "XYZ", (1,))


def test_plan_puts_the_baselines_first_at_every_size():
    planned = list(cli.plan(select("3"), ("triton", "cpu", "cublas"), [(8, 8, 8), (16, 16, 16)]))
    assert [(t.variant and t.variant.tag, t.impl, t.shape[0]) for t in planned] == [
        (None, "cpu", 8), (None, "cublas", 8), ("v03", "triton", 8), ("v03", "triton", 8),
        (None, "cpu", 16), (None, "cublas", 16), ("v03", "triton", 16), ("v03", "triton", 16)]


def test_the_cpu_baseline_is_skipped_where_it_would_take_too_long(monkeypatch):
    monkeypatch.setattr(bench, "cpu_seconds_estimate", lambda M, N, K, precision: M / 1000)
    cpu = cli.Task(None, {}, "cpu", (4000, 4000, 4000))
    assert cli.skip_reason(cpu, "fp32", torch.device("cpu"), cpu_limit_s=5.0) == ""
    assert cli.skip_reason(cpu, "fp32", torch.device("cpu"), cpu_limit_s=2.0) == (
        "one CPU call would take about 4 s (--cpu-limit 2)")


def test_a_refused_config_is_reported_with_its_limit_and_is_not_a_failure(tmp_path, capsys):
    code, paths = run_to_files(tmp_path, "--rungs", "3", "--impl", "triton", "--sweep", "TILE=8,16")
    rows = list(csv.DictReader(paths["csv"].open()))
    refused = [r for r in rows if r["status"] == bench.STATUS_REFUSED]
    assert code == 0
    assert {r["config"] for r in refused} == {"TILE=8"} and "at least 16" in refused[0]["note"]
    assert {r["config"] for r in rows if r["status"] == "ok"} == {"TILE=16"}
    assert "--sweep TILE" in capsys.readouterr().out


def test_the_ladder_table_puts_the_baselines_first_with_the_speedup_over_the_cpu():
    def result(rung, impl, ms, **extra):
        return bench.Result(rung, "x", "", impl, "fp32", 64, 64, 64, status="ok", ms=ms, ms_p20=ms, ms_p80=ms,
                             **extra)

    results = [result("CPU", "cpu", 40.0), result("cuBLAS", "cublas", 1.0, speedup_cpu=40.0),
               result("v01", "cuda", 4.0, pct_cublas=25.0, speedup_cpu=0.4),
               result("v01", "triton", 2.0, pct_cublas=50.0, speedup_cpu=20.0)]
    lines = report.ladder_table(results).splitlines()
    assert "CUDA ×CPU" in lines[0] and "Triton ×CPU" in lines[0]
    assert [line.split()[0] for line in lines[2:]] == ["CPU", "cuBLAS", "v01"]
    assert lines[4].split()[2:] == ["4.000", "±0.0%", "25.0", "0.4", "ok", "2.000", "±0.0%", "50.0", "20", "ok"]


def _drifting_measurements(monkeypatch, fail=None):
    """measure_task replaced: every call is 1 ms slower than the one before (a GPU heating up), and the
    calls are recorded; `fail`: (task label, call number) that comes out WRONG."""
    calls = []

    def measure_task(task, dtype, precision, device, seed, timing, cpu_limit_s, ratios, inputs="normal"):
        calls.append(task.label)
        result = bench.Result(task.label, "", "", task.impl, dtype, *task.shape, seed=seed, error=0.0)
        if fail == (task.label, len(calls)):
            result.status, result.note = bench.STATUS_WRONG, "error above bound"
            return result
        result.status, result.samples = bench.STATUS_OK, [float(len(calls))] * 3
        bench.summarize(result, ratios.get("cublas_ms"), ratios.get("cpu_ms"))
        return result

    monkeypatch.setattr(cli, "measure_task", measure_task)
    rung = select("3")[0]
    shape = (64, 64, 64)
    planned = [tasks.Task(None, {}, "cpu", shape), tasks.Task(None, {}, "cublas", shape),
               tasks.Task(rung, {"TILE": 16}, "cuda", shape), tasks.Task(rung, {"TILE": 16}, "triton", shape)]
    return planned, calls


def test_rounds_reverse_the_order_and_pool_the_samples(tmp_path, monkeypatch):
    planned, calls = _drifting_measurements(monkeypatch)
    log = report.ResultLog({}, csv_path=tmp_path / "r.csv")
    cli.run_tasks(planned, log, dtype="fp32", device=torch.device("cpu"), seed=0, timing=bench.TimingOptions(),
                   rounds=3)
    log.close()
    cpu, cublas, cuda, triton = (t.label for t in planned)
    # The CPU baseline runs once; the GPU ones forward, backward, forward.
    assert calls == [cpu, cublas, cuda, triton, triton, cuda, cublas, cublas, cuda, triton]
    by_label = {r.rung: r for r in log.results}
    assert sorted(by_label[cuda].samples) == [3.0] * 3 + [6.0] * 3 + [9.0] * 3
    # Pooled medians: cuBLAS (2, 7, 8) -> 7, the CUDA rung (3, 6, 9) -> 6, Triton (4, 5, 10) -> 5
    assert by_label[cuda].pct_cublas == pytest.approx(100 * 7 / 6)
    assert by_label[triton].pct_cublas == pytest.approx(100 * 7 / 5)
    assert by_label[cublas].speedup_cpu == pytest.approx(1 / 7) and by_label[cublas].pct_cublas is None
    assert by_label[cuda].runs == 9 and by_label[cuda].timing == "events, 3 rounds"
    rows = list(csv.DictReader((tmp_path / "r.csv").open()))
    assert len(rows) == 4 and float(rows[2]["ms"]) == 6.0, "one CSV row per result, with the pooled figures"


def test_a_failure_in_a_later_round_fails_the_result(monkeypatch):
    planned, calls = _drifting_measurements(monkeypatch, fail=("v03 TILE=16 triton 64x64x64", 5))
    log = report.ResultLog({})
    cli.run_tasks(planned, log, dtype="fp32", device=torch.device("cpu"), seed=0, timing=bench.TimingOptions(),
                   rounds=3)
    triton = log.results[3]
    assert triton.status == bench.STATUS_WRONG and triton.ms is None and triton.pct_cublas is None
    assert calls.count(triton.rung) == 2, "not timed again after it failed"
    assert log.results[2].status == bench.STATUS_OK


@pytest.mark.parametrize("mode, call_ms, rep", [("graph", 0.01, 20.0), ("graph", 5.0, 50.0),
                                                ("events", 0.01, 200.0), ("events", 50.0, 500.0)])
def test_rep_is_the_timed_time_of_a_measurement_in_either_mode(mode, call_ms, rep, monkeypatch):
    """Events: calls for --rep ms. Graph: do_bench_cudagraph replays its graph GRAPH_REPLAYS times, so the graph is
    a tenth of --rep. Either way at least --min-runs calls, however slow the kernel."""
    import triton.testing

    class Event:
        def __init__(self, **_):
            pass

        def record(self):
            pass

        def elapsed_time(self, _):
            return call_ms

    asked = {}
    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *_: None)
    monkeypatch.setattr(triton.testing, "do_bench_cudagraph", lambda fn, rep, **_: asked.setdefault("rep", rep) and [])
    monkeypatch.setattr(triton.testing, "do_bench", lambda fn, warmup, rep, **_: asked.setdefault("rep", rep) and [])
    bench.time_ms(lambda: None, bench.TimingOptions(mode=mode, rep_ms=200.0, min_runs=10), torch.device("cuda"))
    assert asked["rep"] == pytest.approx(rep)


class FakeDriver:
    """Triton's active driver as do_bench uses it: clear_cache(cache) before each timed call."""

    def __init__(self, log):
        self.log = log

    def clear_cache(self, cache):
        self.log.append("zero")


@pytest.mark.parametrize("flush, flushed", [("zero", ["zero"]), ("clean", ["zero", "read"])])
def test_a_clean_flush_reads_another_buffer_after_do_benchs_own(flush, flushed, monkeypatch):
    """--flush clean: do_bench's zeroing, then a read of a buffer as large, before each call; afterwards the
    driver's own flush is back for whoever times next."""
    import triton
    import triton.testing

    log = []
    driver = FakeDriver(log)
    own = driver.clear_cache
    monkeypatch.setattr(triton.runtime, "driver", argparse.Namespace(active=driver))
    cache = torch.zeros(8)

    class Read:
        def sum(self):
            log.append("read")

    monkeypatch.setattr(bench, "_clean_buffer", lambda like: Read() if like is cache else pytest.fail("other"))

    def do_bench(fn, warmup, rep, return_mode):
        triton.runtime.driver.active.clear_cache(cache)
        fn()
        return [1.0]

    monkeypatch.setattr(triton.testing, "do_bench", do_bench)
    assert bench.events_ms(lambda: log.append("call"), warmup=1, rep=1, flush=flush, return_mode="all") == [1.0]
    assert log == flushed + ["call"]
    assert driver.clear_cache == own
    with pytest.raises(ValueError, match="unknown L2 flush 'warm'"):
        bench.events_ms(lambda: None, warmup=1, rep=1, flush="warm")


def test_a_clean_flush_is_recorded_with_the_timing_and_refused_where_nothing_is_flushed(capsys):
    assert bench.TimingOptions(flush="clean").label == "events, clean flush"
    assert bench.TimingOptions().label == "events" and bench.TimingOptions("graph", flush="clean").label == "graph"
    assert cli.main(["--flush", "clean", "--timing", "graph"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "--flush applies to events timing in the single-GPU comparison: graph timing does not flush between calls, "
        "and --distributed and --nproc time with do_bench's own flush"]
