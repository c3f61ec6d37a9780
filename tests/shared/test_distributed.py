"""The distributed comparison (core/distributed.py): the partition, and whole runs of 2 and 3 ranks on gloo
(the Triton rungs in the interpreter, torch.matmul beside them) from both launch forms, on shapes whose rows
do not divide among the ranks. Integer inputs make every product exact, so a row lost, doubled or misplaced
in the gather cannot pass. A rank that errs, hangs or computes wrong ends the run with a message naming it."""

import json
import os
import subprocess
import sys
import time

import pytest
import torch

from implementations.core import IMPORT_ROOT
from implementations.core import distributed
from implementations.core.distributed import DIST_COLUMNS, block_rows, blocks, default_rungs, without_option

cpu_only = pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU the ranks are GPUs: scripts/distributed_check.sh")
SHAPES = "7x5x3,2x9x4,1x3x1"  # M not divisible by 2 or 3, M below the rank count


@pytest.mark.parametrize("world", [1, 2, 3, 5])
@pytest.mark.parametrize("chunks", [1, 2, 4])
@pytest.mark.parametrize("M", [0, 1, 2, 3, 7, 10, 64, 97])
def test_blocks_cover_every_row_once(M, world, chunks):
    size = block_rows(M, world, chunks)
    rows = [r for rank in range(world) for first, n in blocks(M, world, chunks, rank) for r in range(first, first + n)]
    assert sorted(rows) == list(range(M))
    for rank in range(world):  # block j·world + rank sits where step j's all-gather puts this rank's share
        for j, (first, _) in enumerate(blocks(M, world, chunks, rank)):
            assert first == j * world * size + rank * size
    assert max(n for rank in range(world) for _, n in blocks(M, world, chunks, rank)) == size


@pytest.mark.parametrize("dtype, tag", [("fp32", "v11"), ("tf32", "v16"), ("bf16", "v15"), ("fp16", "v15")])
def test_the_default_rung_is_the_best_plain_product(dtype, tag):
    (variant,) = default_rungs(dtype)  # not the grouped or fused-epilogue rungs, which exist for other problems
    assert variant.tag == tag


def test_the_links_are_read_from_nvidia_smi(monkeypatch):
    matrix = ("\t\x1b[4mGPU0\tGPU1\tGPU2\tNIC0\tCPU Affinity\tNUMA Affinity\x1b[0m\n"
              "GPU0\t X \tNV18\tSYS\tPIX\t0-31\t0\nGPU1\tNV18\t X \tSYS\tPIX\t0-31\t0\n"
              "GPU2\tSYS\tSYS\t X \tPIX\t0-31\t0\nNIC0\tPIX\tPIX\tPIX\t X \n\nLegend:\n  X    = Self\n")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, matrix, ""))
    assert distributed.topology() == "GPU0-GPU1 NV18, GPU0-GPU2 SYS, GPU1-GPU2 SYS"
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 9, "", "no driver"))
    assert distributed.topology().startswith("unknown")


def test_gather_bandwidth_follows_nccl_tests():
    record = distributed.gather_record("copy engines", 256, 2, 1.0)  # 512 MiB gathered in 1 ms
    assert record["algbw GB/s"] == round(512 * 2**20 / 1e-3 / 1e9, 1) and record["busbw GB/s"] == round(
        record["algbw GB/s"] / 2, 1)
    failed = distributed.gather_record("copy engines", 256, 2, None, "rank 1: no peer access")
    assert failed.keys() == record.keys() and failed["ms"] == "failed: rank 1: no peer access"


def test_without_option():
    assert without_option(["--nproc", "2", "--sizes", "8", "--nproc=3"], "--nproc") == ["--sizes", "8"]


def run(args, tmp_path, env=None, timeout=240):
    out = tmp_path / "d.json"
    done = subprocess.run([sys.executable, *args, "--json", str(out)], cwd=IMPORT_ROOT, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})
    doc = json.loads(out.read_text()) if out.exists() else {"results": []}
    return done, doc


def compare(world, *extra):
    return ["compare.py", "--nproc", str(world), "--impl", "triton,cublas", "--inputs", "integers", "--seed", "5",
            *extra]


