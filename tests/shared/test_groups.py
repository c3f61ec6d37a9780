"""Grouped products in the shared layer: the problem (rows per group, torch._grouped_mm's offsets), inputs, the
float64 reference group by group, the offsets' validation, the baselines, and the CLI around them."""

import json

import pytest
import torch

from implementations.core import bench, cli
from implementations.core.check import (PRECISIONS, ROUTINGS, GroupSpec, even_groups, make_inputs, make_offsets,
                                        parse_groups, reference)
from implementations.core.tasks import Task, plan
from implementations.core.validate import check_groups

FP16 = PRECISIONS["fp16"]


def test_inputs_are_one_a_and_a_b_per_group():
    a, b = make_inputs(12, 5, 3, FP16, "cpu", 1, groups=(4, 0, 8))
    assert a.shape == (12, 3) and b.shape == (3, 3, 5)
    _, bt = make_inputs(12, 5, 3, FP16, "cpu", 1, layout="nt", groups=(4, 0, 8))
    assert torch.equal(b, bt) and not bt.is_contiguous() and bt.mT.is_contiguous()
    with pytest.raises(ValueError, match="the groups hold 12 rows, but M = 13"):
        make_inputs(13, 5, 3, FP16, "cpu", 1, groups=(4, 0, 8))


def test_the_reference_is_each_groups_rows_times_its_matrix():
    groups = (4, 0, 8)
    a, b = make_inputs(12, 5, 3, FP16, "cpu", 1, groups=groups)
    expected = torch.cat([a[:4].double() @ b[0].double(), a[4:].double() @ b[2].double()])
    assert torch.equal(reference(a, b, groups=groups), expected)


def test_offsets_are_torchs_group_ends():
    assert make_offsets((4, 0, 8), "cpu").tolist() == [4, 4, 12]
    assert make_offsets((4, 0, 8), "cpu").dtype == torch.int32
    a, b = torch.zeros(12, 3), torch.zeros(3, 3, 5)
    assert check_groups(a, b, make_offsets((4, 0, 8), "cpu")) == (4, 0, 8)


@pytest.mark.parametrize("text, spec", [
    ("8", GroupSpec(count=8)), ("128,0,512", GroupSpec(rows=(128, 0, 512))), ("ramp", GroupSpec(routing="ramp")),
    (" Mixtral ", GroupSpec(routing="mixtral")),
])
def test_parse_groups(text, spec):
    assert parse_groups(text) == spec


@pytest.mark.parametrize("text, message", [("0", "at least one group"), ("8,x", "give a group count"),
                                           ("nope", "routing \\(ramp, mixtral\\)"), ("-3", "give a group count")])
def test_parse_groups_refuses_in_one_line(text, message):
    with pytest.raises(ValueError, match=message):
        parse_groups(text)


def test_a_spec_splits_m():
    assert even_groups(10, 4) == (3, 3, 2, 2) and GroupSpec(count=4).split(10) == (3, 3, 2, 2)
    assert GroupSpec(count=3).split(1) == (1, 0, 0), "more groups than rows: empty ones"
    assert GroupSpec(rows=(3, 7)).split(10) == (3, 7)
    with pytest.raises(ValueError, match="holds 10 rows, but a size has M = 11"):
        GroupSpec(rows=(3, 7)).split(11)


def test_the_routings_are_the_benchmarks_cases():
    ramp, mixtral = ROUTINGS["ramp"], ROUTINGS["mixtral"]
    assert ramp.shape == (8832, 2048, 4096) and ramp.groups[0] == 128 and ramp.groups[-1] == 2560
    assert mixtral.shape == (8192, 14336, 4096) and len(mixtral.groups) == 8
    assert not any(rows % 64 == 0 for rows in mixtral.groups), "uneven: no group ends on a tile"


