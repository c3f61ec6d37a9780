"""v18 grouped GEMM: every group layout against the float64 reference group by group, on ragged shapes, empty
groups (leading, trailing, all but one), more groups than a warp has lanes, NaN-poisoned outputs and a second run
on new inputs; bad offsets refused with one line. Triton runs in the interpreter here (fp16: the interpreter has
no bf16) with every candidate of its search; on a GPU every candidate of both languages runs, CUDA C included,
through both store paths (a block inside its group by TMA, the one that crosses its end from registers), and
the baselines (the loop, the graphed loop, torch._grouped_mm) pass the same check."""

import pytest
import torch

from implementations import select
from implementations import v18_grouped as v18
from implementations.core import bench
from implementations.core.check import PRECISIONS, check, compare, make_inputs, make_offsets, poison, reference
from implementations.core.env import set_cublas_math
from implementations.core.registry import Prepared
from implementations.core.triton_util import block_of

from ..helpers import checked_run, gpu_skip_reason, skip_unless_runnable

V18 = v18.VARIANT
# (N, K, rows per group): empty groups first, last and between; a group of one row; groups around a 64-row
# block; more groups than a warp has lanes (CUDA C counts the tiles 32 groups at a time); N and K not a multiple
# of 8 (TMA's 16-byte rows: padded copies, and C stored from registers)
LAYOUTS_OF_GROUPS = [
    (40, 70, (10, 0, 130, 60)),
    (48, 33, (0, 0, 97, 0)),
    (24, 16, (1, 63, 64, 65, 0, 129)),
    (37, 9, (3,) * 20 + (0,) * 15 + (70, 1)),
    (64, 64, (128,)),
]


def grouped_run(search, cand, N, K, groups, dtype="fp16", layout="nn", inputs="normal", device="cpu"):
    """One candidate on a grouped problem, checked as compare.py checks (poisoned output, a second run)."""
    return bench.measure(
        rung=V18.tag, name=V18.name, config=search.describe(cand), impl=search.lang, precision=PRECISIONS[dtype],
        shape=(sum(groups), N, K), device=torch.device(device), seed=23, inputs=inputs, layout=layout,
        groups=groups, prepare=lambda a, b, offsets: one_candidate(search, cand, a, b, offsets))


def one_candidate(search, cand, a, b, offsets) -> Prepared:
    c = torch.empty(a.shape[0], b.shape[-1], dtype=a.dtype, device=a.device)
    return Prepared(search.one(a, b, c, cand, offsets=offsets), c)


@pytest.mark.parametrize("N, K, groups", LAYOUTS_OF_GROUPS, ids=lambda x: f"G{len(x)}" if isinstance(x, tuple) else x)
@pytest.mark.parametrize("layout", v18.LAYOUTS)
def test_every_triton_candidate_on_ragged_groups(layout, N, K, groups, device):
    """Every candidate on a GPU; in the interpreter, which ignores warps, stages and flattening, one per block shape
    with stream-K and one without (there the grid has a program per tile any M could have, so stream-K deals out
    every tile's k-blocks)."""
    skip_unless_runnable(V18, "triton", "fp16", device)
    shapes = {(*block_of(c), c.kwargs.get("STREAM_K", False)): c for c in reversed(v18.TRITON_CONFIGS)}
    for config in v18.TRITON_CONFIGS if device.type == "cuda" else shapes.values():
        result = grouped_run(v18.TRITON_SEARCH, config, N, K, groups, layout=layout, device=device.type)
        assert result.status == bench.STATUS_OK, (v18.TRITON_SEARCH.describe(config), result.note, result.worst)


@pytest.mark.parametrize("config", [c for c in v18.TRITON_CONFIGS if c.kwargs.get("STREAM_K")], ids=block_of)
def test_triton_stream_k_over_groups_is_right_on_any_grid_run_after_run(config, device):
    """Eight tiles of 4 k-blocks: on 3 or 5 programs the last round's k-blocks are dealt out, and some runs hold the
    end of one tile and the start of the next, of another group (both of a program's partial slots); on 4 there
    is no last round. Each run must set the counters back to 0, or the next would add too early: three runs, C
    poisoned between."""
    skip_unless_runnable(V18, "triton", "fp16", device)
    groups, N, K = (10, 0, 130, 60, 300, 100), 40, 200
    precision = PRECISIONS["fp16"]
    a, b = make_inputs(sum(groups), N, K, precision, device.type, 31, groups=groups)
    offsets = make_offsets(groups, device.type)
    ref = reference(a, b, groups=groups)
    for grid in (3, 4, 5, None):
        c = torch.empty(sum(groups), N, device=device.type, dtype=a.dtype)
        refresh, runs = v18.prepare_triton(a, b, c, (config,), offsets, grid)
        for _ in range(3):
            poison(c)
            refresh()
            runs[config]()
            outcome = compare(c, ref, precision.bound(K))
            assert outcome.ok, (grid, outcome)
            assert not runs[config].counts.any(), (grid, runs[config].counts)


