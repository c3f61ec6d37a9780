"""v17 fused epilogue: every epilogue in both languages against the float64 act(A @ B + bias), on ragged shapes,
NaN-poisoned outputs and a second run on new inputs (and a new bias). Triton runs in the interpreter here
(fp16: the interpreter has no bf16); on a GPU every epilogue × dtype × a subset of each search's candidates runs,
CUDA C included, through both store paths (N % 8 != 0: straight from registers; else TMA) and stream-K."""

import pytest
import torch

from implementations import v15_warp_specialized as v15
from implementations import v17_fused_epilogue as v17
from implementations.core import bench
from implementations.core.check import EPILOGUES, PRECISIONS, check, make_bias, make_inputs, poison
from implementations.core.env import set_cublas_math

from ..helpers import candidate, checked_run, gpu_skip_reason, param_id, skip_unless_runnable

V17 = v17.VARIANT
FUSED = [e for e in EPILOGUES if e != "none"]
# ragged everywhere, M = 1, K = 1, N = 1, a row of C narrower than 16 bytes
CPU_SHAPES = [(33, 17, 47), (1, 40, 9), (19, 3, 1), (5, 1, 6)]


@pytest.mark.parametrize("shape", CPU_SHAPES, ids=param_id)
@pytest.mark.parametrize("epilogue", list(EPILOGUES))
def test_triton_applies_every_epilogue(epilogue, shape, device):
    skip_unless_runnable(V17, "triton", "fp16", device)
    result = checked_run(V17, "triton", shape, device, "fp16", epilogue=epilogue)
    assert result.status == bench.STATUS_OK, (result.note, result.worst)
    label = "x".join(map(str, shape)) + ("" if epilogue == "none" else f" {epilogue}")
    assert result.epilogue == epilogue and result.size == label, result.size


@pytest.mark.parametrize("epilogue", ["bias", "bias+relu"])
def test_integer_inputs_through_a_bias_and_relu_are_exact(epilogue, device):
    skip_unless_runnable(V17, "triton", "fp16", device)
    result = checked_run(V17, "triton", (33, 17, 47), device, "fp16", "integers", epilogue=epilogue)
    assert result.status == bench.STATUS_OK and result.error <= 2.0 ** -8, (result.note, result.worst)


@pytest.mark.parametrize("epilogue", FUSED)
def test_every_layout_and_a_batch_take_the_epilogue(epilogue, device):
    skip_unless_runnable(V17, "triton", "fp16", device)
    for layout in ("nt", "tn", "tt"):
        result = checked_run(V17, "triton", (21, 17, 9), device, "fp16", layout=layout, epilogue=epilogue)
        assert result.status == bench.STATUS_OK and "copies" not in result.note, (layout, result.note)
    result = checked_run(V17, "triton", (21, 17, 9), device, "fp16", layout="tn", batch=3, epilogue=epilogue)
    assert result.status == bench.STATUS_OK and "one launch per matrix" not in result.note, result.note


@pytest.mark.parametrize("epilogue", FUSED)
def test_k_zero_is_the_epilogue_of_the_bias(epilogue, device):
    skip_unless_runnable(V17, "triton", "fp16", device)
    a, b = torch.zeros(5, 0, dtype=torch.float16, device=device), torch.zeros(0, 7, dtype=torch.float16, device=device)
    bias = torch.linspace(-3, 3, 7, dtype=torch.float16, device=device)
    c = V17.matmul("triton", a, b, epilogue=epilogue, bias=bias)
    expected = EPILOGUES[epilogue].apply(torch.zeros(5, 7, dtype=torch.float64, device=device), bias)
    torch.testing.assert_close(c.double(), expected.expand(5, 7), atol=2e-3, rtol=2e-3)


def test_the_epilogue_is_in_the_search_key():
    a, b, c = torch.zeros(4, 8), torch.zeros(8, 8), torch.zeros(4, 8)
    keys = {v17.TRITON_SEARCH.key(a, b, c, epilogue) for epilogue in EPILOGUES}
    assert len(keys) == len(EPILOGUES)
    assert '"epilogue"' not in v17.TRITON_SEARCH.key(a, b, c), "none keeps the key choices were kept under"


def test_v17_instantiates_v15s_kernel_with_its_epilogues():
    """v17's .cu defines the epilogue types and nothing else: its kernels are v15's, by name; none is v15's own."""
    assert all(name.startswith(("warp_specialized<", "warp_specialized_unclustered<"))
               and name.rsplit(",", 2)[1] in ("Bias", "BiasRelu", "BiasGelu")
               and name.endswith(",NoGroups>") for name in v17.KERNELS.kernels)
    assert all(name.endswith(",NoEpilogue,NoGroups>") for name in v15.KERNELS.kernels)
    source = v17.KERNELS.path.read_text()
    assert '#include "v15_warp_specialized.cu"' in source and "__global__" not in source


