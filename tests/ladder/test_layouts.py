"""Every rung on every layout and on batches (registry-wide): C = op(A) @ op(B) with transposed views, and
3-D operands, against the float64 reference. A rung reads in place the layouts it declares; any other is
copied inside its timed call and a batch without a batched kernel is launched per matrix, and the result's
note says so. The bad-input errors of the problem (batches that differ, 4-D operands, unknown layouts)."""

import json

import pytest
import torch

from implementations import select
from implementations.core import bench, cli
from implementations.core.check import LAYOUTS, PRECISIONS, make_inputs
from implementations.core.registry import layout_of

from ..helpers import checked_run, exact_inputs, param_id, rung_configs, skip_unless_batchable, skip_unless_runnable

CORRECT = [p for p in rung_configs() if not p[0].expect_wrong]
RAGGED = (33, 17, 47)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_inputs_take_the_layout_and_keep_their_values(layout):
    a, b = make_inputs(5, 7, 3, PRECISIONS["fp32"], "cpu", 11, layout=layout)
    a0, b0 = make_inputs(5, 7, 3, PRECISIONS["fp32"], "cpu", 11)
    assert (layout_of(a), layout_of(b)) == tuple(layout)
    assert torch.equal(a, a0) and torch.equal(b, b0)
    assert a.stride() == ((1, 5) if layout[0] == "t" else (3, 1))


@pytest.mark.parametrize("layout", LAYOUTS[1:])
@pytest.mark.parametrize("variant, lang, config, dtype", CORRECT, ids=param_id)
def test_rung_computes_every_layout(variant, lang, config, dtype, layout, device):
    skip_unless_runnable(variant, lang, dtype, device)
    result = checked_run(variant, lang, RAGGED, device, dtype, exact_inputs(dtype, device), layout=layout, **config)
    assert result.status == bench.STATUS_OK, (result.note, result.worst)
    native = layout in variant.layouts.get(lang, ("nn",))
    assert ("copies" in result.note) == (not native), result.note


@pytest.mark.parametrize("variant, lang, config, dtype", CORRECT, ids=param_id)
def test_rung_computes_a_batch(variant, lang, config, dtype, device):
    skip_unless_runnable(variant, lang, dtype, device)
    skip_unless_batchable(dtype)
    result = checked_run(variant, lang, (17, 9, 5), device, dtype, "integers", layout="tn", batch=3, **config)
    assert result.status == bench.STATUS_OK, (result.note, result.worst)
    assert result.size == "3×(17x9x5) tn"
    assert ("one launch per matrix" in result.note) == (lang not in variant.batched)


@pytest.mark.parametrize("batch", [1, 1000])
def test_batches_of_one_and_of_a_thousand_tiny_products(batch, device):
    v03 = select("3")[0]
    result = checked_run(v03, "triton", (7, 5, 3), device, batch=batch, TILE=16)
    assert result.status == bench.STATUS_OK, result.note
    assert result.flops == 2 * batch * 7 * 5 * 3


def test_a_matrix_shared_by_the_batch(device):
    v03 = select("3")[0]
    a = torch.randn(4, 9, 6, device=device)
    b = torch.randn(6, 5, device=device).mT.contiguous().mT
    prepared = v03.prepare("triton", a, b, TILE=16)
    prepared.run()
    assert prepared.out.shape == (4, 9, 5)
    torch.testing.assert_close(prepared.out, a @ b)
    assert "copies B" in prepared.note and "one launch per matrix" in prepared.note


@pytest.mark.parametrize("layout, shape, expected", [
    ("nn", (8, 8, 8), ("nn", [])),
    ("tt", (8, 8, 8), ("tt", [])),
    ("nt", (8, 8, 8), ("nn", ["B"])),  # one copy either way: the layout declared first
    ("nt", (8, 2, 8), ("nn", ["B"])),  # B the smaller operand
    ("nt", (2, 8, 8), ("tt", ["A"])),  # A the smaller operand
])
def test_the_shared_layer_copies_the_smaller_operand_once(layout, shape, expected):
    """v11's CUDA C reads nn, tn, tt in place: nt takes one copy, of whichever operand is smaller."""
    v11 = select("11")[0]
    a, b = make_inputs(*shape, PRECISIONS["fp32"], "cpu", 3, layout=layout)
    assert v11.read_layout("cuda", a, b) == expected


