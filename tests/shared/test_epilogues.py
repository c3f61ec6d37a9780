"""The epilogue in the shared layer: C = act(A @ B + bias) with a float64 reference, bounds that a wrong
epilogue breaks, a bias as large as the product's elements, torch's baselines, and the CLI around it."""

import json
import math

import pytest
import torch
import torch.nn.functional as F

from implementations import select
from implementations.core import bench, cli
from implementations.core.check import EPILOGUES, PRECISIONS, check, make_bias, make_inputs, reference
from implementations.core.registry import Prepared
from implementations.core.tasks import Task, plan, skip_reason

FP16 = PRECISIONS["fp16"]
FUSED = [e for e in EPILOGUES if e != "none"]


def inputs(M=33, N=17, K=5, seed=3, kind="normal", precision=FP16):
    a, b = make_inputs(M, N, K, precision, "cpu", seed, kind)
    return a, b, make_bias(N, K, precision, "cpu", seed, kind)


def rounded(epilogue, a, b, bias, dtype=torch.float16):
    """The exact result rounded to C's dtype: what a perfect kernel stores."""
    return reference(a, b, epilogue, bias).to(dtype)


# ---- the reference ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("epilogue", list(EPILOGUES))
def test_the_reference_is_act_of_the_float64_product_plus_the_bias(epilogue):
    a, b, bias = inputs()
    x = a.double() @ b.double() + (bias.double() if EPILOGUES[epilogue].bias else 0)
    expected = {"none": a.double() @ b.double(), "bias": x, "bias+relu": torch.clamp_min(x, 0),
                "bias+gelu": 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))}[epilogue]
    torch.testing.assert_close(reference(a, b, epilogue, bias if EPILOGUES[epilogue].bias else None), expected,
                               rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_gelu_as_the_kernels_write_it_is_torchs_tanh_gelu_within_its_bound(dtype):
    """Both kernels compute x / (1 + exp(-2t)) in fp32 (here with torch's CPU exp and division standing in for
    __expf, __fdividef and tl.exp: the GPU tests check the kernels' own). Torch's tanh GELU in float64 is that function (up to its
    own cancellation in 1 + tanh far below zero, |x|·2^-50 at most); the fp32 evaluation stays within the
    relative bound the check allows (past where fp32 overflows or underflows, below 2^-120), and rounded to the
    dtype, within the dtype's rounding on top (half a subnormal spacing below its normal range)."""
    x = torch.linspace(-12, 12, 48_001, dtype=torch.float32)
    ours = x / (1 + torch.exp(-1.5957691216057308 * (x + 0.044715 * x * x * x)))
    xd = x.double()
    sigmoid_form = xd * torch.sigmoid(2 * math.sqrt(2 / math.pi) * (xd + 0.044715 * xd**3))
    torch_gelu = F.gelu(xd, approximate="tanh")
    assert ((torch_gelu - sigmoid_form).abs() <= 2**-50 * xd.abs()).all()
    relative = EPILOGUES["bias+gelu"].evaluation(xd)
    assert ((ours.double() - sigmoid_form).abs() <= relative * sigmoid_form.abs() + 2**-120).all()
    precision = PRECISIONS[dtype]
    stored = ours.to(precision.dtype).double()
    limit = (precision.u_out + relative) * sigmoid_form.abs() + precision.underflow + 2**-120
    assert ((stored - sigmoid_form).abs() <= limit).all()
    # not the erf form: the two differ by far more than the bound where GELU bends
    erf = F.gelu(xd)
    assert ((erf - torch_gelu).abs() > 2 * (precision.u_out + relative) * torch_gelu.abs()).any()


def test_the_bias_is_as_large_as_the_products_elements_and_exact():
    for K in (1, 5, 130, 4096):
        bias = make_bias(4000, K, FP16, "cpu", 1)
        assert 0.5 < bias.float().std().item() / math.sqrt(K) < 2
    integers = make_bias(64, 4096, PRECISIONS["bf16"], "cpu", 1, "integers")
    assert (integers.float() / 64 == (integers.float() / 64).round()).all()
    assert not torch.equal(make_bias(64, 5, FP16, "cpu", 1), make_bias(64, 5, FP16, "cpu", 2))


# ---- the check catches a wrong epilogue ------------------------------------------------------------------


@pytest.mark.parametrize("epilogue", FUSED)
@pytest.mark.parametrize("kind", ["normal", "integers"])
def test_a_perfect_epilogue_passes(epilogue, kind):
    a, b, bias = inputs(kind=kind)
    outcome = check(rounded(epilogue, a, b, bias), a, b, FP16, kind == "integers", epilogue, bias)
    assert outcome.ok, outcome.why()


@pytest.mark.parametrize("wrong, epilogue", [
    ("none", "bias"), ("bias", "bias+relu"), ("bias+relu", "bias+gelu"), ("bias", "bias+gelu"), ("bias+gelu", "bias"),
])
@pytest.mark.parametrize("shape", [(33, 17, 5), (97, 61, 130), (64, 128, 1024)], ids=lambda s: "x".join(map(str, s)))
def test_the_wrong_epilogue_fails(wrong, epilogue, shape):
    """A dropped bias, a missing activation, ReLU where GELU belongs: each fails the componentwise check."""
    a, b, bias = inputs(*shape)
    c = rounded(wrong, a, b, bias if EPILOGUES[wrong].bias else None)
    outcome = check(c, a, b, FP16, False, epilogue, bias)
    assert not outcome.ok and outcome.outside > 0, outcome


def test_the_bias_added_twice_to_the_wrong_columns_or_not_to_the_last_fails():
    a, b, bias = inputs(97, 61, 130)
    last_dropped = bias.clone()
    last_dropped[-1] = 0  # the edge mask of the bias's load off by one
    for wrong in (2 * bias.double(), bias.roll(1), last_dropped):
        assert not check(rounded("bias", a, b, wrong), a, b, FP16, False, "bias", bias).ok


def test_gelu_outputs_are_not_held_to_exactness():
    """GELU of an exact integer is not exact in any dtype: integer inputs keep the bound, not bit equality."""
    a, b, bias = inputs(kind="integers")
    assert check(rounded("bias+gelu", a, b, bias), a, b, FP16, True, "bias+gelu", bias).ok


# ---- the baselines -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("epilogue", list(EPILOGUES))
def test_the_unfused_sequence_and_the_cpu_baseline_compute_the_epilogue(epilogue):
    for prepare in (bench.unfused_prepare, bench.cpu_prepare):
        result = bench.measure(rung="b", name="b", config="", impl="cpu", precision=PRECISIONS["fp32"],
                               shape=(33, 17, 9), device=torch.device("cpu"), seed=4, prepare=prepare,
                               epilogue=epilogue)
        assert result.status == bench.STATUS_OK and result.epilogue == epilogue, (result.note, result.worst)


@pytest.mark.parametrize("epilogue", ["bias", "bias+relu", "bias+gelu"])
@pytest.mark.parametrize("inputs", ["integers", "normal"])
def test_the_unfused_sequence_in_bf16_is_held_to_its_two_roundings(inputs, epilogue):
    """bf16 products of integers above 256 are not exact in bf16: fl(fl(A @ B) + bias) rounds twice (257 -> 256,
    then - 128 gives 128 where the single rounding of 129 is 129), so the unfused sequence is checked against its
    bound with that rounding in it, never held to exactness; the same C off by a bias still fails."""
    bf16 = PRECISIONS["bf16"]
    a, b = make_inputs(40, 24, 96, bf16, "cpu", 8, inputs)
    bias = make_bias(24, 96, bf16, "cpu", 8, inputs)
    c = bench.unfused_prepare(a, b, epilogue, bias)
    c.run()
    assert c.product_rounded
    assert check(c.out, a, b, bf16, inputs == "integers", epilogue, bias, c.product_rounded).ok
    wrong = EPILOGUES[epilogue].apply((a.double() @ b.double()).to(torch.bfloat16), 2 * bias)
    assert not check(wrong, a, b, bf16, False, epilogue, bias, True).ok


def test_the_fused_cublas_baseline_names_its_call_and_refuses_a_batch():
    a, b, bias = inputs()
    assert bench.CUBLAS_CALLS["bias+gelu"] == "torch._addmm_activation(use_gelu=True)"
    with pytest.raises(ValueError, match="not a batch"):
        bench.cublas_prepare(a.expand(2, *a.shape), b, "bias+relu", bias)
    with pytest.raises(ValueError, match="bias must be a contiguous vector of C's 17 columns"):
        bench.cublas_prepare(a, b, "bias", bias[:5])


def test_a_recheck_writes_the_new_bias_into_the_one_the_run_reads(monkeypatch):
    """A run that kept its own copy of the first bias would fail the second check."""
    a, b, bias = inputs()
    kept = bias.clone()

    def stale(a, b, epilogue, bias):
        c = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype)
        return Prepared(lambda: c.copy_(EPILOGUES[epilogue].apply(a.double() @ b.double(), kept)), c, (a, b))

    result = bench.measure(rung="b", name="b", config="", impl="cpu", precision=FP16, shape=(33, 17, 5),
                           device=torch.device("cpu"), seed=8, prepare=stale, epilogue="bias")
    assert result.status == bench.STATUS_WRONG