# Decode: v15's split-K and swapped candidates. Rows fewer than a swapped tile, one row, k-blocks fewer than the
# slices, ragged everywhere, a batch, a batch sharing B.
DECODE_CASES = [((5, 70, 130), (0, 0)), ((1, 96, 520), (0, 0)), ((30, 100, 200), (0, 0)), ((7, 64, 64), (3, 3)),
                ((12, 72, 96), (3, 0))]


@pytest.mark.parametrize("layout", ["nn", "nt"])
@pytest.mark.parametrize("lang", ["triton", "cuda"])
@pytest.mark.parametrize("case", DECODE_CASES, ids=param_id)
def test_split_and_swapped_candidates_apply_the_epilogue_to_the_sum(case, lang, layout, device):
    """The slices of k are added before the epilogue (ReLU or GELU of each partial sum would be wrong, and the bias
    added once per slice), and a swapped kernel, which computes Cᵀ, adds the bias along its rows, C's columns. Every
    epilogue, each candidate, run twice (split-K's counters). On the CPU Triton's kernels run in the interpreter
    (fp16); the CUDA C tiles need an sm_90a GPU."""
    if device.type == "cuda" and torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("TMA descriptors and wgmma: sm_90")
    if lang == "cuda" and device.type != "cuda":
        pytest.skip("the CUDA C kernel needs an sm_90a GPU")
    (M, N, K), (a_batch, b_batch) = case
    if lang == "cuda":
        cands, prepare = v15.CUDA_SPLIT_CANDIDATES + v15.CUDA_SWAP_CANDIDATES, v17.prepare_cuda
    else:
        cands, prepare = v15.SPLIT_K_CONFIGS[:1] + v15.SWAP_CONFIGS, v17.prepare_triton
    for dtype in ["fp16"] if device.type == "cpu" else ["fp16", "bf16"]:
        precision = PRECISIONS[dtype]
        a, _ = make_inputs(M, N, K, precision, device, 11, layout=layout, batch=a_batch)
        _, b = make_inputs(M, N, K, precision, device, 13, layout=layout, batch=b_batch)
        bias = make_bias(N, K, precision, device, 17)
        c = torch.empty(torch.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (M, N), device=device, dtype=a.dtype)
        for epilogue in FUSED:
            refresh, runs = prepare(a, b, c, cands, epilogue=epilogue, bias=bias)
            assert len(runs) == len(cands)
            for cand, run in runs.items():
                for _ in range(2):
                    poison(c)
                    refresh()
                    run()
                    outcome = check(c, a, b, precision, epilogue=epilogue, bias=bias)
                    assert outcome.ok, (str(cand), case, layout, dtype, epilogue, outcome.why())


def test_triton_offers_v15s_decode_configs_less_v11s_kernel():
    """v11's kernel (pointers, no TMA) applies no epilogue: v17 leaves it out, and v15's launcher refuses it one."""
    a, b, c = (torch.empty(shape, dtype=torch.bfloat16) for shape in ((16, 4096), (4096, 4096), (16, 4096)))
    triton = v17.triton_candidates(a, b, c)
    assert set(v15.SWAP_CONFIGS) & set(triton) and set(v15.SPLIT_K_CONFIGS) <= set(triton)
    assert not set(v15.POINTER_CONFIGS) & set(triton) and set(v15.POINTER_CONFIGS) & set(v15.triton_candidates(a, b, c))
    with pytest.raises(ValueError, match="takes no"):
        v15.prepare_triton(a, b, c, v15.POINTER_CONFIGS, flags=v17.epilogue_flags("bias", torch.empty(4096)))


# ---- on the GPU ------------------------------------------------------------------------------------------

GPU_SHAPES = [(97, 61, 130), (1000, 1100, 1028), (1, 256, 64), (129, 520, 1)]
CUDA_SUBSET = [v15.Tile(256, 4, 2, 8), v15.Tile(256, 4, 2, 8, 1), v15.Tile(128, 6, 2, 8), v15.Tile(64, 8, 1, 8),
               v15.Tile(64, 5, 1, 8, 1, 64)]
TRITON_SUBSET = [v15.TRITON_CONFIGS[i] for i in (0, 3, 5, 9)]


def candidate_run(search, cand, shape, dtype, epilogue, inputs="normal"):
    """One candidate with the epilogue, checked as compare.py checks (poisoned output, a second run)."""
    return bench.measure(
        rung=V17.tag, name=V17.name, config=search.describe(cand), impl=search.lang, precision=PRECISIONS[dtype],
        shape=shape, device=torch.device("cuda"), seed=17, inputs=inputs, epilogue=epilogue,
        prepare=lambda a, b, **fused: candidate(a, b, lambda c: search.one(a, b, c, cand, **fused)))


@pytest.mark.gpu
@pytest.mark.parametrize("shape", GPU_SHAPES, ids=param_id)
@pytest.mark.parametrize("epilogue", FUSED)
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("search, cand", [(v17.CUDA_SEARCH, t) for t in CUDA_SUBSET]
                         + [(v17.TRITON_SEARCH, t) for t in TRITON_SUBSET], ids=lambda x: getattr(x, "lang", str(x)))
