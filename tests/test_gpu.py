"""GPU-only checks: large shapes, the race caught, the launch refusals, timing, and compiler evidence."""

import importlib

import pytest
import torch

from implementations import select
from implementations.core import bench
from implementations.core.check import PRECISIONS, compare, make_inputs, poison, reference
from implementations.core.env import set_fp32_matmul

from .helpers import candidate, checked_run, gpu_skip_reason, param_id, rung_configs

pytestmark = pytest.mark.gpu

LARGE_SHAPES = [(1024, 1024, 1024), (4096, 4096, 4096), (1000, 1531, 777), (2048, 384, 4100)]
CORRECT = [p for p in rung_configs() if not p[0].expect_wrong]
RACE = [p for p in rung_configs() if p[0].expect_wrong]
RACE_SHAPES = [(1024, 1024, 1024), (4096, 4096, 4096)]
RACE_REPEATS = 5


@pytest.mark.parametrize("shape", LARGE_SHAPES, ids=param_id)
@pytest.mark.parametrize("variant, lang, config, dtype", CORRECT, ids=param_id)
def test_rung_matches_reference_on_large_shapes(variant, lang, config, dtype, shape):
    if gpu_skip_reason(variant, lang, dtype):
        pytest.skip(gpu_skip_reason(variant, lang, dtype))
    result = checked_run(variant, lang, shape, "cuda", dtype, **config)
    assert result.status == bench.STATUS_OK, (result.error, result.bound, result.unwritten, result.note)


@pytest.mark.parametrize("shape", RACE_SHAPES, ids=param_id)
@pytest.mark.parametrize("variant, lang, config, dtype", RACE, ids=param_id)
def test_the_race_is_caught_every_time(variant, lang, config, dtype, shape):
    """v04 must be reported wrong on every one of several fresh runs (its docstring says why it shows)."""
    for _ in range(RACE_REPEATS):
        result = checked_run(variant, lang, shape, "cuda", **config)
        assert result.status == bench.STATUS_EXPECTED_WRONG, (result.error, result.bound)
        assert not result.error <= 100 * result.bound, "a race moves the error far past rounding (or to NaN)"


def test_cublas_baseline_is_ieee_fp32_and_tf32_would_fail_the_fp32_check():
    fp32 = PRECISIONS["fp32"]
    a, b = make_inputs(2048, 2048, 2048, fp32, "cuda", 5)
    ref = reference(a, b)
    try:
        set_fp32_matmul(tf32=True)
        tf32_error = ((a @ b).double() - ref).norm() / ref.norm()
    finally:
        set_fp32_matmul(tf32=False)
    ieee_error = ((a @ b).double() - ref).norm() / ref.norm()
    assert ieee_error < fp32.bound(2048) < tf32_error


