"""v15 warp specialization on the GPU: stream-K right run after run, and the per-CTA timeline."""

import pytest
import torch

from implementations.core.check import PRECISIONS, compare, make_inputs, poison, reference

from ..helpers import gpu_skip_reason, param_id

pytestmark = pytest.mark.gpu


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
        flags = runs[tile].tensors[2]  # the kernel's tensors: c, partials, flags, timeline, bias
        for _ in range(3):
            poison(c)
            refresh()
            runs[tile]()
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
