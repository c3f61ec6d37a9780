"""v19 fp8: C = s_A·s_B·(A @ B) from e4m3 operands, in bf16, against the float64 product of the stored values,
with scales per tensor and (fp8-rowwise) per row of A and column of B. Triton runs in the interpreter here; on a
GPU every CUDA C candidate runs on nt (read in place), batches and per-row scales, and torch._scaled_mm is held to
the same bound. The bad inputs of scaled operands."""

import dataclasses

import pytest
import torch

from implementations import v19_fp8 as v19
from implementations.core import bench, cli
from implementations.core.check import PRECISIONS, check, make_inputs, make_scales, poison, reference

from ..helpers import checked_run, gpu_skip_reason, param_id, skip_unless_runnable

V19 = v19.VARIANT
FP8 = PRECISIONS["fp8"]
ROWWISE = PRECISIONS["fp8-rowwise"]
# ragged everywhere, M = 1, K = 1, N = 1, K not a multiple of 16 bytes (padded rows)
SHAPES = [(33, 17, 47), (1, 40, 9), (19, 3, 1), (5, 1, 6)]


@pytest.mark.parametrize("shape", SHAPES, ids=param_id)
@pytest.mark.parametrize("layout", ["nt", "nn"])
@pytest.mark.parametrize("dtype", ["fp8", "fp8-rowwise"])
def test_triton_computes_the_scaled_product(shape, layout, dtype, device):
    skip_unless_runnable(V19, "triton", dtype, device)
    result = checked_run(V19, "triton", shape, device, dtype, layout=layout)
    assert result.status == bench.STATUS_OK, (result.note, result.worst)
    # a B of one row or column is a transposed view as it is: nothing to copy
    assert ("copies B to a transposed view" in result.note) == (layout == "nn" and min(shape[1:]) > 1), result.note


def test_a_kernel_that_drops_the_scales_fails(device, monkeypatch):
    """The scales are not powers of two with normal inputs, nor 1: a product left unscaled is wrong by far."""
    skip_unless_runnable(V19, "triton", "fp8", device)

    def unscaled(a, b, c, configs, scales=None):
        return v19.prepare_triton(a, b, c, configs, torch.ones(2, device=a.device))

    monkeypatch.setattr(v19, "TRITON_SEARCH", dataclasses.replace(v19.TRITON_SEARCH, prepare=unscaled, choices={}))
    result = checked_run(V19, "triton", (33, 17, 47), device, "fp8", layout="nt")
    assert result.status == bench.STATUS_WRONG and "outside their limit" in result.note, result.note


def test_a_batch_with_per_row_scales_is_refused_with_the_reason(device):
    result = checked_run(V19, "triton", (5, 6, 16), device, "fp8-rowwise", layout="nt", batch=2)
    assert result.status == bench.STATUS_REFUSED and "single products" in result.note, result.note


def test_a_kernel_that_reads_per_row_scales_as_two_fails(device, monkeypatch):
    """Per-row scales differ row by row and column by column: s_A[0]·s_B[0] for every element is wrong."""
    skip_unless_runnable(V19, "triton", "fp8-rowwise", device)

    def per_tensor(a, b, c, configs, scales=None):
        return v19.prepare_triton(a, b, c, configs, torch.stack([scales[0], scales[a.shape[-2]]]))

    monkeypatch.setattr(v19, "TRITON_SEARCH", dataclasses.replace(v19.TRITON_SEARCH, prepare=per_tensor, choices={}))
    result = checked_run(V19, "triton", (33, 17, 47), device, "fp8-rowwise", layout="nt")
    assert result.status == bench.STATUS_WRONG and "outside their limit" in result.note, result.note


@pytest.mark.parametrize("precision, count", [(FP8, 2), (ROWWISE, 5 + 7)])
def test_scales_are_random_or_exact_powers_of_two(precision, count):
    scales = make_scales(precision, "cpu", 3, 5, 7)
    assert scales.dtype == torch.float32 and scales.shape == (count,)
    assert not torch.equal(scales, scales.log2().round().exp2()), "normal inputs get scales that round"
    exact = make_scales(precision, "cpu", 3, 5, 7, "integers")
    assert torch.equal(exact, exact.log2().round().exp2())
    assert make_scales(PRECISIONS["bf16"], "cpu", 3, 5, 7) is None