@pytest.mark.parametrize("N", [37, 40])
def test_nothing_is_written_past_c(N, device):
    """C inside a larger buffer: the rows around it keep their value (the last group's tile past A's end: clipped by
    TMA, N = 40, or masked, N = 37). Between groups the interpreter cannot tell: it runs the programs in order,
    so the next group's tiles would overwrite rows a straddling tile spoiled; the GPU tests can."""
    skip_unless_runnable(V18, "triton", "fp16", device)
    groups = (50, 0, 77)
    a, b = make_inputs(sum(groups), N, 24, PRECISIONS["fp16"], device, 5, groups=groups)
    guarded = torch.full((3 * sum(groups), N), 7.0, dtype=torch.float16, device=device)
    c = guarded[127:254]
    for config in v18.TRITON_CONFIGS[3:6]:  # 256, 128 and 128 rows: a tile past A's end in each
        poison(c)
        v18.TRITON_SEARCH.one(a, b, c, config, offsets=make_offsets(groups, device))()
        assert (guarded[:127] == 7).all() and (guarded[254:] == 7).all(), v18.TRITON_SEARCH.describe(config)
        assert check(c, a, b, PRECISIONS["fp16"], groups=groups).ok


@pytest.mark.parametrize("layout", v18.LAYOUTS)
@pytest.mark.parametrize("search", [v18.TRITON_SEARCH, v18.CUDA_SEARCH], ids=lambda s: s.lang)
def test_a_tile_past_the_last_group_stores_none_of_its_rows(search, layout, device):
    """Offsets that end before A's last row (launched directly, past the host's check): the rows after the
    last group are in no group, so every tile that reaches them must leave them as they were. A row mask at a
    group's end that is off by one, or a TMA store where a masked one belongs, writes them."""
    skip_unless_runnable(V18, search.lang, "fp16", device)
    a, b = make_inputs(40, 24, 16, PRECISIONS["fp16"], device, 3, layout=layout, groups=(10, 0, 30))
    offsets = torch.tensor([10, 10, 25], dtype=torch.int32, device=device)
    c = torch.empty(40, 24, dtype=torch.float16, device=device)
    for candidate in search.candidates:
        poison(c)
        search.one(a, b, c, candidate, offsets=offsets)()
        assert c[25:].isnan().all(), search.describe(candidate)
        assert check(c[:25], a[:25], b, PRECISIONS["fp16"], groups=(10, 0, 15)).ok, search.describe(candidate)


def test_integer_inputs_are_exact_through_the_registry(device):
    """compare.py's path: Variant.prepare validates the offsets and launches the tuned run."""
    skip_unless_runnable(V18, "triton", "fp16", device)
    result = bench.measure(rung=V18.tag, name=V18.name, config="", impl="triton", precision=PRECISIONS["fp16"],
                           shape=(210, 33, 47), device=device, seed=3, inputs="integers", groups=(70, 0, 140),
                           prepare=lambda a, b, **problem: V18.prepare("triton", a, b, **problem))
    assert result.status == bench.STATUS_OK and result.error == 0.0, (result.note, result.worst)
    assert result.groups == "70,0,140" and result.size == "210x33x47 G=3 (70,0,140)"


def test_a_plain_product_is_one_group_and_a_batch_runs_matrix_by_matrix(device):
    skip_unless_runnable(V18, "triton", "fp16", device)
    assert checked_run(V18, "triton", (97, 61, 130), device, "fp16").status == bench.STATUS_OK
    result = checked_run(V18, "triton", (17, 9, 5), device, "fp16", "integers", batch=3)
    assert result.status == bench.STATUS_OK and "one launch per matrix" in result.note, result.note


