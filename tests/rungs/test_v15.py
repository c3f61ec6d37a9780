"""v15 warp specialization on the GPU: every candidate on every layout and batch form, stream-K right run after run,
and the per-CTA timeline."""

import pytest
import torch

from implementations.core.check import LAYOUTS, PRECISIONS, check, compare, make_inputs, poison, reference

from ..helpers import gpu_skip_reason, param_id

pytestmark = pytest.mark.gpu


def v15_or_skip(dtype):
    from implementations import v15_warp_specialized as v15

    if gpu_skip_reason(v15.VARIANT, "cuda", dtype):
        pytest.skip(gpu_skip_reason(v15.VARIANT, "cuda", dtype))
    return v15


# A ragged product (partial tiles on every edge, K not a multiple of 64 or of 8: padded rows), a row of A, one k, a
# product that is whole 128×256 tiles, each in a batch of 3 (both operands, or one shared), and alone.
SHAPES = [(200, 300, 77), (1, 264, 64), (130, 72, 1), (256, 512, 192)]
BATCHES = [(0, 0), (3, 3), (3, 0), (0, 3)]  # (A's batch, B's): 0 is a 2-D operand, shared by a batch


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_v15_every_candidate_reads_every_layout_and_batch_in_place(layout, dtype):
    """Each CUDA candidate, on transposed operands read in place (boxes of the stored matrix, wgmma's transpose
    bits) and on batches in one launch (3-D tensor maps, a matrix shared by the batch read as matrix 0), right
    against float64 into a NaN-poisoned C."""
    v15 = v15_or_skip(dtype)
    precision = PRECISIONS[dtype]
    for M, N, K in SHAPES:
        for a_batch, b_batch in BATCHES:
            a, _ = make_inputs(M, N, K, precision, "cuda", 31, layout=layout, batch=a_batch)
            _, b = make_inputs(M, N, K, precision, "cuda", 37, layout=layout, batch=b_batch)
            check_each_cuda_candidate(v15, a, b, precision, ((M, N, K), (a_batch, b_batch)))


def check_each_cuda_candidate(v15, a, b, precision, what):
    """Every CUDA candidate the search may be given (split-K's and the batch ones too) on these operands, each
    into a NaN-poisoned C, against float64: normwise and element by element (a wrong row of one product in a
    thousand fails)."""
    c = torch.empty(torch.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1]), device="cuda",
                    dtype=a.dtype)
    refresh, runs = v15.prepare_cuda(a, b, c, v15.CUDA_SEARCH.candidates)
    for tile, run in runs.items():
        poison(c)
        refresh()
        run()
        outcome = check(c, a, b, precision)
        assert outcome.ok, (tile, what, outcome.why())


def test_v15_a_thousand_tiny_products_in_one_launch():
    """A batch of 1000 products of 7×5×3: a tile each, mostly outside its matrix (TMA reads zeros there and
    clips the stores, never touching the next matrix), K padded to a 16-byte row pitch."""
    v15 = v15_or_skip("bf16")
    precision = PRECISIONS["bf16"]
    a, b = make_inputs(7, 5, 3, precision, "cuda", 41, batch=1000)
    check_each_cuda_candidate(v15, a, b, precision, "1000×(7x5x3)")


STREAM_K_TILES = [(256, 4, 2, 8, 1), (64, 5, 1, 8, 1, 64)]


@pytest.mark.parametrize("tile", STREAM_K_TILES, ids=param_id)
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("shape", [(1100, 300, 70), (1536, 256, 100), (1000, 1531, 777), (2048, 2048, 2048),
                                   (3000, 2900, 1500)], ids=param_id)
def test_v15_stream_k_is_right_on_any_grid_run_after_run(shape, dtype, tile):
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
    tile = v15.Tile(*tile)
    assert tile in v15.CUDA_CANDIDATES
    for clusters in (3, 5, 7, None):
        c = torch.empty(shape[0], shape[1], device="cuda", dtype=a.dtype)
        refresh, runs = v15.prepare_cuda(a, b, c, (tile,), clusters)
        for _ in range(3):
            poison(c)
            refresh()
            runs[tile]()
            flags = runs[tile].tensors[2]  # the kernel's tensors (bound by the first call): c, partials, flags, ...
            outcome = compare(c, ref, precision.bound(shape[2]))
            assert outcome.ok, (clusters, outcome)
            assert not flags.any(), (clusters, flags)


def test_v15_timeline_stamps_each_cta_in_order_and_leaves_the_product_right():
    """The timeline (python -m implementations.tools.timeline): every CTA of the grid stamps a real SM, a start
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


def test_v15_inside_a_search_the_candidates_compile_when_the_search_says():
    """Inside a search the launcher compiles nothing: each candidate leaves its compile step to the search (which
    runs them side by side when it times the candidates, and none when the tuning cache has the choice), and a
    candidate launched without them compiles at its first call, right."""
    from implementations.core import prebuild

    v15 = v15_or_skip("bf16")
    precision = PRECISIONS["bf16"]
    a, b = make_inputs(300, 200, 100, precision, "cuda", 41)
    c = torch.empty(300, 200, device="cuda", dtype=a.dtype)
    with prebuild.collecting() as steps:
        refresh, runs = v15.prepare_cuda(a, b, c)
    # one per candidate (A's copy to a 16-byte row pitch, a Triton kernel, leaves its own besides)
    kernels = {key for key, _ in steps if isinstance(key, tuple) and key[0] == v15.KERNELS.path}
    assert len(kernels) == len(v15.CUDA_CANDIDATES)
    poison(c)
    refresh()
    runs[v15.CUDA_CANDIDATES[-1]]()
    assert check(c, a, b, precision).ok