def test_per_row_scales_scale_rows_and_columns():
    a, b = torch.ones(2, 1, dtype=torch.float64), torch.ones(1, 3, dtype=torch.float64)
    scales = torch.tensor([1.0, 2.0, 10.0, 100.0, 1000.0])
    assert torch.equal(reference(a, b, scales=scales), torch.tensor([[10.0, 100, 1000], [20, 200, 2000]]))
    assert torch.equal(reference(a, b, scales=torch.tensor([2.0, 3.0])), torch.full((2, 3), 6.0, dtype=torch.float64))


@pytest.mark.parametrize("scales, batch, message", [  # scales made on the device (a copy there is contiguous)
    (None, 0, "need their scales"),
    (lambda d: torch.ones(3, device=d), 0, "of 2 \\(s_A, s_B\\), or 8 \\+ 8"),
    (lambda d: torch.ones(2, dtype=torch.float64, device=d), 0, "contiguous float32 tensor"),
    (lambda d: torch.ones(16, device=d)[::1], 0, None),
    (lambda d: torch.ones(32, device=d)[::2], 0, "not contiguous"),
    (lambda d: torch.ones(16, device=d), 2, "per-row scales: single products"),
], ids=["none", "count", "float64", "rowwise", "strided", "batch"])
def test_bad_scales_are_refused_with_a_message(scales, batch, message, device):
    a, b = make_inputs(8, 8, 16, FP8, device, 1, layout="nt", batch=batch)
    scales = None if scales is None else scales(device)
    if message is None:  # M + N per-row scales are right for a single product
        V19.prepare("triton", a, b, scales=scales)
        return
    with pytest.raises((TypeError, ValueError), match=message):
        V19.prepare("triton", a, b, scales=scales)


def test_scales_with_16_bit_operands_are_refused(device):
    from implementations import v15_warp_specialized as v15

    a, b = make_inputs(8, 8, 16, PRECISIONS["fp16"], device, 1)
    with pytest.raises(ValueError, match="take none"):
        v15.VARIANT.prepare("triton", a, b, scales=torch.ones(2, device=device))


def test_fp8_writes_bf16_and_reads_nt_by_default(capsys, tmp_path):
    args = cli.build_parser().parse_args(["--dtype", "fp8"])
    assert args.layout is None  # main() fills in the default for the dtype
    code = cli.main(["--dtype", "fp8", "--epilogue", "bias", "--rungs", "19"])
    assert code == 2 and "--dtype fp8 runs single products and batches" in capsys.readouterr().err
    code = cli.main(["--dtype", "fp8-rowwise", "--batch", "2", "--rungs", "19"])
    assert code == 2 and "--dtype fp8-rowwise scales single products" in capsys.readouterr().err
    a, b = make_inputs(4, 6, 16, FP8, "cpu", 1, layout="nt")
    assert a.dtype == torch.float8_e4m3fn and b.stride() == (1, 16)


@pytest.mark.gpu
@pytest.mark.parametrize("precision, batch", [(FP8, 0), (FP8, 3), (ROWWISE, 0)], ids=["tensor", "batch", "rowwise"])
def test_every_cuda_candidate_on_nt_and_batches(precision, batch):
    """Each CUDA candidate (split-K's too) on nt read in place, alone and in a batch, with per-tensor and per-row
    scales, ragged (K padded to a 16-byte pitch) and whole 128×256 tiles, into a NaN-poisoned bf16 C."""
    if gpu_skip_reason(V19, "cuda", precision.name):
        pytest.skip(gpu_skip_reason(V19, "cuda", precision.name))
    for M, N, K in [(200, 300, 77), (1, 264, 128), (256, 512, 384)]:
        a, b = make_inputs(M, N, K, precision, "cuda", 31, layout="nt", batch=batch)
        scales = make_scales(precision, "cuda", 31, M, N)
        c = torch.empty((*((batch,) if batch else ()), M, N), device="cuda", dtype=torch.bfloat16)
        refresh, runs = v19.prepare_cuda(a, b, c, v19.CUDA_SEARCH.candidates, scales=scales)
        for tile, run in runs.items():
            poison(c)
            refresh()
            run()
            outcome = check(c, a, b, precision, scales=scales)
            assert outcome.ok, (tile, (M, N, K, batch), outcome.why())