def test_a_wrong_group_fails_the_check():
    """The check is group by group: B's matrices swapped between two groups is wrong, and caught."""
    groups = (5, 7)
    a, b = make_inputs(12, 6, 4, PRECISIONS["fp16"], "cpu", 1, groups=groups)
    right = torch.cat([a[:5].double() @ b[0].double(), a[5:].double() @ b[1].double()]).half()
    assert check(right, a, b, PRECISIONS["fp16"], groups=groups).ok
    swapped = torch.cat([a[:5].double() @ b[1].double(), a[5:].double() @ b[0].double()]).half()
    assert not check(swapped, a, b, PRECISIONS["fp16"], groups=groups).ok


def test_no_rows_and_no_k(device):
    """A group of no rows computes nothing; with no rows at all nothing launches; K = 0 gives zeros."""
    skip_unless_runnable(V18, "triton", "fp16", device)
    a, b = torch.empty(0, 8, dtype=torch.float16, device=device), torch.randn(3, 8, 5, device=device).half()
    c = V18.matmul("triton", a, b, offsets=make_offsets((0, 0, 0), device))
    assert c.shape == (0, 5)
    a, b = torch.empty(6, 0, dtype=torch.float16, device=device), torch.empty(2, 0, 5, dtype=torch.float16, device=device)
    c = V18.matmul("triton", a, b, offsets=make_offsets((2, 4), device))
    assert torch.equal(c, torch.zeros(6, 5, dtype=torch.float16, device=device))


@pytest.mark.parametrize("offsets, message", [
    ([3, 2, 10], "non-decreasing"),
    ([3, 5, 12], "past the end of A's 10 rows"),
    ([3, 5, 9], "short of A's 10 rows"),
    ([3, 10], "2 offsets for 3 matrices of B"),
    ([-1, 5, 10], "non-decreasing from 0"),
])
def test_bad_offsets_are_refused_in_one_line(offsets, message, device):
    a, b = torch.randn(10, 8, device=device).half(), torch.randn(3, 8, 4, device=device).half()
    with pytest.raises(ValueError, match=message) as error:
        V18.prepare("triton", a, b, offsets=torch.tensor(offsets, dtype=torch.int32, device=device))
    assert "\n" not in str(error.value)


def test_offsets_of_another_type_or_shape_are_refused(device):
    a, b = torch.randn(10, 8, device=device).half(), torch.randn(2, 8, 4, device=device).half()
    with pytest.raises(ValueError, match="1-D int32 tensor"):
        V18.prepare("triton", a, b, offsets=torch.tensor([3, 10], device=device))
    strided = torch.tensor([3, 99, 10, 99], dtype=torch.int32, device=device)[::2]  # valid values, not an array
    with pytest.raises(ValueError, match="contiguous 1-D int32 tensor .* strides \\(2,\\)"):
        V18.prepare("triton", a, b, offsets=strided)
    with pytest.raises(TypeError, match="offsets must be a torch.Tensor"):
        V18.prepare("triton", a, b, offsets=[3, 10])
    with pytest.raises(ValueError, match="2-D\\) and B as one matrix per group"):
        V18.prepare("triton", a, b[0], offsets=make_offsets((3, 7), device))


def test_a_rung_without_a_grouped_kernel_says_so(device):
    v17 = select("17")[0]
    a, b = torch.randn(10, 8, device=device).half(), torch.randn(2, 8, 4, device=device).half()
    with pytest.raises(ValueError, match="v17_fused_epilogue triton has no grouped kernel"):
        v17.prepare("triton", a, b, offsets=make_offsets((3, 7), device))


def test_the_groups_are_in_the_search_key():
    a, b, c = torch.zeros(12, 8), torch.zeros(2, 8, 8), torch.zeros(12, 8)
    keys = {v18.TRITON_SEARCH.key(a, b, c, groups=groups) for groups in ((4, 8), (8, 4), (0, 12))}
    assert len(keys) == 3 and '"groups": [4, 8]' in v18.TRITON_SEARCH.key(a, b, c, groups=(4, 8))
    assert '"groups"' not in v18.TRITON_SEARCH.key(a, b[0], c), "a plain product keeps the key it had"