# ---- rungs, tasks and the CLI ---------------------------------------------------------------------------------


def test_a_rung_without_the_epilogue_refuses_it_and_is_skipped():
    v03 = select("3")[0]
    a, b, bias = inputs(precision=PRECISIONS["fp32"])
    with pytest.raises(ValueError, match="v03_smem_tiling fuses no bias\\+gelu epilogue; it applies none"):
        v03.prepare("triton", a, b, epilogue="bias+gelu", bias=bias, TILE=16)
    reason = skip_reason(Task(v03, {}, "triton", (8, 8, 8), epilogue="bias+gelu"), "fp32", torch.device("cpu"))
    assert reason == "fuses no bias+gelu epilogue (applies none)"


def test_a_bias_must_match_the_epilogue():
    v17 = select("17")[0]
    a, b, bias = inputs()
    with pytest.raises(ValueError, match="the bias must be a contiguous vector of C's 17 columns"):
        v17.prepare("triton", a, b, epilogue="bias", bias=bias.double())
    with pytest.raises(TypeError, match="the epilogue adds a bias"):
        v17.prepare("triton", a, b, epilogue="bias+relu")
    with pytest.raises(ValueError, match="a bias was given, but the epilogue adds none"):
        v17.prepare("triton", a, b, bias=bias)
    with pytest.raises(ValueError, match="unknown epilogue 'gelu'"):
        v17.prepare("triton", a, b, epilogue="gelu", bias=bias)