def test_every_epilogue_on_a_subset_of_the_candidates(search, cand, dtype, epilogue, shape):
    if gpu_skip_reason(V17, search.lang, dtype):
        pytest.skip(gpu_skip_reason(V17, search.lang, dtype))
    result = candidate_run(search, cand, shape, dtype, epilogue)
    assert result.status == bench.STATUS_OK, (search.describe(cand), result.note, result.worst)


@pytest.mark.gpu
@pytest.mark.parametrize("epilogue", ["bias", "bias+relu"])
@pytest.mark.parametrize("lang", ["cuda", "triton"])
def test_integer_inputs_stay_exact_through_stream_k_and_the_epilogue(lang, epilogue):
    """Stream-K adds partial sums before the epilogue; applied to each partial instead, ReLU would not be exact.
    Integer products sum exactly in fp32; what may differ is the one rounding of C to bf16 (at most 2^-8 of each
    element, so of the norm)."""
    if gpu_skip_reason(V17, lang, "bf16"):
        pytest.skip(gpu_skip_reason(V17, lang, "bf16"))
    search = v17.CUDA_SEARCH if lang == "cuda" else v17.TRITON_SEARCH
    cand = v15.Tile(256, 4, 2, 8, 1) if lang == "cuda" else TRITON_SUBSET[0]
    result = candidate_run(search, cand, (1000, 1100, 1028), "bf16", epilogue, "integers")
    assert result.status == bench.STATUS_OK and result.error <= 2.0 ** -8, (result.note, result.worst)


@pytest.mark.gpu
@pytest.mark.parametrize("epilogue", FUSED)
@pytest.mark.parametrize("lang", ["cuda", "triton"])
def test_layouts_and_batches_with_an_epilogue_on_the_gpu(lang, epilogue):
    if gpu_skip_reason(V17, lang, "bf16"):
        pytest.skip(gpu_skip_reason(V17, lang, "bf16"))
    for layout in ("nt", "tn", "tt"):
        result = checked_run(V17, lang, (300, 200, 100), "cuda", "bf16", layout=layout, epilogue=epilogue)
        assert result.status == bench.STATUS_OK and "copies" not in result.note, (layout, result.note)
    result = checked_run(V17, lang, (130, 72, 70), "cuda", "bf16", layout="tn", batch=3, epilogue=epilogue)
    assert result.status == bench.STATUS_OK and "one launch per matrix" not in result.note, result.note


# cuBLASLt's fused GELU (torch._addmm_activation(use_gelu=True)) falls outside the fp32-accumulation bound at
# these two ragged shapes, where its fused ReLU, torch.addmm and the unfused GELU pass (docs/notes/v17.md).
# Strict, so that a cuBLAS that fixes it fails this mark and the note is revisited.
RAGGED = ((1000, 1100, 1028), (97, 64, 130))
CUBLAS_GELU_RAGGED = pytest.mark.xfail(strict=True, reason="cuBLASLt's fused GELU at ragged shapes: docs/notes/v17.md")


@pytest.mark.gpu
@pytest.mark.parametrize("shape", RAGGED + ((1024, 1024, 1024),), ids=param_id)
@pytest.mark.parametrize("epilogue", list(EPILOGUES))
@pytest.mark.parametrize("impl", ["cublas", "unfused"])
def test_the_baselines_compute_the_epilogue(impl, epilogue, shape, request):
    """cuBLASLt's fused epilogue (torch.addmm, torch._addmm_activation: GELU in the tanh form) and the unfused
    sequence pass the same check as the rung."""
    if (impl, epilogue) == ("cublas", "bias+gelu") and shape in RAGGED:
        request.applymarker(CUBLAS_GELU_RAGGED)
    set_cublas_math(tf32=False)  # as compare.py runs them: 16-bit partial sums reduced in fp32
    prepare = bench.cublas_prepare if impl == "cublas" else bench.unfused_prepare
    result = bench.measure(rung=impl, name=impl, config="", impl=impl, precision=PRECISIONS["bf16"], shape=shape,
                           device=torch.device("cuda"), seed=5, prepare=prepare, epilogue=epilogue)
    assert result.status == bench.STATUS_OK, (shape, result.note, result.worst)


@pytest.mark.gpu
@pytest.mark.parametrize("epilogue", list(EPILOGUES))
@pytest.mark.parametrize("impl", ["cublas", "unfused"])
def test_the_fused_baseline_refuses_a_batch_the_unfused_one_runs_it(impl, epilogue):
    set_cublas_math(tf32=False)
    prepare = bench.cublas_prepare if impl == "cublas" else bench.unfused_prepare
    batched = bench.measure(rung=impl, name=impl, config="", impl=impl, precision=PRECISIONS["bf16"],
                            shape=(64, 48, 32), device=torch.device("cuda"), seed=5, prepare=prepare, batch=2,
                            epilogue=epilogue)
    refused = impl == "cublas" and epilogue != "none"
    assert batched.status == (bench.STATUS_REFUSED if refused else bench.STATUS_OK), batched.note