def test_sizes_and_tasks_carry_the_groups():
    assert bench.size_label((12, 5, 3), groups=(4, 0, 8)) == "12x5x3 G=3 (4,0,8)"
    assert bench.size_label((40, 5, 3), groups=(4,) * 10) == "40x5x3 G=10 (4-4 rows)"
    tasks = list(plan([], ("cublas", "grouped_mm", "loop_graph", "unfused"), [(12, 5, 3), (9, 5, 3)],
                      groups=[(4, 0, 8), ()]))
    assert [(t.impl, t.groups) for t in tasks] == [("cublas", (4, 0, 8)), ("grouped_mm", (4, 0, 8)),
                                                   ("loop_graph", (4, 0, 8)), ("cublas", ())]
    assert Task(None, {}, "cublas", (12, 5, 3), groups=(4, 0, 8)).case != Task(None, {}, "cublas", (12, 5, 3)).case


def test_the_cpu_baseline_loops_over_the_groups():
    groups = (4, 0, 8)
    a, b = make_inputs(12, 5, 3, PRECISIONS["fp32"], "cpu", 1, groups=groups)
    prepared = bench.cpu_prepare(a, b, offsets=make_offsets(groups, "cpu"))
    prepared.run()
    torch.testing.assert_close(prepared.out.double(), reference(a, b, groups=groups), rtol=1e-6, atol=1e-6)


def test_the_gpu_baselines_refuse_what_they_cannot_run():
    a, b = torch.zeros(12, 3), torch.zeros(3, 3, 5)
    with pytest.raises(bench.Refused, match="CUDA graph needs a CUDA device"):
        bench.loop_graph_prepare(a, b, make_offsets((4, 0, 8), "cpu"))
    with pytest.raises(bench.Refused, match="grouped products only"):
        bench.grouped_mm_prepare(a, b[0])


def test_compare_runs_the_groups_and_the_results_carry_them(tmp_path, capsys):
    """In the interpreter: v18's Triton side on ragged groups, a rung without a grouped kernel skipped with the
    reason, the groups in the JSON and CSV rows and in the size of the tables."""
    out = tmp_path / "run.json"
    code = cli.main(["--rungs", "17,18", "--dtype", "fp16", "--sizes", "40x24x16", "--impl", "triton",
                     "--groups", "8,0,32", "--json", str(out), "--csv", str(tmp_path / "run.csv"), "--seed", "1"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    records = {r["rung"]: r for r in json.loads(out.read_text())["results"]}
    assert records["v18"]["status"] == "ok" and records["v18"]["groups"] == "8,0,32"
    assert records["v18"]["size"] == "40x24x16 G=3 (8,0,32)" and "40x24x16 G=3 (8,0,32) fp16" in printed
    assert records["v17"]["status"] == "skipped" and "has no grouped triton kernel" in records["v17"]["note"]
    assert "groups" in (tmp_path / "run.csv").read_text().splitlines()[0].split(",")


@pytest.mark.parametrize("argv, message", [
    (["--groups", "3", "--batch", "2"], "without --batch"),
    (["--groups", "3", "--epilogue", "bias"], "without --epilogue"),
    (["--groups", "3", "--nproc", "2"], "without --nproc"),
    (["--groups", "3,4", "--sizes", "8x8x8"], "--groups holds 7 rows, but a size has M = 8"),
    (["--groups", "ramp", "--sizes", "1024"], "routing ramp holds 8832 rows"),
])
def test_compare_refuses_groups_it_cannot_run(argv, message, capsys):
    assert cli.main([*argv, "--impl", "triton"]) == 2
    assert message in capsys.readouterr().err


def test_groups_list_shows_the_routings(capsys):
    assert cli.main(["--groups", "list"]) == 0
    printed = capsys.readouterr().out
    assert "ramp" in printed and "8832x2048x4096" in printed and "mixtral" in printed


def test_list_shows_each_rungs_grouped_kernel():
    lines = cli.list_rungs().splitlines()
    column = lines[0].index("grouped kernel")
    cell = {line[:3]: line[column:].strip() for line in lines[2:] if line[:1] == "v"}
    assert cell["v18"] == "cuda, triton" and cell["v15"] == "-"
