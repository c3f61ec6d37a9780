"""v11's Gluon kernel, which no interpreter runs, compiles for sm_80 and sm_90 without spills (no GPU needed);
its CUDA C kernels read every layout in place and compute a batch in one launch (GPU).

Triton compiles the Gluon kernel ahead of time for a target GPU; the ptxas it ships reports on the PTX.
Both forms: EVEN (the tiles divide the shape: masks only along K) and the general one. The GPU tests run
it. The compiles run in a fresh process: once Triton's interpreter has run a kernel, it leaves
`tl.tensor`'s operators patched for the rest of the process, and a later compile fails inside them.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from implementations import v11_autotuned as v11
from implementations.core.check import LAYOUTS, PRECISIONS, check, make_inputs, poison
from implementations.core.cuda_c import CudaSource, compile_report

from ..helpers import param_id, skip_unless_runnable
from ..ladder.test_searches import check_every_candidate

# its module fixture is built once: every test of this file runs in one xdist worker
pytestmark = pytest.mark.xdist_group("test_v11")

CASES = [(tile, arch, even) for tile in v11.GLUON_CANDIDATES for arch in ("sm_80", "sm_90") for even in (True, False)]
SCRIPT = """
import json, sys
from implementations import v11_autotuned as v11
cases = json.loads(sys.argv[1])
out = [v11.gluon_report(v11.Tile(*tile), arch, even) for tile, arch, even in cases]
try:  # an odd number of stages, which the kernel's even and odd allocations cannot hold
    v11.compile_gluon(v11.Tile(64, 64, 8, 32, 32, 3, 8), (9, 0))
    odd = ""
except Exception as exc:
    odd = str(exc)
