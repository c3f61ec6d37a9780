"""Named shape sets (--shapes): resolution, provenance, the dimensions each model's config gives, the
command line, and the memory guard that refuses a set too large for the GPU before anything is allocated."""

import json

import pytest
import torch

from implementations.core import bench, cli, shapes
from implementations.core.check import PRECISIONS

# (N, K) of each projection, written out from the published configs rather than recomputed:
# Llama-3-8B hidden 4096, intermediate 14336, 32 heads, 8 KV heads, head_dim 128;
# Llama-3-70B hidden 8192, intermediate 28672, 64 heads, 8 KV heads, head_dim 128;
# Mixtral-8x7B as Llama-3-8B, with 8 experts and 2 per token.
PROJECTIONS = {
    "llama3-8b": {"qkv": (6144, 4096), "o": (4096, 4096), "gate_up": (28672, 4096), "down": (4096, 14336)},
    "llama3-70b": {"qkv": (10240, 8192), "o": (8192, 8192), "gate_up": (57344, 8192), "down": (8192, 28672)},
    "mixtral-8x7b": {"qkv": (6144, 4096), "o": (4096, 4096), "expert gate_up": (28672, 4096),
                     "expert down": (4096, 14336)},
}
TOKENS = {"prefill": (2048, 8192), "decode": (1, 16, 128)}
EXPERT_M = {2048: 512, 8192: 2048, 1: 1, 16: 4, 128: 32}  # tokens · 2 / 8, at least 1


@pytest.mark.parametrize("name", list(shapes.SETS))
def test_every_set_resolves_and_every_shape_says_where_it_comes_from(name):
    found = shapes.resolve(name)
    assert found and found == shapes.SETS[name][1]
    for s in found:
        assert min(s.dims) > 0 and s.label and s.provenance
        assert s.model or name == "square", f"{s.label}: no model configuration named"
    assert len({s.label for s in found}) == len(found), "labels tell the shapes apart"


@pytest.mark.parametrize("key", list(PROJECTIONS))
def test_model_sets_derive_their_dimensions_from_the_config(key):
    expected = {}
    for phase, counts in TOKENS.items():
        for tokens in counts:
            for projection, (N, K) in PROJECTIONS[key].items():
                M = EXPERT_M[tokens] if projection.startswith("expert") else tokens
                expected[f"{key} {projection} {phase} {tokens}"] = (M, N, K)
    assert {s.label: s.dims for s in shapes.resolve(key)} == expected
    model = shapes.MODELS[key]
    assert model.config.startswith(("meta-llama/", "mistralai/")) and model.name in shapes.resolve(key)[0].model


def test_the_qkv_provenance_shows_its_arithmetic():
    qkv = next(s for s in shapes.resolve("llama3-8b") if s.label == "llama3-8b qkv prefill 2048")
    assert "(32 heads + 2·8 KV heads)·128 = 6144" in qkv.provenance and "M = 2048" in qkv.provenance
    assert "hidden_size 4096" in qkv.model and "num_key_value_heads 8" in qkv.model


def test_decode_is_every_models_decode_shapes_and_square_the_powers_of_two():
    decode = shapes.resolve("decode")
    from_models = [s for key in PROJECTIONS for s in shapes.resolve(key) if " decode " in s.label]
    assert decode == from_models and {s.M for s in decode} == {1, 4, 16, 32, 128}
    assert shapes.run_sizes(shapes.resolve("square")) == [(n, n, n) for n in (256, 512, 1024, 2048, 4096, 8192)]


def test_sets_combine_and_each_size_runs_once():
    combined = shapes.resolve("llama3-8b, mixtral-8x7b,decode")
    # decode repeats the two model sets' decode shapes (each label once) and adds Llama-3-70B's 4 × 3
    assert len(combined) == 20 + 20 + 12
    sizes = shapes.run_sizes(combined)
    assert len(sizes) == len(set(sizes)) < len(combined)
    assert sizes[0] == (2048, 6144, 4096)
    legend = shapes.legend(combined)
    assert "llama3-8b qkv prefill 2048; mixtral-8x7b qkv prefill 2048" in legend