def test_the_plan_runs_the_unfused_baseline_with_an_epilogue_only():
    v17 = select("17")
    tasks = list(plan(v17, ("cuda", "cublas", "unfused"), [(8, 8, 8)], epilogues=("none", "bias+gelu")))
    assert [(t.impl, t.epilogue) for t in tasks] == [
        ("cublas", "none"), ("cuda", "none"), ("cublas", "bias+gelu"), ("unfused", "bias+gelu"), ("cuda", "bias+gelu")]
    assert tasks[-1].label == "v17 cuda 8x8x8 bias+gelu"


@pytest.mark.parametrize("argv, message", [
    (["--epilogue", "bias,gelu"], "unknown epilogue 'gelu'; choose from none, bias, bias+relu, bias+gelu"),
    (["--epilogue", "relu"], "unknown epilogue 'relu'"),
])
def test_an_unknown_epilogue_is_a_one_line_cli_error(argv, message, capsys):
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(argv)
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("mode", [["--nproc", "2"], ["--distributed"], ["--sanitize"], ["--ncu"]])
def test_an_epilogue_outside_the_single_gpu_comparison_is_refused(mode, capsys):
    assert cli.main(["--epilogue", "bias", *mode]) == 2
    assert "--epilogue runs in the single-GPU comparison only" in capsys.readouterr().err


def test_list_shows_each_rungs_epilogues():
    listing = cli.list_rungs()
    row = next(line for line in listing.splitlines() if line.startswith("v17"))
    assert "none, bias, bias+relu, bias+gelu" in row
    assert "A rung runs only the epilogues it fuses" in listing


def test_compare_runs_the_epilogues_and_the_results_carry_them(tmp_path, capsys):
    """In the interpreter: v17's Triton side with each epilogue, a rung without one skipped with the reason, and
    the epilogue in the JSON and CSV rows and in the size of the tables."""
    out = tmp_path / "run.json"
    code = cli.main(["--rungs", "3,17", "--dtype", "fp16", "--sizes", "17x33x5", "--impl", "triton",
                     "--epilogue", "none,bias+relu,bias+gelu", "--json", str(out), "--csv", str(tmp_path / "run.csv"),
                     "--seed", "1"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    records = json.loads(out.read_text())["results"]
    v17 = {r["epilogue"]: r for r in records if r["rung"] == "v17"}
    assert set(v17) == {"none", "bias+relu", "bias+gelu"} and all(r["status"] == "ok" for r in v17.values())
    assert v17["bias+gelu"]["size"] == "17x33x5 bias+gelu"
    v03 = [r for r in records if r["rung"] == "v03" and r["epilogue"] == "bias+gelu"]
    assert v03 and all(r["status"] == "skipped" and "fuses no bias+gelu epilogue" in r["note"] for r in v03)
    assert "17x33x5 bias+relu fp16" in printed
    assert "epilogue" in (tmp_path / "run.csv").read_text().splitlines()[0].split(",")


def test_the_ladder_table_shows_the_speedup_over_the_unfused_sequence():
    def result(rung, impl, ms):
        r = bench.Result(rung, rung, "", impl, "bf16", 8, 8, 8, status=bench.STATUS_OK, epilogue="bias+gelu",
                         samples=[ms])
        bench.summarize(r, 1.0 if impl != "cublas" else None, None, 1.3 if impl != "unfused" else None)
        return r

    table = cli.report.ladder_table([result("cuBLAS", "cublas", 1.0), result("unfused", "unfused", 1.3),
                                     result("v17", "cuda", 0.95)])
    header, *rows = table.splitlines()
    assert "CUDA ×unfused" in header
    assert "1.30" in rows[1] and "76.9" in rows[2] and "1.37" in rows[3], table