# a few rows (decode): 16 and 1 of them, ragged N and K (padded rows), a row of B, a batch sharing B (per-tensor
# scales: per-row ones scale single products)
SWAP_CASES = [(FP8, 16, 200, 300, 0), (FP8, 1, 130, 64, 0), (FP8, 5, 1, 47, 0), (FP8, 9, 70, 256, 3),
              (ROWWISE, 16, 200, 300, 0), (ROWWISE, 3, 70, 47, 0), (ROWWISE, 32, 65, 128, 0)]


def check_swapped(prepare, candidates, precision, M, N, K, batch, device):
    """Every one of `candidates` (swapped) on M×N×K fp8 nt products, into a NaN-poisoned C."""
    a, b = make_inputs(M, N, K, precision, device, 7, layout="nt", batch=batch)
    if batch:
        b = b[0]  # one B (a weight) for every product
    scales = make_scales(precision, device, 7, M, N)
    c = torch.empty((*((batch,) if batch else ()), M, N), device=device, dtype=torch.bfloat16)
    refresh, runs = prepare(a, b, c, candidates, scales=scales)
    assert len(runs) == len(candidates)
    for cand, run in runs.items():
        for _ in range(2):  # split-K's counters are left zeroed for the next launch
            poison(c)
            refresh()
            run()
            outcome = check(c, a, b, precision, scales=scales)
            assert outcome.ok, (cand, (M, N, K, batch), outcome.why())


@pytest.mark.parametrize("precision, M, N, K, batch", SWAP_CASES, ids=param_id)
def test_triton_swapped_configs_compute_the_scaled_product(precision, M, N, K, batch, device):
    """Cᵀ = Bᵀ·Aᵀ: one scale per tensor is the same for it; per row of A and column of B, read across."""
    skip_unless_runnable(V19, "triton", precision.name, device)
    check_swapped(v19.prepare_triton, v19.SWAP_CONFIGS, precision, M, N, K, batch, device)


@pytest.mark.gpu
@pytest.mark.parametrize("precision, M, N, K, batch", SWAP_CASES, ids=param_id)
def test_every_swapped_cuda_tile_computes_the_scaled_product(precision, M, N, K, batch):
    if gpu_skip_reason(V19, "cuda", precision.name):
        pytest.skip(gpu_skip_reason(V19, "cuda", precision.name))
    check_swapped(v19.prepare_cuda, v19.CUDA_SWAP_CANDIDATES, precision, M, N, K, batch, "cuda")


def test_swapped_candidates_are_offered_for_a_few_rows_of_a_row_major_a(device):
    a, _ = make_inputs(16, 64, 128, FP8, device, 1, layout="nt")
    offered = v19.swapped_candidates(v19.CUDA_SWAP_CANDIDATES, a)
    assert offered and all(t.BN in (16, 32) for t in offered)
    assert all(config.kwargs["BLOCK_N"] in (16, 32) for config in v19.swapped_candidates(v19.SWAP_CONFIGS, a, 16))
    big, _ = make_inputs(64, 64, 128, FP8, device, 1, layout="nt")
    assert v19.swapped_candidates(v19.CUDA_SWAP_CANDIDATES, big) == ()
    assert v19.swapped_candidates(v19.CUDA_SWAP_CANDIDATES, a.mT.contiguous().mT) == ()  # A' would be M-major


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1024, 1024, 8192), (256, 512, 16384)], ids=param_id)
@pytest.mark.parametrize("precision", [FP8, ROWWISE], ids=["tensor", "rowwise"])
def test_cublaslt_meets_the_same_bound(shape, precision):
    """The bound's accumulation term is the tensor cores' own (about 14 bits per k32 step): torch._scaled_mm (per
    row: torch's CUTLASS kernel), with the same fast accumulation, is held to it too, at a large K."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device; none was found")
    result = bench.measure(rung="cuBLAS", name=bench.SCALED_MM, config="", impl="cublas", precision=precision,
                           shape=shape, device=torch.device("cuda"), seed=5, prepare=bench.cublas_prepare, layout="nt")
    assert result.status == bench.STATUS_OK, (result.note, result.worst)