def test_cuda_tile_64_is_refused_on_the_gpu_and_the_context_survives():
    v03 = select("smem_tiling")[0]
    a, b = torch.randn(128, 128, device="cuda"), torch.randn(128, 128, device="cuda")
    with pytest.raises(ValueError, match="4096 threads cannot launch"):
        v03.matmul("cuda", a, b, TILE=64)
    c = v03.matmul("cuda", a, b, TILE=32)
    torch.cuda.synchronize()
    assert torch.allclose(c, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("mode", ["events", "graph"])
@pytest.mark.parametrize("lang", ["cuda", "triton"])
def test_timing_records_median_spread_and_resources(mode, lang):
    v03 = select("smem_tiling")[0]
    options = bench.TimingOptions(mode=mode, warmup_ms=2, rep_ms=20, min_runs=5)
    result = bench.measure(
        rung="v03", name=v03.name, config="TILE=32", impl=lang, precision=PRECISIONS["fp32"],
        shape=(512, 512, 512), device=torch.device("cuda"), seed=1,
        prepare=lambda a, b: v03.prepare(lang, a, b, TILE=32), timing=options, cublas_ms=1.0)
    assert result.status == bench.STATUS_OK, result.note
    assert 0 < result.ms_p20 <= result.ms <= result.ms_p80 and result.runs >= 5 and result.tflops > 0
    assert result.pct_cublas == pytest.approx(100.0 / result.ms)
    assert result.registers > 0 and result.local_bytes == 0
    if lang == "cuda":
        assert result.smem_bytes == 2 * 32 * 32 * 4, "CuPy reports the two static TILE×TILE fp32 tiles"


def test_triton_places_the_barriers_itself():
    """v03's Triton kernel has no barrier in its source, yet its PTX synchronises the CTA."""
    v03 = select("smem_tiling")[0]
    a, b = torch.randn(256, 256, device="cuda"), torch.randn(256, 256, device="cuda")
    prepared = v03.prepare("triton", a, b, TILE=32)
    kernel = prepared.run()
    assert "bar.sync" in kernel.asm["ptx"] or "barrier.sync" in kernel.asm["ptx"]


def test_triton_pipelines_the_tile_loads_by_itself():
    """v03's docstring claims Triton stages the tiles through shared memory with cp.async and, with its
    default num_stages, multi-buffers them: more shared memory than with the pipeline switched off."""
    from implementations.v03_smem_tiling import smem_tiling_kernel

    a, b = torch.randn(256, 256, device="cuda"), torch.randn(256, 256, device="cuda")
    c = torch.empty(256, 256, device="cuda")
    shared, ptx = {}, {}
    for stages in (1, 3):
        kernel = smem_tiling_kernel[(8, 8)](
            a, b, c, 256, 256, 256, 256, 1, 256, 1, 256, 1, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, num_stages=stages)
        shared[stages], ptx[stages] = kernel.metadata.shared, kernel.asm["ptx"]
    print(f"Triton v03 TILE=32 shared memory by num_stages: {shared}; "
          f"cp.async in PTX: {[p.count('cp.async') for p in ptx.values()]}")
    assert shared[3] > shared[1] > 0
    assert "cp.async" in ptx[3]


TUNING_SHAPES = [(17, 33, 5), (97, 61, 130), (1100, 300, 70), (1000, 1531, 777), (1000, 1100, 1028), (2048, 2048, 2048)]


@pytest.mark.parametrize("shape", TUNING_SHAPES, ids=param_id)
def test_every_cuda_autotune_candidate_is_correct(shape):
    """The search may pick any candidate for some device and shape: each one must be right."""
    from implementations import v11_autotuned as v11

    for tile in v11.CUDA_CANDIDATES:
        result = bench.measure(
            rung="v11", name="autotuned", config=str(tile), impl="cuda", precision=PRECISIONS["fp32"],
            shape=shape, device=torch.device("cuda"), seed=7,
            prepare=lambda a, b, tile=tile: candidate(a, b, lambda c: v11.launch_candidate(a, b, c, tile)))
        assert result.status == bench.STATUS_OK, (str(tile), result.error, result.bound, result.note)


@pytest.mark.parametrize("shape", TUNING_SHAPES, ids=param_id)
def test_every_triton_autotune_config_is_correct(shape):
    from implementations import v11_autotuned as v11

    for config in v11.TRITON_CONFIGS:
        result = bench.measure(
            rung="v11", name="autotuned", config=v11.describe(config), impl="triton", precision=PRECISIONS["fp32"],
            shape=shape, device=torch.device("cuda"), seed=7,
            prepare=lambda a, b, config=config: candidate(a, b, lambda c: v11.launch_config(a, b, c, config)))
        assert result.status == bench.STATUS_OK, (v11.describe(config), result.error, result.bound, result.note)



@pytest.mark.parametrize("shape", TUNING_SHAPES, ids=param_id)
def test_every_gluon_candidate_is_correct(shape):
    """The Gluon kernel, which no interpreter runs: each candidate on the GPU, ragged and unaligned rows too."""
    from implementations import v11_autotuned as v11

    for tile in v11.GLUON_CANDIDATES:
        result = bench.measure(
            rung="v11", name="autotuned", config=f"gluon {tile}", impl="triton", precision=PRECISIONS["fp32"],
            shape=shape, device=torch.device("cuda"), seed=7,
            prepare=lambda a, b, tile=tile: candidate(a, b, lambda c: v11.launch_gluon(a, b, c, tile)))
        assert result.status == bench.STATUS_OK, (str(tile), result.error, result.bound, result.note)

# The Hopper rungs whose search may pick any candidate on some GPU, with each dtype they claim.
SEARCHED = [("v15_warp_specialized", "bf16"), ("v15_warp_specialized", "fp16"), ("v16_wgmma_tf32", "tf32")]


@pytest.mark.parametrize("module, dtype", SEARCHED)
@pytest.mark.parametrize("shape", TUNING_SHAPES, ids=param_id)
def test_every_cuda_candidate_of_the_hopper_searches_is_correct(shape, module, dtype):
    rung = importlib.import_module(f"implementations.{module}")
    if gpu_skip_reason(rung.VARIANT, "cuda", dtype):
        pytest.skip(gpu_skip_reason(rung.VARIANT, "cuda", dtype))
    for tile in rung.CUDA_CANDIDATES:
        result = bench.measure(
            rung=rung.VARIANT.tag, name=rung.VARIANT.name, config=str(tile), impl="cuda", precision=PRECISIONS[dtype],
            shape=shape, device=torch.device("cuda"), seed=15,
            prepare=lambda a, b, tile=tile: candidate(a, b, lambda c: rung.launch_tile(a, b, c, tile)))
        assert result.status == bench.STATUS_OK, (str(tile), result.error, result.bound, result.note)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("shape", [(1100, 300, 70), (1536, 256, 100), (1000, 1531, 777), (2048, 2048, 2048),
                                   (3000, 2900, 1500)], ids=param_id)
def test_v15_stream_k_is_right_on_any_grid_run_after_run(shape, dtype):
    """Stream-K cuts tiles only when the cluster tiles are more than, and not a multiple of, the clusters:
    grids of a few clusters reach it with small products (the whole GPU's grid with the last shape).
    Each run must lower the flags it raised, or the next would add stale partial sums: three runs
    each, the output poisoned between. 1536×256×100 on 5 clusters is 6 tiles of 2 k-blocks: the
    last tile's 2 k-blocks on 5 clusters leave empty runs between its head and its tail."""
    from implementations import v15_warp_specialized as v15

    if gpu_skip_reason(v15.VARIANT, "cuda", dtype):
        pytest.skip(gpu_skip_reason(v15.VARIANT, "cuda", dtype))
    precision = PRECISIONS[dtype]
    a, b = make_inputs(*shape, precision, "cuda", 21)
    ref = reference(a, b)
    tile = v15.Tile(256, 4, 2, 8, 1)
    for clusters in (3, 5, 7, None):
        c = torch.empty(shape[0], shape[1], device="cuda", dtype=a.dtype)
        refresh, runs = v15.prepare_cuda(a, b, c, (tile,), clusters)
        flags = runs[tile].tensors[-1]
        for _ in range(3):
            poison(c)
            refresh()
            runs[tile]()
            outcome = compare(c, ref, precision.bound(shape[2]))
            assert outcome.ok, (clusters, outcome)
            assert not flags.any(), (clusters, flags)


def test_v15_timeline_stamps_each_cta_in_order_and_leaves_the_product_right():
    """The probe's timeline (scripts/v15_timeline.py): every CTA of the grid stamps a real SM, a start
    before its end, and one rising cycle stamp per tile it took (3 clusters over 12 cluster tiles: 4 each),
    zeros after; the product is as right as without it."""
    from implementations import v15_warp_specialized as v15

    if gpu_skip_reason(v15.VARIANT, "cuda", "bf16"):
        pytest.skip(gpu_skip_reason(v15.VARIANT, "cuda", "bf16"))
    precision = PRECISIONS["bf16"]
    a, b = make_inputs(768, 1024, 200, precision, "cuda", 29)
    c = torch.empty(768, 1024, device="cuda", dtype=a.dtype)
    poison(c)
    tile, clusters = v15.Tile(256, 4, 2, 8), 3
    timeline = torch.zeros(clusters * 2 * v15.TIMELINE_SLOTS, device="cuda", dtype=torch.int64)
    refresh, runs = v15.prepare_cuda(a, b, c, (tile,), clusters, timeline=timeline)
    refresh()
    runs[tile]()
    assert compare(c, reference(a, b), precision.bound(200)).ok
    stamps = timeline.view(clusters * 2, v15.TIMELINE_SLOTS).cpu()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for cta in stamps:
        sm, start_ns, start_clk, end_ns, end_clk, *tiles = cta.tolist()
        assert 0 <= sm < sms and 0 < start_ns <= end_ns, cta
        marks = [start_clk, *tiles[:4], end_clk]
        assert all(x < y for x, y in zip(marks, marks[1:])), cta
        assert not any(tiles[4:]), cta


@pytest.mark.parametrize("module, dtype", SEARCHED)
@pytest.mark.parametrize("shape", TUNING_SHAPES, ids=param_id)
def test_every_triton_config_of_the_hopper_searches_is_correct_on_the_gpu(shape, module, dtype):
    from implementations.v11_autotuned import describe

    rung = importlib.import_module(f"implementations.{module}")
    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("tensor descriptors (TMA) need compute capability 9.0")
    for config in rung.TRITON_CONFIGS:
        result = bench.measure(
            rung=rung.VARIANT.tag, name=rung.VARIANT.name, config=describe(config), impl="triton",
            precision=PRECISIONS[dtype], shape=shape, device=torch.device("cuda"), seed=15,
            prepare=lambda a, b, config=config: candidate(a, b, lambda c: rung.launch_config(a, b, c, config)))
        assert result.status == bench.STATUS_OK, (describe(config), result.error, result.bound, result.note)


def test_triton_tma_rung_compiles_to_wgmma_and_bulk_tensor_copies():
    """What v14's Triton side relies on the compiler for: TMA copies and wgmma in its PTX."""
    from implementations import v14_wgmma_tma as v14

    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("wgmma is Hopper's (sm_90a)")
    a = torch.randn(512, 512, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(512, 512, device="cuda", dtype=torch.bfloat16)
    ptx = v14.wgmma_tma_triton(a, a, c)().asm["ptx"]
    assert "wgmma.mma_async" in ptx and "cp.async.bulk.tensor" in ptx


def test_autotuned_rungs_report_their_choice():
    v11 = select("autotuned")[0]
    for lang in ("cuda", "triton"):
        result = checked_run(v11, lang, (512, 384, 256), "cuda")
        expected = ("autotuned: tl.dot BLOCK_M=", "autotuned: Gluon BM=") if lang == "triton" else ("autotuned: BM=",)
        assert result.status == bench.STATUS_OK and result.note.startswith(expected), result.note
        if lang == "triton":  # the race: tl.dot's autotuned winner against the Gluon candidates
            assert "runner-up" in result.note, result.note


def test_cuda_float4_path_and_scalar_path_agree_with_an_offset_operand():
    """`aligned` is 0 when a base pointer is not 16-byte aligned (a view one float in): the scalar path."""
    from implementations.core.cuda_c import rows_aligned

    storage = torch.randn(1 + 256 * 256, device="cuda")
    a = storage[1:].view(256, 256)
    b = torch.randn(256, 256, device="cuda")
    assert rows_aligned(a, b) == 0 and rows_aligned(b) == 1
    for v in select("7-11"):
        c = v.matmul("cuda", a, b, **v.configs[0])
        torch.cuda.synchronize()
        assert torch.allclose(c, a @ b, rtol=1e-4, atol=1e-3), v.stem


def _ptx_of(variant, shape=(512, 512, 512)):
    M, N, K = shape
    a, b = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
    kernel = variant.prepare("triton", a, b, **variant.configs[0]).run()
    return kernel


def test_triton_vector_loads_come_from_argument_specialization():
    """v07's docstring: Triton emits 16-byte loads when it can prove alignment from the arguments it
    specializes; jitted with specialization off, the same kernel loads 4 bytes at a time."""
    import re

    from implementations.core.triton_util import unspecialized
    from implementations.v03_smem_tiling import smem_tiling_kernel

    a, b, c = (torch.randn(512, 512, device="cuda") for _ in range(3))
    args = (a, b, c, 512, 512, 512, 512, 1, 512, 1, 512, 1)
    knobs = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, num_warps=8, num_stages=1)
    vec = re.compile(r"ld\.global(\.\w+)*\.v4")
    counts = {}
    for label, kernel in (("specialized", smem_tiling_kernel), ("unspecialized", unspecialized(smem_tiling_kernel))):
        counts[label] = len(vec.findall(kernel[(4, 4)](*args, **knobs).asm["ptx"]))
    print(f"ld.global.v4 in the PTX of v07's Triton kernel: {counts}")
    assert counts["specialized"] > 0 and counts["unspecialized"] == 0


def test_triton_double_buffers_with_num_stages():
    """v09's Triton side is v08's with num_stages=3: twice the shared memory, cp.async in its PTX."""
    k08, k09 = _ptx_of(select("8")[0]), _ptx_of(select("9")[0])
    print(f"Triton shared memory: v08 {k08.metadata.shared} B, v09 {k09.metadata.shared} B")
    assert k09.metadata.shared >= 2 * k08.metadata.shared > 0
    assert "cp.async" in k09.asm["ptx"] and "cp.async" not in k08.asm["ptx"]
