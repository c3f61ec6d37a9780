"""The rung diagrams: every one renders, and what it draws is what the rung's config and index expressions say.

The expected figures are computed here from the rungs' configs and from the .cu's expressions written out
again, not through the drawing code's helpers; the drawn ones are counted off the figures' artists.
"""

import dataclasses
import math
import re
import sys

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgb
from matplotlib.patches import Rectangle
from matplotlib.text import Text

from implementations import all_variants
from implementations.tools import diagrams
from implementations.tools.lessons import build_lessons
from implementations.tools.timeline import TILES

pytestmark = pytest.mark.xdist_group("test_diagrams")

VARIANTS = {v.stem: v for v in all_variants()}


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """Every rung's diagrams, each rendered to PNG once."""
    out = tmp_path_factory.mktemp("diagrams")
    found = {}
    for stem, variant in VARIANTS.items():
        found[stem] = diagrams.diagrams_of(variant)
        for d in found[stem]:
            diagrams.save(d.figure, out / f"{d.name}.png")
    return found, out


def one(drawn, stem: str, suffix: str):
    matches = [d for d in drawn[0][stem] if d.name.endswith(suffix)]
    assert len(matches) == 1, [d.name for d in drawn[0][stem]]
    return matches[0]


def patches(artist, gid: str) -> list[Rectangle]:
    return [p for p in artist.findobj(Rectangle) if p.get_gid() == gid]


def texts(ax) -> list[Text]:
    return [t for t in ax.texts if t.get_text()]


def module(stem: str):
    return sys.modules[VARIANTS[stem].module]


def luminance(colour) -> float:
    r, g, b = to_rgb(colour)
    return 0.299 * r + 0.587 * g + 0.114 * b


# ---- every rung, every picture ------------------------------------------------------------------------


def test_every_rung_has_a_picture_and_the_registry_names_only_rungs(drawn):
    assert set(diagrams.DIAGRAMS) <= set(VARIANTS)
    for stem, found in drawn[0].items():
        assert found, f"{stem} has no diagram"
        names = [d.name for d in found]
        assert len(set(names)) == len(names)
        for d in found:
            assert d.name.startswith(VARIANTS[stem].tag) and d.caption.startswith(VARIANTS[stem].tag)


def test_every_picture_renders_as_a_readable_png(drawn):
    from PIL import Image

    for found in drawn[0].values():
        for d in found:
            image = Image.open(drawn[1] / f"{d.name}.png").convert("L")
            assert image.width >= 600 and image.height >= 150, d.name
            assert len(image.getcolors(1 << 16)) > 8, f"{d.name} is blank"


def test_no_label_is_clipped_or_too_small(drawn):
    for found in drawn[0].values():
        for d in found:
            fig = d.figure
            renderer = FigureCanvasAgg(fig).get_renderer()
            fig.draw(renderer)
            box = fig.bbox
            unseen = set()  # tick labels past the axis limits, which matplotlib does not draw
            for ax in fig.axes:
                for axis, limits in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
                    lo, hi = sorted(limits)
                    unseen |= {id(label) for loc, label in zip(axis.get_ticklocs(), axis.get_ticklabels())
                               if not lo <= loc <= hi}
            for t in fig.findobj(Text):
                if not t.get_text() or not t.get_visible() or id(t) in unseen or t.get_clip_on() and \
                        t.axes is not None and t.get_clip_box() is not None:
                    continue
                assert t.get_fontsize() >= 5, f"{d.name}: {t.get_text()!r} is too small to read"
                extent = t.get_window_extent(renderer)
                assert extent.x0 >= box.x0 - 1 and extent.x1 <= box.x1 + 1, f"{d.name}: {t.get_text()!r} off the side"
                assert extent.y0 >= box.y0 - 1 and extent.y1 <= box.y1 + 1, f"{d.name}: {t.get_text()!r} off the edge"


