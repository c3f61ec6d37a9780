"""The plots, drawn from results saved on the H100 (docs/results) and from small made-up documents."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from implementations.tools import plots
from implementations.core.bench import Result
from implementations.core.report import ResultLog, load_document

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"
# compare.py's documents (--json) and rows (--csv); a CSV's environment is the .env.json beside it. Other
# tools' JSON (the crossover, first_call.py) has no "results" and plots itself.
SAVED = sorted([p for p in RESULTS.glob("h100*_*.json")
                if not p.name.endswith(".env.json") and "results" in json.loads(p.read_text())]
               + list(RESULTS.glob("h100_*.csv")))


def _result(rung, impl, size=64, config="", **figures):
    return {"rung": rung, "name": "x", "config": config, "impl": impl, "dtype": "fp32", "M": size, "N": size,
            "K": size, "size": f"{size}x{size}x{size}", "status": figures.pop("status", "ok"), **figures}


def _doc(results, bandwidth="3000 GB/s (read + write, 1 GiB torch copy)"):
    return {"environment": {"device": "Test GPU", "date": "2026-11-22", "copy bandwidth": bandwidth},
            "results": results}


def _looks_drawn(path: Path) -> bool:
    pixels = imread(path)
    return pixels.shape[0] > 200 and pixels.shape[1] > 200 and len(np.unique(pixels.reshape(-1, pixels.shape[2]),
                                                                             axis=0)) > 20


@pytest.mark.parametrize("path", SAVED, ids=[p.name for p in SAVED])
def test_every_saved_result_plots(path, tmp_path):
    doc = plots.load(path)
    written = plots.write_all(doc, tmp_path)
    if "strategy" in doc["results"][0]:  # a distributed run: the efficiency and where the time goes
        dtypes = "_".join(sorted({r["dtype"] for r in doc["results"]}))
        world = max(r["world"] for r in doc["results"])
        assert {p.name for p in written} == {f"distributed_{kind}_{dtypes}_{world}gpu.png" for kind in ("efficiency", "time")}
        assert all(_looks_drawn(p) for p in written)
        return
    timed = {(r["size"], r["dtype"]) for r in doc["results"] if r.get("pct_cublas")}
    assert {p.name for p in written} >= {f"ladder_{size}_{dtype}.png" for size, dtype in timed}
    if plots.copy_bandwidth_gbs(doc) and any(r.get("traffic_bytes") for r in doc["results"]):
        assert any(p.name.startswith("roofline_") for p in written)
    assert all(_looks_drawn(p) for p in written)


def test_the_saved_h100_ladders_have_a_roofline():
    rooflines = [p for p in SAVED if any(r.get("traffic_bytes") for r in plots.load(p)["results"])]
    assert rooflines, "no saved result carries the traffic model: run scripts/teaching_evidence.sh on a GPU"
    assert all(plots.copy_bandwidth_gbs(plots.load(p)) for p in rooflines)


def test_copy_bandwidth_is_read_from_the_environment():
    assert plots.copy_bandwidth_gbs(_doc([])) == 3000.0
    assert plots.copy_bandwidth_gbs(_doc([], bandwidth="")) is None


def test_the_roofline_needs_the_ceilings_of_the_same_run(tmp_path):
    rungs = [_result("cuBLAS", "cublas", tflops=50.0), _result("v01", "cuda", tflops=0.5, traffic_bytes=2 * 4 * 64**3)]
    assert plots.roofline(_doc(rungs), "64x64x64", "fp32", tmp_path) is not None
    assert plots.roofline(_doc(rungs, bandwidth=""), "64x64x64", "fp32", tmp_path) is None
    assert plots.roofline(_doc(rungs[1:]), "64x64x64", "fp32", tmp_path) is None  # no cuBLAS: no flat roof


def test_size_plot_needs_two_sizes_and_sweep_plot_names_the_refusals(tmp_path):
    one = [_result("v03", "cuda", config="TILE=16", tflops=1.0, ms=1.0)]
    assert plots.tflops_vs_size(_doc(one), "fp32", tmp_path) is None
    two = one + [_result("v03", "cuda", size=128, config="TILE=16", tflops=2.0, ms=2.0)]
    assert plots.tflops_vs_size(_doc(two), "fp32", tmp_path).exists()
    swept = one + [_result("v03", "cuda", config="TILE=64", status="refused", note="4096 threads")]
    path = plots.sweep_plot(_doc(swept), "TILE", "fp32", tmp_path)
    assert path.name == "sweep_TILE_fp32.png" and _looks_drawn(path)


def test_the_size_plot_draws_an_epilogue_run_a_line_per_problem():
    """An --epilogue run holds the unfused baseline (not drawn) and the same sizes with and without the epilogue
    (a line each, not one line through both)."""
    rows = [_result(rung, impl, size=n, epilogue=epilogue, tflops=t, ms=1.0)
            for n in (64, 128) for epilogue in ("none", "bias+gelu")
            for rung, impl, t in (("cuBLAS", "cublas", 3.0), ("v17", "cuda", 2.0), ("v17", "triton", 1.5),
                                  ("unfused", "unfused", 1.0))]
    figure = {}
    original = plots._save
    try:
        plots._save = lambda fig, path: figure.setdefault("fig", fig) and path
        plots.tflops_vs_size(_doc(rows), "fp32", Path("unused"))
    finally:
        plots._save = original
    labels = sorted(line.get_label() for line in figure["fig"].axes[0].get_lines())
    assert labels == ["cuBLAS", "cuBLAS bias+gelu", "v17 CUDA C", "v17 CUDA C bias+gelu", "v17 Triton",
                      "v17 Triton bias+gelu"]


def test_the_command_line_plots_saved_results(tmp_path, capsys):
    assert plots.main([str(SAVED[0]), "--out", str(tmp_path)]) == 0
    assert str(tmp_path) in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    assert plots.main([str(bad), "--out", str(tmp_path)]) == 1


def test_a_csv_reads_back_as_its_json(tmp_path):
    """compare.py --csv and --json of one run give the same document: the rows typed as Result's fields."""
    env = {"device": "Test GPU", "date": "2026-11-22"}
    log = ResultLog(env, csv_path=tmp_path / "r.csv", json_path=tmp_path / "r.json")
    results = [Result("cuBLAS", "torch.matmul", "", "cublas", "fp32", 64, 64, 64, status="ok", ms=0.5, runs=10),
               Result("v11", "x", "BM=64", "cuda", "fp32", 64, 64, 64, status="ok", ms=0.7, pct_cublas=71.4,
                      registers=128, note="chose: a, b"),
               Result("v04", "x", "TILE=16", "cuda", "fp32", 64, 64, 64, status="wrong", error=float("nan"))]
    for r in results:
        log.add(r)
    log.finish(results)
    from_csv, from_json = load_document(tmp_path / "r.csv"), load_document(tmp_path / "r.json")
    assert from_csv["environment"] == env
    assert math.isnan(from_csv["results"][2].pop("error")) and math.isnan(from_json["results"][2].pop("error"))
    assert json.dumps(from_csv["results"], sort_keys=True) == json.dumps(from_json["results"], sort_keys=True)
    assert type(from_csv["results"][1]["registers"]) is int and from_csv["results"][0]["error"] is None
