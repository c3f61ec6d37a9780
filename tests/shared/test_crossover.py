"""The crossover tool: its batch rule, the choice of the best fp32 rung, where the GPU starts to win, and a
run on the CPU at tiny sizes that writes the JSON, the table and the plot."""

import json

import pytest
import torch

from implementations import select
from implementations.tools import crossover


def test_a_batch_holds_the_work_of_one_256_cubed_product():
    assert [crossover.batch_of(n) for n in (16, 32, 64, 128, 256, 512, 1024)] == [4096, 512, 64, 8, 1, 1, 1]


def test_the_best_rung_is_the_highest_correct_fp32_one(monkeypatch):
    # v04 is broken on purpose, v14 has no fp32 and v16 computes tf32: v03 is the best of these
    monkeypatch.setattr(crossover, "all_variants", lambda: tuple(select("3,4,14,16")))
    cpu = torch.device("cpu")
    assert crossover.best_rung("triton", cpu).tag == "v03"
    assert crossover.best_rung("cuda", cpu).tag == "v03"
    monkeypatch.setattr(crossover, "all_variants", lambda: tuple(select("4,14,16")))
    assert crossover.best_rung("triton", cpu) is None


def test_the_crossover_is_where_the_gpu_wins_from_then_on():
    def rows(series, times):
        return [crossover.Row(series, n, 1, us=t) for n, t in zip((16, 32, 64, 128), times)]

    measured = rows("cpu", [5, 8, 40, 400]) + rows("cublas", [40, 4, 45, 50])
    assert crossover.crossover_n(measured, "cublas", "cpu") == 128, "32 is a fluke: the CPU wins again at 64"
    assert crossover.crossover_n(rows("cpu", [1, 1, 1, 1]) + rows("cublas", [2, 2, 2, 2]), "cublas", "cpu") is None
    batched = [crossover.Row("cpu_bmm", 16, 4096, us=4096.0), crossover.Row("cublas_bmm", 16, 4096, us=409.6)]
    assert batched[1].us_per_product == pytest.approx(0.1)
    assert crossover.crossover_n(batched, "cublas_bmm", "cpu_bmm") == 16


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU-only path: with a GPU every series runs")
def test_without_a_gpu_it_times_the_cpu_series_and_writes_json_table_and_plot(tmp_path, capsys):
    assert crossover.main(["--out", str(tmp_path), "--sizes", "16,32", "--calls", "3", "--warmup", "1"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("No CUDA device: only the CPU series")
    doc = json.loads((tmp_path / "crossover.json").read_text())
    assert {s["key"] for s in doc["series"]} == {"cpu", "cpu_bmm"}
    assert doc["environment"]["torch CPU threads"] and doc["environment"]["batch"]
    timed = {(r["series"], r["n"]): r for r in doc["rows"]}
    assert set(timed) == {("cpu", 16), ("cpu", 32), ("cpu_bmm", 16), ("cpu_bmm", 32)}
    assert all(r["us"] > 0 and r["calls"] == 3 and not r["note"] for r in timed.values())
    assert timed[("cpu_bmm", 16)]["batch"] == 4096 and timed[("cpu", 16)]["batch"] == 1
    assert timed[("cpu_bmm", 16)]["us_per_product"] == pytest.approx(timed[("cpu_bmm", 16)]["us"] / 4096)
    table = (tmp_path / "crossover.md").read_text()
    assert "| 16  | 4096 |" in table and "CPU torch.bmm, batch B µs/product" in table
    assert (tmp_path / "crossover.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_wrong_series_is_reported_not_timed(monkeypatch):
    def wrong_matmul(a, b, out):
        out.zero_()

    monkeypatch.setattr(torch, "matmul", wrong_matmul)
    row = crossover.measure(crossover.Series("cpu", "CPU", torch.device("cpu")), 16, calls=3, warmup=1, seed=0)
    assert row.us is None and row.note.startswith("WRONG: ")


def made_up_run():
    env = {"device": "a made-up GPU"}
    series = [crossover.Series(key, key, torch.device("cpu"), key.endswith("_bmm"))
              for key in ("cpu", "cublas", "cublas_bmm")]
    times = {"cpu": [2, 10, 400], "cublas": [30, 31, 40], "cublas_bmm": [40, 40, 60]}
    rows = [crossover.Row(key, n, crossover.batch_of(n) if key.endswith("_bmm") else 1, us=float(t))
            for key, ts in times.items() for n, t in zip((16, 64, 512), ts)]
    return env, series, rows


def test_the_lesson_paragraph_states_what_was_measured():
    text = crossover.lesson(*made_up_run())
    assert "costs 30-31 µs at every n below 512" in text  # cuBLAS's single call where the CPU still wins
    assert "a 16³ product in 2.0 µs" in text
    assert "From n = 512 on" in text and "40 against 400 µs at 512³, 10× faster at 512³" in text
    assert "4096 products of 16³ in one torch.bmm call cost the GPU 40 µs, 0.010 µs a product" in text


def test_a_run_without_gpu_series_says_so():
    env, series, rows = made_up_run()
    assert "no GPU series" in crossover.lesson(env, series[:1], [r for r in rows if r.series == "cpu"])


def test_a_saved_run_loads_and_anything_else_is_refused(tmp_path):
    env, series, rows = made_up_run()
    saved = tmp_path / "crossover.json"
    saved.write_text(json.dumps({"environment": env, "series": [
        {"key": s.key, "label": s.label, "batched": s.batched} for s in series],
        "rows": [{**r.__dict__, "us_per_product": r.us_per_product} for r in rows]}))
    assert crossover.lesson(*crossover.load(saved)) == crossover.lesson(env, series, rows)
    other = tmp_path / "results.json"
    other.write_text(json.dumps({"environment": {}, "results": []}))
    with pytest.raises(ValueError, match="not a crossover document"):
        crossover.load(other)