@cpu_only
@pytest.mark.parametrize("world", [2, 3])
def test_every_strategy_gives_the_exact_product(world, tmp_path):
    done, doc = run(compare(world, "--rungs", "11", "--sizes", SHAPES), tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    results = doc["results"]
    assert set(results[0]) == set(DIST_COLUMNS)
    assert len(results) == 3 * 2 * 4  # sizes × (torch.matmul, v11 Triton) × (single, rows, overlap, push)
    for r in results:
        if r["strategy"] == "push":  # copies between GPUs' memories
            assert r["status"] == "skipped" and "GPUs only" in r["note"], r
            continue
        assert r["status"] == "ok" and r["unwritten"] == 0 and r["outside"] == 0, r
        assert r["world"] == (1 if r["strategy"] == "single" else world)
    assert doc["environment"]["distributed"].startswith(f"{world} rank(s), gloo")
    assert "7x5x3 fp32, " + f"{world} rank(s)" in done.stdout


@cpu_only
def test_torchrun_launches_the_same_run(tmp_path):
    done, doc = run(["-m", "torch.distributed.run", "--nproc-per-node=2", "compare.py", "--distributed", "--rungs",
                     "11", "--impl", "triton", "--sizes", "7x5x3", "--inputs", "integers", "--strategies", "overlap",
                     "--chunks", "3"], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [(r["strategy"], r["world"], r["chunks"], r["status"]) for r in doc["results"]] == [
        ("single", 1, 1, "ok"), ("overlap", 2, 3, "ok")]


@cpu_only
def test_without_torchrun_it_says_how_to_launch(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR")}
    done = subprocess.run([sys.executable, "compare.py", "--distributed"], cwd=IMPORT_ROOT, capture_output=True,
                          text=True, timeout=120, env=env)
    assert done.returncode != 0 and "torchrun --nproc-per-node=N" in done.stderr


FAULT = ["--with", "tests.faults.v94_rank_fault", "--rungs", "1", "--sizes", "9x4x3"]


@cpu_only
def test_a_rank_that_errs_ends_every_rank_and_keeps_the_results(tmp_path):
    done, doc = run(compare(2, *FAULT), tmp_path, {"TVC_RANK_FAULT": "error"})
    assert done.returncode == 1
    assert "rank 1: ValueError: rank 1 refuses its operands" in done.stderr
    by = {(r["rung"], r["impl"], r["strategy"]): r["status"] for r in doc["results"]}
    assert by[("v01", "triton", "overlap")] == "ok" and by[("v94", "triton", "single")] == "ok"
    assert by[("v94", "triton", "rows")] == "error"
    assert ("v94", "triton", "overlap") not in by  # the run stopped there


@cpu_only
def test_a_rank_that_computes_wrong_is_caught(tmp_path):
    done, doc = run(compare(2, *FAULT), tmp_path, {"TVC_RANK_FAULT": "wrong"})
    assert done.returncode == 1
    wrong = [r for r in doc["results"] if r["status"] == "WRONG"]
    assert [(r["rung"], r["strategy"]) for r in wrong] == [("v94", "rows"), ("v94", "overlap")]
    assert all(r["unwritten"] > 0 for r in wrong)


@cpu_only
def test_a_hung_rank_times_out_with_a_clear_message(tmp_path):
    start = time.monotonic()
    done, doc = run(compare(2, *FAULT, "--dist-timeout", "5"), tmp_path, {"TVC_RANK_FAULT": "hang"})
    assert done.returncode == 1
    assert "rank 0: a collective waited longer than --dist-timeout 5 s" in done.stderr
    assert "ended rank(s) 1" in done.stderr
    assert any(r["rung"] == "v01" and r["status"] == "ok" for r in doc["results"])
    assert time.monotonic() - start < 180


@cpu_only
def test_a_size_that_does_not_fit_is_refused_on_every_rank_before_allocating(monkeypatch, capsys):
    """One rank in this process (gloo), with the memory guard told the device is small."""
    from implementations.core import cli, shapes
    from implementations.core.distributed import free_port

    monkeypatch.setattr(shapes, "check_memory", lambda sizes, dtype, device, batch=0:
                        shapes.memory_refusal(sizes, dtype.itemsize, 2**10, "Fake GPU", batch))
    for name, value in {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1",
                        "MASTER_PORT": str(free_port())}.items():
        monkeypatch.setenv(name, value)
    assert cli.main(["--distributed", "--rungs", "11", "--impl", "triton", "--sizes", "64"]) == 2
    assert "rank 0: shape 64x64x64 needs about" in capsys.readouterr().err
