"""v15's swapped products (SWAP_AB), both languages: C = A·B computed as Cᵀ = Bᵀ·Aᵀ for products of a few rows,
written back transposed into C itself; right on ragged shapes, batches and both layouts it reads (A row-major),
run after run (split-K's counters), and offered to the search only for few rows of a row-major A. On the CPU
Triton's kernel runs in the interpreter (fp16); the CUDA C tiles need an sm_90a GPU."""

import pytest
import torch

from implementations.core.check import PRECISIONS, check, make_inputs, poison

from ..helpers import param_id

# Fewer rows than the narrowest tile, one row, k-blocks fewer than the slices, ragged everywhere (padded rows),
# rows that fill a 16- and a 32-wide tile, a batch, a batch sharing B and one sharing A.
CASES = [((5, 70, 130), (0, 0)), ((1, 96, 520), (0, 0)), ((16, 128, 40), (0, 0)), ((30, 100, 200), (0, 0)),
         ((7, 64, 64), (3, 3)), ((12, 72, 96), (3, 0)), ((9, 80, 72), (0, 3))]


@pytest.mark.parametrize("layout", ["nn", "nt"])
@pytest.mark.parametrize("lang", ["triton", "cuda"])
@pytest.mark.parametrize("case", CASES, ids=param_id)
def test_swapped_products_are_right_and_the_same_run_after_run(case, lang, layout, device):
    from implementations import v15_warp_specialized as v15

    if device.type == "cuda" and torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("TMA descriptors and wgmma: sm_90")
    if lang == "cuda" and device.type != "cuda":
        pytest.skip("the CUDA C kernel needs an sm_90a GPU")
    (M, N, K), (a_batch, b_batch) = case
    for dtype in ["fp16"] if device.type == "cpu" else ["fp16", "bf16"]:
        precision = PRECISIONS[dtype]
        a, _ = make_inputs(M, N, K, precision, device, 11, layout=layout, batch=a_batch)
        _, b = make_inputs(M, N, K, precision, device, 13, layout=layout, batch=b_batch)
        c = torch.empty(torch.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (M, N), device=device, dtype=a.dtype)
        if lang == "cuda":
            refresh, runs = v15.prepare_cuda(a, b, c, v15.CUDA_SWAP_CANDIDATES)
        else:
            refresh, runs = v15.prepare_triton(a, b, c, v15.SWAP_CONFIGS)
        assert len(runs) == len(v15.CUDA_SWAP_CANDIDATES if lang == "cuda" else v15.SWAP_CONFIGS)
        for config, run in runs.items():
            first = None
            for _ in range(3):  # a launch that left a split-K counter raised would skip or repeat a sum in the next
                poison(c)
                refresh()
                run()
                outcome = check(c, a, b, precision)
                assert outcome.ok, (config, case, layout, dtype, outcome.why())
                first = c.clone() if first is None else first
                assert torch.equal(c, first), (config, case, layout, dtype, "differs from the first run")


def test_a_transposed_a_is_not_swapped():
    """A' = Aᵀ must be K-major: a transposed A leaves the swapped tiles and configs out, in both languages."""
    from implementations import v15_warp_specialized as v15

    a = torch.empty(64, 16, dtype=torch.float16).mT
    b, c = torch.empty(64, 256, dtype=torch.float16), torch.empty(16, 256, dtype=torch.float16)
    assert not set(v15.CUDA_SWAP_CANDIDATES) & set(v15.cuda_candidates(a, b, c))
    assert not set(v15.SWAP_CONFIGS) & set(v15.triton_candidates(a, b, c))
    assert v15.prepare_triton(a, b, c, v15.SWAP_CONFIGS)[1] == {}
    for layout in ("tn", "tt"):
        assert not set(v15.CUDA_SWAP_CANDIDATES) & set(v15.CUDA_SEARCH.offered(layout))
        assert not set(v15.SWAP_CONFIGS) & set(v15.TRITON_SEARCH.offered(layout))
    assert set(v15.SWAP_CONFIGS) <= set(v15.TRITON_SEARCH.offered("nt"))


@pytest.mark.parametrize("M, cuda_widths, triton_widths", [
    (1, {8, 16}, {16, 32}), (8, {8, 16}, {16, 32}), (9, {16, 32}, {16, 32}), (16, {16, 32}, {16, 32}),
    (17, {32}, {32}), (32, {32}, {32}), (33, set(), set()), (4096, set(), set())])
def test_the_search_is_given_the_swapped_tiles_that_hold_the_rows(M, cuda_widths, triton_widths):
    """The narrowest width that holds M rows and twice that: CUDA C's narrowest is m64n8, Triton's tl.dot takes 16
    columns at least."""
    from implementations import v15_warp_specialized as v15

    a, b = torch.empty(M, 4096, dtype=torch.bfloat16), torch.empty(4096, 4096, dtype=torch.bfloat16)
    c = torch.empty(M, 4096, dtype=torch.bfloat16)
    cuda = {t.BN for t in v15.cuda_candidates(a, b, c) if t.SWAP_AB}
    triton = {cfg.kwargs["BLOCK_N"] for cfg in v15.triton_candidates(a, b, c) if cfg.kwargs.get("SWAP_AB")}
    assert cuda == cuda_widths and triton == triton_widths


def test_a_swapped_tile_reads_the_transposed_layout_and_names_itself():
    from implementations import v15_warp_specialized as v15

    tile = v15.Tile(16, 8, 1, 8, 0, 64, 2, 1, 1)
    assert [tile.kernel_layout(lay) for lay in ("nn", "nt")] == ["tt", "nt"]
    assert tile.reads("nn") and tile.reads("nt") and not tile.reads("tn") and not tile.reads("tt")
    assert (tile.kernel(torch.bfloat16, "tt")
            == "warp_specialized_unclustered<1,16,8,1,8,0,64,2,1,1,1,1,NoEpilogue,NoGroups>")
    assert str(tile).endswith("SPLIT_K=2 SWAP_AB=1")
    assert v15.Tile(16, 8, 1, 8).kernel_layout("nn") == "nn"