@pytest.mark.parametrize("text", ["llama4", "llama3-8b,nope", ""])
def test_an_unknown_set_is_one_line_naming_the_known_ones(text):
    with pytest.raises(ValueError) as exc:
        shapes.resolve(text)
    message = str(exc.value)
    assert "\n" not in message and message.startswith("unknown shape set")
    assert all(name in message for name in shapes.SETS)


def test_the_command_line_refuses_an_unknown_set(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--shapes", "llama4"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument --shapes: unknown shape set llama4; known: llama3-8b" in err


def test_shapes_and_sizes_together_are_refused(monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(cli, "run_tasks", lambda *args, **kwargs: ran.append(args))
    assert cli.main(["--shapes", "square", "--sizes", "64"]) == 2
    assert "--shapes and --sizes" in capsys.readouterr().err and not ran


def test_shapes_list_prints_every_shape_with_its_provenance(capsys):
    assert cli.main(["--shapes", "list"]) == 0
    out = capsys.readouterr().out
    for name, (_, found) in shapes.SETS.items():
        assert f"{name}: " in out
        for s in found:
            assert s.label in out and s.provenance in out
    assert "mistralai/Mixtral-8x7B-v0.1" in out


def test_a_shape_set_becomes_the_size_list_with_its_legend(tmp_path, monkeypatch, capsys):
    """Nothing is run (these sizes take hours in the interpreter): the planned tasks are looked at."""
    planned = []
    monkeypatch.setattr(cli, "run_tasks", lambda tasks, *args, **kwargs: planned.extend(tasks))
    json_path, md_path = tmp_path / "out.json", tmp_path / "out.md"
    assert cli.main(["--shapes", "square", "--rungs", "3", "--impl", "triton", "--json", str(json_path),
                     "--markdown", str(md_path)]) == 0
    assert list(dict.fromkeys(t.shape for t in planned)) == shapes.run_sizes(shapes.resolve("square"))
    assert "--shapes: the shapes each size stands for" in capsys.readouterr().out
    doc = json.loads(json_path.read_text())
    assert [r["label"] for r in doc["shapes"]] == [s.label for s in shapes.resolve("square")]
    assert "## Shapes" in md_path.read_text() and "| 8192x8192x8192 | square 8192 |" in md_path.read_text()


def test_a_tiny_set_runs_through_compare_with_its_legend(tmp_path, monkeypatch, capsys):
    tiny = [shapes.Shape(17, 33, 5, "tiny a", "made up"), shapes.Shape(17, 33, 5, "tiny b", "made up too"),
            shapes.Shape(9, 8, 7, "tiny c", "made up")]
    monkeypatch.setitem(shapes.SETS, "tiny", ("a test's set", tiny))
    json_path = tmp_path / "out.json"
    assert cli.main(["--shapes", "tiny", "--rungs", "3", "--impl", "triton", "--in-process", "--seed", "1",
                     "--json", str(json_path)]) == 0
    doc = json.loads(json_path.read_text())
    assert [r["size"] for r in doc["results"] if r["rung"] == "v03"] == ["17x33x5"] * 2 + ["9x8x7"] * 2
    assert all(r["status"] == bench.STATUS_OK for r in doc["results"])
    assert [s["label"] for s in doc["shapes"]] == ["tiny a", "tiny b", "tiny c"]
    out = capsys.readouterr().out
    legend = out[out.index("--shapes: the shapes each size stands for"):]
    assert "17x33x5  tiny a; tiny b" in legend and "9x8x7    tiny c" in legend


GIB = 2**30


def test_the_memory_estimate_counts_operands_output_and_the_float64_check():
    M, N, K = 1000, 3000, 2000
    fp32 = shapes.device_bytes(M, N, K, 4)
    # A, B three times (new inputs for the second check, a row-major copy) and C in fp32; seven float64 M×N
    # tensors; the float64 operands and their absolute values; do_bench's L2 flush
    one = 4 * (3 * (M * K + K * N) + M * N) + 8 * (7 * M * N + 2 * (M * K + K * N))
    assert fp32 == one + 256 * 2**20
    assert shapes.device_bytes(M, N, K, 2) < fp32 < shapes.device_bytes(M, N, 2 * K, 4)
    assert shapes.device_bytes(M, N, K, 4, batch=8) == 8 * one + 256 * 2**20
    assert shapes.device_bytes(M, N, K, 4, batch=1) == fp32


def test_the_memory_guard_refuses_with_a_fake_small_free_memory():
    sizes = shapes.run_sizes(shapes.resolve("llama3-70b"))
    refusal = shapes.memory_refusal(sizes, 4, 16 * GIB, "Fake GPU")
    need = shapes.device_bytes(8192, 57344, 8192, 4) / GIB
    assert refusal == f"shape 8192x57344x8192 needs about {need:.1f} GiB on Fake GPU, which has 16.0 GiB free"
    assert shapes.memory_refusal(sizes, 4, 80 * GIB, "Fake GPU") == ""
    batched = shapes.memory_refusal(sizes, 4, 80 * GIB, "Fake GPU", batch=4)
    assert batched.startswith("shape 4×(8192x57344x8192) needs about"), "a batch multiplies what one case holds"
    clean = shapes.device_bytes(8192, 57344, 8192, 4, flush_buffers=2) - shapes.device_bytes(8192, 57344, 8192, 4)
    assert clean == shapes.L2_FLUSH_BYTES, "a clean flush reads a second buffer as large as do_bench's"


def test_the_guard_reads_the_devices_free_memory_and_skips_the_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (2 * GIB, 80 * GIB))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Fake GPU")
    refusal = shapes.check_memory([(8192, 8192, 8192)], torch.float16, torch.device("cuda", 0))
    assert refusal.startswith("shape 8192x8192x8192 needs about") and "Fake GPU, which has 2.0 GiB free" in refusal
    assert shapes.check_memory([(8192, 8192, 8192)], torch.float32, torch.device("cpu")) == ""


def test_compare_refuses_before_it_allocates_or_runs(monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(cli, "run_tasks", lambda *args, **kwargs: ran.append(args))
    monkeypatch.setattr(cli, "environment", lambda *args: ran.append("environment") or {})
    monkeypatch.setattr(shapes, "check_memory", lambda sizes, dtype, device, batch, groups=0, flush_buffers=1:
                        shapes.memory_refusal(sizes, dtype.itemsize, GIB, "Fake GPU", batch, groups, flush_buffers))
    assert cli.main(["--shapes", "decode", "--impl", "triton"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("shape 128x57344x8192 needs about") and err.endswith("Fake GPU, which has 1.0 GiB free")
    assert shapes.memory_refusal([(2048, 2048, 2048)], 4, GIB, "Fake GPU") == "", "one product fits"
    assert cli.main(["--sizes", "2048", "--batch", "3", "--impl", "triton"]) == 2
    assert capsys.readouterr().err.startswith("shape 3×(2048x2048x2048) needs about")
    assert shapes.memory_refusal([(512, 4096, 4096)], 2, GIB, "Fake GPU") == ""
    assert cli.main(["--sizes", "512x4096x4096", "--groups", "64", "--impl", "triton"]) == 2, "B once per group"
    assert capsys.readouterr().err.startswith("shape 512x4096x4096 needs about")
    assert not ran


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(4096, 4096, 64), (512, 1536, 1024)])
def test_the_estimate_covers_what_a_checked_and_timed_case_allocates(shape):
    """The first shape's peak is the check's float64 tensors, the second's the timing's L2 flush."""
    device = torch.device("cuda")
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    result = bench.measure(rung="cuBLAS", name="", config="", impl="cublas", precision=PRECISIONS["fp32"],
                           shape=shape, device=device, seed=1, prepare=bench.cublas_prepare,
                           timing=bench.TimingOptions(rep_ms=5, warmup_ms=1, min_runs=3))
    assert result.status == bench.STATUS_OK
    peak = torch.cuda.max_memory_allocated(device) - before
    estimate = shapes.device_bytes(*shape, 4)
    assert peak <= estimate <= 1.6 * peak, (peak / 2**20, estimate / 2**20)
