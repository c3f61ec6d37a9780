"""v19 fp8: C = s_A·s_B·(A @ B) from e4m3 operands, in bf16, against the float64 product of the stored values.
Triton runs in the interpreter here; on a GPU every CUDA C candidate runs on nt (read in place) and batches, and
cuBLASLt's own fp8 GEMM is held to the same bound. The bad inputs of scaled operands."""

import dataclasses

import pytest
import torch

from implementations import v19_fp8 as v19
from implementations.core import bench, cli
from implementations.core.check import PRECISIONS, check, make_inputs, make_scales, poison

from ..helpers import checked_run, gpu_skip_reason, param_id, skip_unless_runnable

V19 = v19.VARIANT
FP8 = PRECISIONS["fp8"]
# ragged everywhere, M = 1, K = 1, N = 1, K not a multiple of 16 bytes (padded rows)
SHAPES = [(33, 17, 47), (1, 40, 9), (19, 3, 1), (5, 1, 6)]


@pytest.mark.parametrize("shape", SHAPES, ids=param_id)
@pytest.mark.parametrize("layout", ["nt", "nn"])
def test_triton_computes_the_scaled_product(shape, layout, device):
    skip_unless_runnable(V19, "triton", "fp8", device)
    result = checked_run(V19, "triton", shape, device, "fp8", layout=layout)
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


def test_scales_are_random_or_exact_powers_of_two():
    scales = make_scales(FP8, "cpu", 3)
    assert scales.dtype == torch.float32 and scales.shape == (2,)
    assert not torch.equal(scales, scales.log2().round().exp2()), "normal inputs get scales that round"
    exact = make_scales(FP8, "cpu", 3, "integers")
    assert torch.equal(exact, exact.log2().round().exp2())
    assert make_scales(PRECISIONS["bf16"], "cpu", 3) is None


@pytest.mark.parametrize("scales, message", [
    (None, "need their scales"),
    (torch.ones(3), "contiguous float32 tensor"),
    (torch.ones(2, dtype=torch.float64), "contiguous float32 tensor"),
])
def test_bad_scales_are_refused_with_a_message(scales, message, device):
    a, b = make_inputs(8, 8, 16, FP8, device, 1, layout="nt")
    with pytest.raises((TypeError, ValueError), match=message):
        V19.prepare("triton", a, b, scales=None if scales is None else scales.to(device))


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
    a, b = make_inputs(4, 6, 16, FP8, "cpu", 1, layout="nt")
    assert a.dtype == torch.float8_e4m3fn and b.stride() == (1, 16)


@pytest.mark.gpu
@pytest.mark.parametrize("batch", [0, 3])
def test_every_cuda_candidate_on_nt_and_batches(batch):
    """Each CUDA candidate (split-K's too) on nt read in place, alone and in a batch, ragged (K padded to a
    16-byte pitch) and whole 128×256 tiles, into a NaN-poisoned bf16 C."""
    if gpu_skip_reason(V19, "cuda", "fp8"):
        pytest.skip(gpu_skip_reason(V19, "cuda", "fp8"))
    for M, N, K in [(200, 300, 77), (1, 264, 128), (256, 512, 384)]:
        a, b = make_inputs(M, N, K, FP8, "cuda", 31, layout="nt", batch=batch)
        scales = make_scales(FP8, "cuda", 31)
        c = torch.empty((*((batch,) if batch else ()), M, N), device="cuda", dtype=torch.bfloat16)
        refresh, runs = v19.prepare_cuda(a, b, c, v19.CUDA_SEARCH.candidates, scales=scales)
        for tile, run in runs.items():
            poison(c)
            refresh()
            run()
            outcome = check(c, a, b, FP8, scales=scales)
            assert outcome.ok, (tile, (M, N, K, batch), outcome.why())


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1024, 1024, 8192), (256, 512, 16384)], ids=param_id)
def test_cublaslt_meets_the_same_bound(shape):
    """The bound's accumulation term is the tensor cores' own (about 14 bits per k32 step): cuBLASLt's fp8 GEMM,
    with the same fast accumulation, is held to it too, at a large K."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device; none was found")
    result = bench.measure(rung="cuBLAS", name=bench.SCALED_MM, config="", impl="cublas", precision=FP8, shape=shape,
                           device=torch.device("cuda"), seed=5, prepare=bench.cublas_prepare, layout="nt")
    assert result.status == bench.STATUS_OK, (result.note, result.worst)