def test_v18_instantiates_v15s_kernel_with_its_groups():
    """v18's .cu defines the groups and nothing else: its kernels are v15's, by name, for the layouts it reads."""
    assert all(name.startswith(("warp_specialized<", "warp_specialized_unclustered<"))
               and name.endswith(",NoEpilogue,Groups>")
               for name in v18.KERNELS.kernels)
    assert len(v18.KERNELS.kernels) == 2 * len(v18.LAYOUTS) * len(v18.CUDA_CANDIDATES)
    source = v18.KERNELS.path.read_text()
    assert '#include "v15_warp_specialized.cu"' in source and "__global__" not in source


# ---- on the GPU ------------------------------------------------------------------------------------------

# groups of 128-row tiles and of none; ragged groups around 64- and 128-row blocks; many small groups;
# N % 8 != 0 (C stored from registers throughout)
GPU_GROUPS = [
    (256, 512, (128, 256, 0, 512, 768)),
    (520, 200, (0, 63, 64, 65, 127, 129, 300, 0)),
    (384, 256, (1,) * 40 + (37,) * 24 + (0,) * 36),
    (61, 130, (97, 0, 33)),
]


@pytest.mark.gpu
@pytest.mark.parametrize("N, K, groups", GPU_GROUPS, ids=lambda x: f"G{len(x)}" if isinstance(x, tuple) else x)
@pytest.mark.parametrize("layout", v18.LAYOUTS)
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("search", [v18.CUDA_SEARCH, v18.TRITON_SEARCH], ids=lambda s: s.lang)
def test_every_candidate_on_ragged_groups_on_the_gpu(search, dtype, layout, N, K, groups):
    if gpu_skip_reason(V18, search.lang, dtype):
        pytest.skip(gpu_skip_reason(V18, search.lang, dtype))
    for cand in search.candidates:
        result = grouped_run(search, cand, N, K, groups, dtype, layout, device="cuda")
        assert result.status == bench.STATUS_OK, (search.describe(cand), result.note, result.worst)


@pytest.mark.gpu
@pytest.mark.parametrize("N, K, groups", GPU_GROUPS[:3], ids=lambda x: f"G{len(x)}" if isinstance(x, tuple) else x)
def test_stream_k_over_groups_is_right_on_any_grid_run_after_run(N, K, groups):
    """Stream-K deals the last round's k-blocks out across group boundaries: grids of a few clusters reach it on
    these small problems (whole tiles first, then runs that start and end inside tiles of different groups). Each
    run must lower the flags it raised, or the next would add stale partial sums: three runs, C poisoned between."""
    if gpu_skip_reason(V18, "cuda", "bf16"):
        pytest.skip(gpu_skip_reason(V18, "cuda", "bf16"))
    [tile] = [t for t in v18.CUDA_CANDIDATES if t.STREAM_K]
    precision = PRECISIONS["bf16"]
    a, b = make_inputs(sum(groups), N, K, precision, "cuda", 29, groups=groups)
    offsets = make_offsets(groups, "cuda")
    ref = reference(a, b, groups=groups)
    for clusters in (2, 3, 5, None):
        c = torch.empty(sum(groups), N, device="cuda", dtype=a.dtype)
        refresh, runs = v18.prepare_cuda(a, b, c, (tile,), offsets, clusters)
        for _ in range(3):
            poison(c)
            refresh()
            runs[tile]()
            flags = runs[tile].tensors[2]  # the kernel's tensors (bound by the first call): c, partials, flags, ...
            outcome = compare(c, ref, precision.bound(K))
            assert outcome.ok, (clusters, outcome)
            assert not flags.any(), (clusters, flags)