def test_two_copies_when_one_does_not_do():
    v03 = select("3")[0]
    a, b = make_inputs(4, 5, 6, PRECISIONS["fp32"], "cpu", 3, layout="tt")
    assert v03.read_layout("triton", a, b) == ("nn", ["A", "B"])


def test_a_wrong_matrix_in_the_batch_is_caught(device):
    """A launch per matrix that skips the last one leaves it NaN: the check names the element."""
    v03 = select("3")[0]
    real = v03.triton
    calls = []

    def launcher(a, b, c, **config):
        calls.append(c)
        run = real(a, b, c, **config)
        return run if len(calls) % 3 else (lambda: None)

    object.__setattr__(v03, "triton", launcher)
    try:
        result = checked_run(v03, "triton", (6, 4, 3), device, batch=3, TILE=16)
    finally:
        object.__setattr__(v03, "triton", real)
    assert result.status == bench.STATUS_WRONG and "C[2, " in result.worst


@pytest.mark.parametrize("shapes, message", [
    (((3, 4, 5), (2, 5, 6)), "batch sizes differ: A holds 3 matrices and B 2"),
    (((1, 3, 4, 5), (5, 6)), "A must be a matrix (2-D) or a batch of matrices (3-D), got 4-D"),
])
def test_bad_batches_are_refused_in_one_line(shapes, message):
    v03 = select("3")[0]
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        v03.prepare("triton", torch.zeros(shapes[0]), torch.zeros(shapes[1]), TILE=16)


def test_unknown_layout_is_a_one_line_cli_error(capsys):
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["--layout", "nn,xt"])
    err = capsys.readouterr().err
    assert "unknown layout 'xt'; choose from nn, nt, tn, tt" in err


def test_list_shows_what_each_rung_reads_in_place():
    listing = cli.list_rungs()
    assert "layouts read in place" in listing and "batched kernel" in listing
    assert "copied to row-major inside the timed call" in listing


@pytest.mark.parametrize("shared", ["a", "b"])
def test_the_cli_runs_a_batch_with_a_shared_operand(shared, tmp_path, capsys):
    """--batch 3 --shared a|b: that operand is one 2-D matrix broadcast over the batch (the cuBLAS row:
    torch.matmul broadcasting), the check against the broadcast float64 product, the JSON saying which."""
    a, b = make_inputs(5, 7, 3, PRECISIONS["fp32"], "cpu", 11, batch=4, shared=shared)
    assert (a.dim(), b.dim()) == ((2, 3) if shared == "a" else (3, 2))
    out = tmp_path / "run.json"
    assert cli.main(["--dtype", "fp32", "--rungs", "3", "--impl", "triton", "--batch", "3", "--shared", shared,
                     "--sizes", "9x5x6", "--json", str(out)]) == 0
    assert f"3×(9x5x6) {shared.upper()} shared" in capsys.readouterr().out
    records = [r for r in json.loads(out.read_text())["results"] if r["impl"] == "triton"]
    assert records and all(r["status"] == "ok" and r["shared"] == shared and r["batch"] == 3 for r in records)


def test_a_shared_operand_needs_a_batch(capsys):
    assert cli.main(["--shared", "b", "--sizes", "8", "--impl", "triton"]) == 2
    assert "--shared b names the operand a batch shares: give --batch B too" in capsys.readouterr().err
    with pytest.raises(ValueError, match="needs a batch"):
        make_inputs(5, 7, 3, PRECISIONS["fp32"], "cpu", 11, shared="a")


@pytest.mark.parametrize("option", [["--batch", "4"], ["--layout", "tn"]])
def test_the_sanitizer_refuses_a_problem_it_would_not_run(option, capsys):
    assert cli.main(["--sanitize", "--rungs", "3", *option]) == 2
    assert "--sanitize checks one product in the dtype's own layout" in capsys.readouterr().err