def test_what_is_pointed_at_stays_apart_in_grey():
    steps = sorted(luminance(f) for f in diagrams.FILLS)
    assert min(b - a for a, b in zip(steps, steps[1:])) >= 0.12
    assert luminance(diagrams.MARK) < min(steps) - 0.2


def test_marked_elements_are_dark_in_every_picture(drawn):
    marks = ("warp-mark", "lane-mark", "conflict", "race", "lost", "wave", "k-step-mark")
    for found in drawn[0].values():
        for d in found:
            for gid in marks:
                for p in patches(d.figure, gid):
                    assert luminance(p.get_facecolor()) < 0.35, f"{d.name}: a {gid} is not dark"


# ---- mapping of work ----------------------------------------------------------------------------------


def block_and_threads(stem: str) -> tuple[int, int, int, int]:
    """(BM, BN, threads per block, outputs per thread) from the rung's config, as its launcher computes them."""
    m = module(stem)
    if stem in ("v05_blocktiling_1d",):
        c = VARIANTS[stem].configs[0]
        return c["BM"], c["BN"], c["BM"] * c["BN"] // c["TM"], c["TM"]
    if stem in ("v06_blocktiling_2d", "v07_vectorize", "v08_bank_conflicts"):
        c = VARIANTS[stem].configs[0]
        return c["BM"], c["BN"], c["BM"] * c["BN"] // (c["TM"] * c["TN"]), c["TM"] * c["TN"]
    if stem in ("v10_warptiling", "v11_autotuned"):
        c = VARIANTS[stem].configs[0] if stem == "v10_warptiling" else m.CUDA_CANDIDATES[0]._asdict()
        threads = (c["BM"] // c["WM"]) * (c["BN"] // c["WN"]) * 32
        return c["BM"], c["BN"], threads, c["BM"] * c["BN"] // threads
    if stem in ("v12_wmma", "v13_mma_sync"):
        c = VARIANTS[stem].configs[0]
        threads = (c["BM"] // c["WM"]) * (c["BN"] // c["WN"]) * 32
        return c["BM"], c["BN"], threads, c["BM"] * c["BN"] // threads
    if stem == "v14_wgmma_tma":
        return m.BM, m.BN, 256, m.BM * m.BN // 256
    if stem == "v15_warp_specialized":
        return m.BM, m.CUDA_CANDIDATES[0].BN, 256, m.BM * m.CUDA_CANDIDATES[0].BN // 256
    if stem == "v16_wgmma_tf32":
        return m.BM, m.BN, 256, m.BM * m.BN // 256
    raise KeyError(stem)


TILED = ["v05_blocktiling_1d", "v06_blocktiling_2d", "v07_vectorize", "v08_bank_conflicts", "v10_warptiling",
         "v11_autotuned", "v12_wmma", "v13_mma_sync", "v14_wgmma_tma", "v15_warp_specialized", "v16_wgmma_tf32"]


@pytest.mark.parametrize("stem", TILED)
def test_block_tiles_across_and_down_are_ceil_of_the_size_over_the_tile(drawn, stem):
    d = one(drawn, stem, "_tiles")
    bm, bn, threads, outputs = block_and_threads(stem)
    M, N = d.facts["example"]
    assert (M % bm, N % bn) != (0, 0), "the example should be ragged, or ceil() would not show"
    grid_ax = d.figure.axes[0]
    tiles = patches(grid_ax, "block-tile")
    assert len(tiles) == math.ceil(M / bm) * math.ceil(N / bn)
    assert len({p.get_x() for p in tiles}) == math.ceil(N / bn)
    assert len({p.get_y() for p in tiles}) == math.ceil(M / bm)
    assert {(p.get_width(), p.get_height()) for p in tiles} == {(bn, bm)}
    assert d.facts["threads"] == threads and d.facts["thread_elements"] == outputs


@pytest.mark.parametrize("stem", [s for s in TILED if s < "v14"])
def test_the_block_is_drawn_as_its_warps_and_one_thread_holds_its_outputs(drawn, stem):
    d = one(drawn, stem, "_tiles")
    bm, bn, threads, outputs = block_and_threads(stem)
    warps = patches(d.figure.axes[1], "warp-tile")
    assert len(warps) == threads // 32
    assert sum(p.get_width() * p.get_height() for p in warps) == bm * bn  # they cover the tile, no overlap
    lane0 = patches(d.figure.axes[1], "warp-mark")
    assert len(lane0) == bm * bn // (threads // 32), "warp 0's elements"
    if stem != "v12_wmma" and stem != "v13_mma_sync":  # those zoom into one fragment
        assert len(patches(d.figure.axes[2], "lane-mark")) == outputs


def test_v10_lanes_own_4x4_blocks_every_16_rows_and_32_columns(drawn):
    d = one(drawn, "v10_warptiling", "_tiles")
    cells = {(int(p.get_y()), int(p.get_x())) for p in patches(d.figure.axes[2], "lane-mark")}
    c = VARIANTS["v10_warptiling"].configs[0]
    expected = {(mi * 16 + i, ni * 32 + j) for mi in range(c["WM"] // 16) for ni in range(c["WN"] // 32)
                for i in range(4) for j in range(4)}
    assert cells == expected


def test_a_config_change_redraws_the_tiles():
    v06 = VARIANTS["v06_blocktiling_2d"]
    changed = dataclasses.replace(v06, configs=({"BM": 64, "BN": 128, "TM": 8, "TN": 8},))
    d = [x for x in diagrams.diagrams_of(changed) if x.name.endswith("_tiles")][0]
    M, N = d.facts["example"]
    assert len(patches(d.figure.axes[0], "block-tile")) == math.ceil(M / 64) * math.ceil(N / 128)
    assert len(patches(d.figure.axes[1], "warp-tile")) == 64 * 128 // 64 // 32
    assert "BM=64" in d.figure.get_suptitle()


# ---- one warp, one instruction -----------------------------------------------------------------------


def lines(addresses: list[int]) -> int:
    return len({a // 128 for a in addresses})


@pytest.mark.parametrize("stem", ["v01_naive", "v02_coalesced"])
def test_uncoalesced_and_coalesced_transactions_follow_the_address_expression(drawn, stem):
    d = one(drawn, stem, "_warp_loads")
    K, T = d.facts["K"], module(stem).THREADS
    lanes = [(t % T, t // T) for t in range(32)]  # (threadIdx.x, threadIdx.y), block 0
    if stem == "v01_naive":  # row = threadIdx.x, col = threadIdx.y
        a = [4 * (tx * K) for tx, ty in lanes]
        b = [4 * ty for tx, ty in lanes]
    else:  # col = threadIdx.x, row = threadIdx.y
        a = [4 * (ty * K) for tx, ty in lanes]
        b = [4 * tx for tx, ty in lanes]
    assert d.facts["transactions"] == {"A": lines(a), "B": lines(b)}
    drawn_lines = [len(patches(ax, "line")) for ax in d.figure.axes]
    assert drawn_lines == [lines(a), lines(b)]
    expected = {"v01_naive": (32, 1), "v02_coalesced": (1, 1)}[stem]
    assert (lines(a), lines(b)) == expected


def test_float4_loads_take_a_quarter_of_the_instructions(drawn):
    d = one(drawn, "v07_vectorize", "_float4")
    BN = VARIANTS["v07_vectorize"].configs[0]["BN"]
    scalar = [4 * (lane % BN) for lane in range(32)]  # b_tile[k][col], col = tid % BN
    vector = [4 * 4 * (lane % (BN // 4)) + 4 * q for lane in range(32) for q in range(4)]  # col = (tid % (BN/4))·4
    assert d.facts == {"v06": {"lines": lines(scalar), "instructions": math.ceil(BN / 32)},
                       "v07": {"lines": lines(vector), "instructions": math.ceil(BN / 128)}}
    assert [len(patches(ax, "line")) for ax in d.figure.axes] == [lines(scalar), lines(vector)]


def bank_wavefronts(words: list[list[int]], per_phase: int) -> int:
    """Each phase of `per_phase` lanes costs as many wavefronts as the most distinct words any bank holds."""
    total = 0
    for first in range(0, 32, per_phase):
        banks: dict[int, set[int]] = {}
        for lane in range(first, first + per_phase):
            for w in words[lane]:
                banks.setdefault(w % 32, set()).add(w)
        total += max(map(len, banks.values()))
    return total


def test_bank_conflicts_before_and_after_the_fix_follow_the_index_expressions(drawn):
    d = one(drawn, "v08_bank_conflicts", "_banks")
    c = VARIANTS["v08_bank_conflicts"].configs[0]
    BM, BN, TN, BK = c["BM"], c["BN"], c["TN"], module("v08_bank_conflicts").BK
    pad = int(re.search(r"PAD = (\d+)", VARIANTS["v08_bank_conflicts"].cuda_source.path.read_text()).group(1))
    expected = {}
    for kernel, row in (("v07", BM), ("v08", BM + pad)):
        # a_tile[k + 0][r] = v.x with r = tid / (BK/4), k = (tid % (BK/4))·4: one 4-byte word per lane
        store = [[(lane % (BK // 4)) * 4 * row + lane // (BK // 4)] for lane in range(32)]
        # v07: b_tile[k][thread_col·TN + j], v08: b_tile[k][(j/4)·CHUNK_STRIDE + thread_col·4], j = 0: a float4
        first = [(lane % (BN // TN)) * (TN if kernel == "v07" else 4) for lane in range(32)]
        read = [[f + q for q in range(4)] for f in first]
        expected[kernel] = (bank_wavefronts(store, 32), bank_wavefronts(read, 8))
    assert expected == {"v07": (2, 8), "v08": (1, 4)}, "v08's docstring: two 2-way conflicts removed"
    got = {}
    for (kernel, what), wavefronts in d.facts.items():
        got.setdefault(kernel, [None, None])["read" in what] = wavefronts
    assert {k: tuple(v) for k, v in got.items()} == expected
    conflicted = [len(patches(ax, "conflict")) for ax in d.figure.axes]  # v07 store, v08 store, v07 read, v08 read
    assert conflicted[1] == conflicted[3] == 0 and conflicted[0] > 0 and conflicted[2] > 0


# ---- time ----------------------------------------------------------------------------------------------


def test_v09_draws_the_stages_the_kernels_have(drawn):
    d = one(drawn, "v09_double_buffering", "_k_loop")
    variant = VARIANTS["v09_double_buffering"]
    cuda = int(re.search(r"constexpr int STAGES = (\d+);", variant.cuda_source.path.read_text()).group(1))
    captured = {}
    m = module("v09_double_buffering")
    original = m.launch_smem_tiling
    try:
        m.launch_smem_tiling = lambda *a, **kw: captured.update(kw)
        m.double_buffering_triton(None, None, None, **variant.configs[0])
    finally:
        m.launch_smem_tiling = original
    assert d.facts["stages"] == {"cuda": cuda, "triton": captured["num_stages"]}
    buffers = [[t.get_text() for t in ax.get_yticklabels() if t.get_text().startswith("buffer")]
               for ax in d.figure.axes]
    assert [len(b) for b in buffers] == [1, cuda, captured["num_stages"]]
    one_buffer, double = d.facts[1]["end"], d.facts[cuda]["end"]
    assert double < one_buffer, "overlapping copies with multiplies ends sooner"


@pytest.mark.parametrize("stem,suffix", [("v14_wgmma_tma", "_pipeline"), ("v15_warp_specialized", "_pipeline"),
                                         ("v16_wgmma_tf32", "_pipeline")])
def test_the_tma_ring_has_the_rungs_stages_and_says_it_is_a_schedule(drawn, stem, suffix):
    d = one(drawn, stem, suffix)
    m = module(stem)
    stages = m.STAGES if stem == "v14_wgmma_tma" else m.CUDA_CANDIDATES[0].STAGES
    slots = [t.get_text() for t in d.figure.axes[0].get_yticklabels() if t.get_text().startswith("slot")]
    assert len(slots) == stages
    assert "not a measurement" in d.caption


def test_v15_cluster_ranks_take_alternate_b_boxes(drawn):
    d = one(drawn, "v15_warp_specialized", "_cluster")
    tile = module("v15_warp_specialized").CUDA_CANDIDATES[0]
    width = int(re.search(r"V15_ROW_BYTES = (\d+);", VARIANTS["v15_warp_specialized"].cuda_source.path
                          .read_text()).group(1)) // 2  # 16-bit elements per box row
    boxes = sorted(patches(d.figure, "b-box"), key=lambda p: p.get_x())
    assert len(boxes) == tile.BN // width
    labels = sorted((t.get_position()[0], t.get_text()) for t in texts(d.figure.axes[0]) if t.get_text().startswith("box"))
    assert [text.split()[-1] for _, text in labels] == [str(b % tile.CLUSTER_M) for b in range(len(boxes))]
    assert len(patches(d.figure, "cta-tile")) == tile.CLUSTER_M


def test_v15_measured_walk_draws_each_cta_and_each_tile_it_took(drawn):
    d = one(drawn, "v15_warp_specialized", "_measured")
    saved = np.load(diagrams.V15_STAMPS)
    rows = [c for c in d.figure.axes[0].collections if c.get_gid() == "cta"]
    assert len(rows) == saved["stamps"].shape[1] == d.facts["ctas"]
    tiles_stamped = np.minimum(saved["taken"], saved["stamps"].shape[2] - TILES)  # the kernel stamps its first tiles
    for row, taken in zip(rows, tiles_stamped):
        assert len(row.get_paths()) in (taken, taken + 1)  # a span per tile, and the last epilogue's
    assert "measured" in d.caption and "H100" in d.caption


def test_v04_shows_every_warp_writing_what_thread_0_reads_and_the_lost_updates(drawn):
    d = one(drawn, "v04_smem_no_sync", "_race")
    tile = VARIANTS["v04_smem_no_sync"].configs[0]["TILE"]
    writers = {(k * tile + 0) // 32 for k in range(tile)}  # b_tile[k][0] is stored by thread k·TILE + 0
    assert d.facts["writers_read"] == len(writers) == tile * tile // 32
    assert len(patches(d.figure, "race")) == d.facts["races"] > 0
    assert len(patches(d.figure, "lost")) == module("v04_smem_no_sync").SPLIT_K - 1


def test_v03_walks_ceil_k_over_tile_steps_per_config(drawn):
    for config in VARIANTS["v03_smem_tiling"].configs:
        d = one(drawn, "v03_smem_tiling", f"_tile{config['TILE']}")
        K = d.facts["example"][2]
        assert len(patches(d.figure, "k-step")) == 2 * math.ceil(K / config["TILE"])


# ---- block order --------------------------------------------------------------------------------------


def tutorial_order(pid: int, grid_m: int, grid_n: int, group_m: int) -> tuple[int, int]:
    """Triton's matmul tutorial's grouped ordering."""
    in_group = group_m * grid_n
    first = pid // in_group * group_m
    size = min(grid_m - first, group_m)
    return first + (pid % in_group) % size, (pid % in_group) // size


def test_v11_numbers_each_tile_by_the_grouped_launch_order(drawn):
    d = one(drawn, "v11_autotuned", "_order")
    m = module("v11_autotuned")
    grid_m, grid_n = d.facts["grid"]
    for ax, group_m in zip(d.figure.axes, (m.CUDA_SEARCH.reference[1].GROUP_M, m.CUDA_CANDIDATES[0].GROUP_M)):
        at = {(int(t.get_position()[1]), int(t.get_position()[0])): int(t.get_text()) for t in texts(ax)}
        assert len(at) == grid_m * grid_n
        for pid in range(grid_m * grid_n):
            assert at[tutorial_order(pid, grid_m, grid_n, group_m)] == pid
        wave = [tutorial_order(p, grid_m, grid_n, group_m) for p in range(d.facts["wave"])]
        assert d.facts[group_m]["panels"] == (len({r for r, _ in wave}), len({c for _, c in wave}))
    assert sum(d.facts[8]["panels"]) < sum(d.facts[1]["panels"]), "grouped blocks share more panels"


def test_the_persistent_walk_gives_program_p_tiles_p_p_plus_P(drawn):
    d = one(drawn, "v14_wgmma_tma", "_walk")
    programs, tiles = d.facts["programs"], d.facts["tiles"]
    labels = sorted((int(t.get_position()[1]), int(t.get_position()[0]), t.get_text()) for t in texts(d.figure.axes[0]))
    assert len(labels) == tiles
    grid_n = len({c for _, c, _ in labels})
    for r, c, text in labels:
        tile = r * grid_n + c  # v14's CUDA walk is row-major
        assert text == f"p{tile % programs}\nround {tile // programs}"


# ---- the lesson page ----------------------------------------------------------------------------------


def test_the_lesson_page_embeds_every_rungs_pictures(tmp_path):
    picked = [VARIANTS["v01_naive"], VARIANTS["v08_bank_conflicts"]]
    html_path, md_path = build_lessons(tmp_path, variants=picked)
    page, md = html_path.read_text(), md_path.read_text()
    for v in picked:
        section = page[page.index(f'<section class="rung" id="{v.tag}">'):]
        section = section[:section.index("</section>")]
        names = [d.name for d in diagrams.diagrams_of(v)]
        assert section.count('<figure class="diagram"><img src="data:image/png;base64,') == len(names)
        for name in names:
            assert (tmp_path / "diagrams" / f"{name}.png").is_file()
            assert f"](diagrams/{name}.png)" in md
    assert np.all([p.stat().st_size > 10_000 for p in (tmp_path / "diagrams").glob("*.png")])


def test_the_epilogue_traffic_counts_two_passes_over_c(drawn):
    """v17: the unfused sequence moves A, B, the bias and four more passes of C than the one write the fused
    kernel needs: two reads and two writes of C more."""
    d = one(drawn, "v17_fused_epilogue", "_traffic")
    c = 8192 * 8192 * 2
    assert d.facts["saved"] == 4 * c and d.facts["fused"] == (8192 * 4096 * 2) * 2 + 8192 * 2 + c



def test_v18_counts_the_tiles_of_its_groups(drawn):
    """The tile rows of the routing's groups, laid end to end, and those that cross a group's end, recomputed."""
    from implementations.core.check import ROUTINGS

    (d,) = drawn[0]["v18_grouped"]
    bm, groups = d.facts["BM"], ROUTINGS["mixtral"].groups
    assert d.facts["tiles"] == sum(-(-rows // bm) for rows in groups)
    assert d.facts["straddling"] == sum(rows % bm != 0 for rows in groups) == len(patches(d.figure, "straddling"))
    assert d.facts["padded"] == len(groups) * -(-max(groups) // bm) > d.facts["tiles"]


def test_v19_rows_carry_twice_the_k_in_the_same_bytes(drawn):
    d = one(drawn, "v19_fp8", "_rows")
    assert d.facts == {"row_bytes": 128, "step_bytes": 32, "k_bf16": 64, "k_e4m3": 128}
    assert len(patches(d.figure, "k-step-mark")) == 2  # the first k-step of each row