@pytest.mark.gpu
def test_the_timeline_counts_the_groups_tiles_as_the_kernel_does():
    """The timeline tool (python -m implementations.tools.timeline --groups) reckons each CTA's tiles from
    v18.cluster_tiles: on 3 clusters the kernel's stamps must show exactly that many tiles per CTA."""
    if gpu_skip_reason(V18, "cuda", "bf16"):
        pytest.skip(gpu_skip_reason(V18, "cuda", "bf16"))
    from implementations.v15_warp_specialized import TIMELINE_SLOTS

    groups, N, K, clusters = (128, 0, 300, 72, 512), 512, 128, 3
    precision = PRECISIONS["bf16"]
    a, b = make_inputs(sum(groups), N, K, precision, "cuda", 29, groups=groups)
    c = torch.empty(sum(groups), N, device="cuda", dtype=a.dtype)
    tile = v18.CUDA_CANDIDATES[0]
    timeline = torch.zeros(clusters * tile.CLUSTER_M * TIMELINE_SLOTS, device="cuda", dtype=torch.int64)
    refresh, runs = v18.prepare_cuda(a, b, c, (tile,), make_offsets(groups, "cuda"), clusters, timeline=timeline)
    poison(c)
    refresh()
    runs[tile]()
    assert compare(c, reference(a, b, groups=groups), precision.bound(K)).ok
    total = v18.cluster_tiles(N, groups, tile)
    # tile rows 1, 0, 3, 1, 4 of 2 tile columns: pairs stacked along M (2 cluster tiles a pair of rows), and
    # each odd row left over with its 2 tiles side by side along N (1 cluster tile)
    assert total == 1 + 0 + (2 + 1) + 1 + 2 * 2
    stamps = timeline.view(clusters * tile.CLUSTER_M, TIMELINE_SLOTS).cpu()
    for cta, row in enumerate(stamps.tolist()):
        taken = len(range(cta // tile.CLUSTER_M, total, clusters))
        tiles = row[5:]
        assert all(tiles[:taken]) and not any(tiles[taken:]), (cta, taken, row)


@pytest.mark.gpu
@pytest.mark.parametrize("lang", ["cuda", "triton"])
def test_the_routings_run_exact_on_the_gpu(lang):
    """The benchmark's shapes, integer inputs: exact up to the one rounding of C to bf16."""
    if gpu_skip_reason(V18, lang, "bf16"):
        pytest.skip(gpu_skip_reason(V18, lang, "bf16"))
    result = bench.measure(rung=V18.tag, name=V18.name, config="", impl=lang, precision=PRECISIONS["bf16"],
                           shape=(8832, 2048, 4096), device=torch.device("cuda"), seed=3, inputs="integers",
                           groups=(128, 256, 512, 768, 1024, 1536, 2048, 2560),
                           prepare=lambda a, b, **problem: V18.prepare(lang, a, b, **problem))
    assert result.status == bench.STATUS_OK and result.error <= 2.0 ** -8, (result.note, result.worst)


@pytest.mark.gpu
@pytest.mark.parametrize("lang", ["cuda", "triton"])
def test_stale_offsets_cannot_write_outside_c(lang):
    """Offsets changed on the device after the run was prepared (decreasing, past A): the kernels clamp every group
    to A's rows, so nothing outside C is written (the guard rows around C keep their value)."""
    if gpu_skip_reason(V18, lang, "bf16"):
        pytest.skip(gpu_skip_reason(V18, lang, "bf16"))
    M, N = 300, 128
    a, b = make_inputs(M, N, 64, PRECISIONS["bf16"], "cuda", 5, groups=(100, 100, 100))
    offsets = make_offsets((100, 100, 100), "cuda")
    guarded = torch.full((3 * M, N), 7.0, dtype=torch.bfloat16, device="cuda")
    prepared = V18.prepare(lang, a, b, out=guarded[M:2 * M], offsets=offsets)
    offsets.copy_(torch.tensor([250, 40, 9000], dtype=torch.int32))
    poison(prepared.out)
    prepared.run()
    torch.cuda.synchronize()
    assert (guarded[:M] == 7).all() and (guarded[2 * M:] == 7).all()
    assert not prepared.out.isnan().any(), "every row of C belongs to some clamped group"


@pytest.mark.gpu
@pytest.mark.parametrize("impl", ["cublas", "grouped_mm", "loop_graph"])
def test_the_baselines_compute_the_groups(impl):
    """The loop of torch.matmul (the cuBLAS row), the same loop replayed from a CUDA graph, and torch._grouped_mm
    (bf16: CUTLASS's grouped kernel on Hopper) pass the same check as the rung, empty groups included."""
    set_cublas_math(tf32=False)
    prepare = {"cublas": bench.cublas_prepare, "grouped_mm": bench.grouped_mm_prepare,
               "loop_graph": bench.loop_graph_prepare}[impl]
    for groups in ((128, 0, 300, 72), (0, 1000)):
        result = bench.measure(rung=impl, name=impl, config="", impl=impl, precision=PRECISIONS["bf16"],
                               shape=(sum(groups), 256, 192), device=torch.device("cuda"), seed=5, prepare=prepare,
                               groups=groups)
        assert result.status == bench.STATUS_OK, (groups, result.note, result.worst)