print(json.dumps({"reports": [r.__dict__ for r in out], "odd_stages": odd}))
"""


@pytest.fixture(scope="module")
def compiled():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(CASES)], capture_output=True, text=True,
                          env=env, cwd=root, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def reports(compiled):
    return {case: v11.PtxasReport(**row) for case, row in zip(CASES, compiled["reports"], strict=True)}


@pytest.mark.parametrize("tile, arch, even", CASES, ids=lambda x: str(x))
def test_gluon_candidate_compiles_without_spills(reports, tile, arch, even):
    report = reports[(tile, arch, even)]
    assert report.spills == 0, f"{report.kernel} spills {report.spill_stores}/{report.spill_loads} bytes on {arch}"
    assert 0 < report.registers <= 255


@pytest.mark.parametrize("tile", v11.GLUON_CANDIDATES, ids=str)
def test_gluon_tile_holds_its_stages_in_shared_memory(reports, tile):
    """STAGES copies of the A^T and B tiles, in the two allocations for even and odd tiles."""
    assert reports[(tile, "sm_90", True)].smem_bytes >= tile.STAGES * tile.BK * (tile.BM + tile.BN) * 4


def test_gluon_kernel_refuses_an_odd_number_of_stages(compiled):
    """Half the stages hold even tiles and half odd ones: with three, one stage would hold two tiles in flight, and
    the product would be wrong, so it does not compile."""
    assert "STAGES is even" in compiled["odd_stages"]


def offsets_of(offset_bases, shape):
    """{(k, m): offset} of a shared linear layout: each offset bit contributes its basis (XOR)."""
    table = {}
    for offset in range(shape[0] * shape[1]):
        k = m = 0
        for bit, (bk, bm) in enumerate(offset_bases):
            if offset >> bit & 1:
                k, m = k ^ bk, m ^ bm
        table[(k, m)] = offset
    assert len(table) == shape[0] * shape[1], "the layout must be a bijection"
    return table


def ways(offsets):
    """The bank conflict of one warp instruction over these float offsets: the most distinct 4-byte words
    it touches in one bank (1: conflict-free)."""
    banks = {}
    for o in offsets:
        banks.setdefault(o % 32, set()).add(o // 32)
    return max(len(words) for words in banks.values())


def a_tile_ways(offset_bases, block_m, k_lanes, block_k=8):
    """The worst instruction of A's copies and of its reads, as the kernel's layouts lay them out. A copy
    (a_copy, BlockedLayout [k_lanes, 32/k_lanes] lanes, k fastest): lane L writes (k, m) = (L % k_lanes,
    L // k_lanes), shifted by whole lane groups. A read (a_frag: lanes 8r..8r+7 share a float4): the 4
    float4s of row k at m = 4r..4r+3, r = 0..3, shifted by a multiple of 16."""
    table = offsets_of(offset_bases, (block_k, block_m))
    groups = 32 // k_lanes
    copies = max(ways([table[(L % k_lanes + k0, L // k_lanes + m0)] for L in range(32)])
                 for k0 in range(0, block_k, k_lanes) for m0 in range(0, block_m, groups))
    reads = max(ways([table[(k, m0 + m)] for m in range(16)]) for k in range(block_k) for m0 in range(0, block_m, 16))
    return copies, reads


@pytest.mark.parametrize("k_lanes", [2, 4, 8])
@pytest.mark.parametrize("block_m", sorted({tile.BM for tile in v11.GLUON_CANDIDATES}))
def test_a_tile_layout_has_no_bank_conflicts(block_m, k_lanes):
    """A's transposed tile: its copies and its reads are conflict-free, where row-major copies conflict
    k_lanes ways, and where, without the XOR of m = 4, 8 into k's offsets, reads conflict 2 or 4 ways."""
    bases = v11.a_tile_layout(8, block_m, k_lanes).offset_bases
    assert a_tile_ways(bases, block_m, k_lanes) == (1, 1)
    row_major = [[0, 1 << i] for i in range(block_m.bit_length() - 1)] + [[1, 0], [2, 0], [4, 0]]
    assert a_tile_ways(row_major, block_m, k_lanes) == (k_lanes, 1)
    if k_lanes < 4:
        return  # m = 4, 8 are in the bank bits already: nothing XORed
    no_xor = [[0, m] if k and m else [k, m] for k, m in bases]
    assert a_tile_ways(no_xor, block_m, k_lanes) == (1, {4: 2, 8: 4}[k_lanes])


# ---- CUDA C: every layout in place, batches in one launch ----

FP32 = PRECISIONS["fp32"]
# Ragged (no row 16-byte aligned: the unaligned instantiations), M = 1, K = 1, one element; rows of 132 and
# 264 floats (every layout's ALIGNED instantiation, over two tile rows and columns); N aligned with M and K
# odd (nt's ALIGNED instantiation: only C's rows are copied in chunks; tt's unaligned one: Aᵀ's rows of 33).
LAYOUT_SHAPES = [(33, 17, 47), (1, 17, 47), (33, 17, 1), (1, 1, 1), (132, 264, 70), (33, 132, 47)]


@pytest.mark.parametrize("layout, aligned", [("nn", True), ("nt", True), ("tn", False), ("tt", False)])
def test_alignment_asks_only_for_the_rows_copied_in_chunks(layout, aligned):
    """M = 33, N = 20, K = 47: C's rows and B's (as given) are 16-byte aligned, the stored rows of Aᵀ (33) and of
    A and Bᵀ (47) are not; only Aᵀ's count, as A's and Bᵀ's are copied 4 bytes at a time."""
    a, b = make_inputs(33, 20, 47, FP32, "cpu", 1, layout=layout)
    c = torch.empty(33, 20)
    assert v11.chunked_rows_aligned(a, b, c, layout) == aligned
    assert not v11.chunked_rows_aligned(a, b, c[:, :17], layout), "C's rows of 17 floats"


def test_alignment_asks_for_a_batch_pitch_of_16_bytes():
    """Every matrix of a batch must start 16-byte aligned: rows of 20 floats, matrices 941 floats apart."""
    a, _ = make_inputs(33, 20, 47, FP32, "cpu", 1, batch=3)
    b = torch.randn(3 * 941).as_strided((3, 47, 20), (941, 20, 1))
    c = torch.empty(3, 33, 20)
    assert not v11.chunked_rows_aligned(a, b, c, "nn")
    assert v11.chunked_rows_aligned(a, b.contiguous(), c, "nn")


def test_launcher_asks_for_the_layouts_kernel_and_continues_a_long_batch_along_z(monkeypatch):
    """tt, A a batch of 70000, B shared: the tt kernel (unaligned: Aᵀ's rows of 3 floats), grid y full and z
    the rest, A's matrix stride and B's 0."""
    launches = []
    monkeypatch.setattr(v11, "bind", lambda source, name, grid, block, args, **_: launches.append((name, grid, args)))
    a, b = make_inputs(3, 5, 2, FP32, "cpu", 1, layout="tt", batch=70000)
    tile = v11.CUDA_CANDIDATES[0]
    v11.launch_candidate(a, b[0], torch.empty(70000, 3, 5), tile)
    [(name, grid, args)] = launches
    assert name == tile.kernel(False, "tt", batched=True) == "autotuned<128,128,8,32,64,3,8,0,false,true,true,true>"
    assert grid == (1, 65535, 2)
    assert args[3:] == (3, 5, 2, 6, 0, 70000)


def test_one_product_takes_the_kernel_without_batch_offsets(monkeypatch):
    """A single product (or a batch of one) launches the BATCHED=false instantiation, whose k-loop reads the
    operands' base addresses as kernel parameters."""
    launches = []
    monkeypatch.setattr(v11, "bind", lambda source, name, grid, block, args, **_: launches.append(name))
    tile = v11.CUDA_CANDIDATES[0]
    for batch in (0, 1, 2):
        a, b = make_inputs(8, 8, 8, FP32, "cpu", 1, batch=batch)
        v11.launch_candidate(a, b, torch.empty(*a.shape[:-1], 8), tile)
    assert [name.endswith(",false>") for name in launches] == [True, True, False]
    assert all(name in v11.KERNELS.kernels for name in launches)
    a, b = make_inputs(8, 8, 8, FP32, "cpu", 1, layout="nt")
    v11.launch_candidate(a, b, torch.empty(8, 8), tile)
    assert launches[-1].endswith(",true>") and launches[-1] in v11.KERNELS.kernels


def test_the_search_offers_a_layout_only_the_tiles_whose_copies_divide_in_it():
    """A transposed A's rows of 80 (or 48) floats do not split over 80-row tiles' 128 threads (48-row tiles' 64):
    those tiles are offered, and instantiated, for every layout but tn (tt reads the stored matrices as given:
    Cᵀ = Bᵀ·Aᵀ). tt stores C by columns, its own way, so the tiles with another C_STORE than float4s are not
    offered there. Every other candidate reads every layout."""
    odd = [tile for tile in v11.CUDA_CANDIDATES if tile.BM in (80, 48)]
    stores = [tile for tile in v11.CUDA_CANDIDATES if tile.C_STORE]
    assert len(odd) == 2 and all(tile.reads(layout) == (layout != "tn") for tile in odd for layout in LAYOUTS)
    assert stores and all(tile.reads(layout) == (layout != "tt") for tile in stores for layout in LAYOUTS)
    assert not any(tile.kernel(aligned, "tt") in v11.KERNELS.kernels for tile in stores for aligned in (True, False))
    for layout in LAYOUTS:
        offered = v11.CUDA_SEARCH.offered(layout)
        assert offered == tuple(t for t in v11.CUDA_CANDIDATES
                                if (layout != "tn" or t not in odd) and (layout != "tt" or t not in stores)), layout
    assert not any(tile.kernel(aligned, "tn") in v11.KERNELS.kernels for tile in odd for aligned in (True, False))
    assert all(tile.kernel(aligned, layout) in v11.KERNELS.kernels
               for tile in odd for aligned in (True, False) for layout in ("nn", "tt"))


def test_tt_launches_one_block_per_tile_of_c_transposed(monkeypatch):
    """tt computes Cᵀ = Bᵀ·Aᵀ in BM×BN tiles of Cᵀ: at M = 300, N = 5 a 128×256 tile makes 1 × 2 blocks where
    C's own tiles would make 3 × 1."""
    launches = []
    monkeypatch.setattr(v11, "bind", lambda source, name, grid, block, args, **_: launches.append(grid))
    tile = next(t for t in v11.CUDA_CANDIDATES if (t.BM, t.BN) == (128, 256))
    for layout in ("nn", "tt"):
        a, b = make_inputs(300, 5, 7, FP32, "cpu", 1, layout=layout)
        v11.launch_candidate(a, b, torch.empty(300, 5), tile)
    assert launches == [(3, 1, 1), (2, 1, 1)]


def test_a_tile_past_48_kb_of_shared_memory_asks_for_it_at_launch(monkeypatch):
    """The 16-deep 128×256 tile of two stages holds 49664 bytes in nn (A's tile padded), past the 48 KB a kernel
    may declare statically: its launch asks for them as dynamic shared memory; v10's tile asks none."""
    launches = []
    monkeypatch.setattr(v11, "bind", lambda *_, shared_mem: launches.append(shared_mem))
    deep = v11.Tile(128, 256, 16, 64, 64, 2, 8)
    assert deep in v11.CUDA_CANDIDATES
    a, b = make_inputs(300, 5, 7, FP32, "cpu", 1)
    for tile in (deep, v11.CUDA_CANDIDATES[0]):
        v11.launch_candidate(a, b, torch.empty(300, 5), tile)
    assert launches == [49664, 0]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("tile", [t for t in v11.CUDA_CANDIDATES if t.BK == 16 and t.BN == 256], ids=str)
def test_the_launcher_sizes_the_shared_memory_ptxas_does_not_see(tile):
    """Each kernel of the tiles at the 48 KB line: ptxas's static shared memory is the whole tile where the
    launcher asks for none (the two-stage tile in tn: exactly 48 KB, as its A is not padded), and none where the
    launcher asks for the tile at launch."""
    layouts = {tile.kernel(aligned, layout, batched): layout for layout in LAYOUTS if tile.reads(layout)
               for aligned in (True, False) for batched in (False, True)}
    reports = compile_report(CudaSource(v11.__name__, [k for k in v11.KERNELS.kernels if k in layouts]), "sm_90")
    assert reports
    for report in reports:
        layout = layouts[report.kernel]
        dynamic = tile.shared_mem(layout)
        assert dynamic in (0, tile.tile_bytes(layout))
        assert report.smem_bytes == (0 if dynamic else tile.tile_bytes(layout)), report.kernel


def test_other_strides_are_refused_in_one_line():
    a = torch.randn(33, 94)[:, ::2]
    b = torch.randn(47, 17)
    with pytest.raises(ValueError, match="row-major matrices and transposed views of them"):
        v11.launch_candidate(a, b, torch.empty(33, 17), v11.CUDA_CANDIDATES[0])


@pytest.mark.gpu
@pytest.mark.parametrize("shape", LAYOUT_SHAPES, ids=param_id)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_cuda_candidate_reads_every_layout_in_place(layout, shape):
    skip_unless_runnable(v11.VARIANT, "cuda", "fp32", torch.device("cuda"))
    check_every_candidate(v11.VARIANT, v11.CUDA_SEARCH, "fp32", shape, "cuda", layout=layout)


@pytest.mark.gpu
@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("shape", [(33, 17, 47), (132, 264, 70)], ids=param_id)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_cuda_candidate_computes_a_batch_in_one_launch(layout, shape, batch):
    skip_unless_runnable(v11.VARIANT, "cuda", "fp32", torch.device("cuda"))
    check_every_candidate(v11.VARIANT, v11.CUDA_SEARCH, "fp32", shape, "cuda", layout=layout, batch=batch)


@pytest.mark.gpu
@pytest.mark.parametrize("shared", ["A", "B"])
@pytest.mark.parametrize("shape", [(33, 17, 47), (132, 264, 70)], ids=param_id)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_cuda_candidate_computes_a_batch_with_a_shared_operand(layout, shape, shared):
    """One operand 2-D (a matrix stride of 0), the other a batch of 5."""
    skip_unless_runnable(v11.VARIANT, "cuda", "fp32", torch.device("cuda"))
    batched = make_inputs(*shape, FP32, "cuda", 31, layout=layout, batch=5)
    single = make_inputs(*shape, FP32, "cuda", 32, layout=layout)
    a, b = (single[0], batched[1]) if shared == "A" else (batched[0], single[1])
    for tile in v11.CUDA_SEARCH.offered(layout):
        c = torch.empty(5, shape[0], shape[1], device="cuda")
        poison(c)
        v11.launch_candidate(a, b, c, tile)()
        outcome = check(c, a, b, FP32)
        assert outcome.ok, (str(tile), outcome.why())


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nn", "tt"])
def test_every_cuda_candidate_computes_a_batch_longer_than_the_grid_axis(layout):
    """70000 tiny products: more than grid axis y's 65535, so the batch continues along z."""
    skip_unless_runnable(v11.VARIANT, "cuda", "fp32", torch.device("cuda"))
    check_every_candidate(v11.VARIANT, v11.CUDA_SEARCH, "fp32", (3, 5, 2), "cuda", layout=layout, batch=70000)


def test_the_triton_kernel_is_told_of_16_byte_rows_only_where_every_one_has_them():
    """ROW_ALIGN tells the kernel that its row strides, K and N are multiples of 16 bytes' elements: a lie
    there would make it copy misaligned 16-byte pieces, so every case that breaks it gets no hint."""
    def operands(M, N, K, layout="nn", pitch=0):
        a, b = make_inputs(M, N, K, PRECISIONS["fp32"], "cpu", 1, layout=layout)
        if pitch:  # A as a view of wider rows
            a = torch.zeros(M, K + pitch)[:, :K]
        return a, b, torch.empty(M, N)

    assert v11.row_align(*operands(1000, 1100, 1028)) == 4  # ragged, but every row starts 16-byte aligned
    assert v11.row_align(*operands(1000, 1100, 1027)) == 1  # K: A's rows are 1027 floats
    assert v11.row_align(*operands(1000, 1099, 1028)) == 1  # N: B's and C's rows
    assert v11.row_align(*operands(1000, 1100, 1028, "tn")) == 1  # a transposed A: its rows run along M
    assert v11.row_align(*operands(1000, 1100, 1028, pitch=1)) == 1  # A's rows 1029 floats apart
    assert v11.row_align(*operands(1000, 1100, 1028, pitch=4)) == 4
