"""Pictures of what each rung does, drawn from the constants and configs its kernels run with.

    python -m implementations.tools.diagrams --out DIR [--rungs 5-11]

Every rung gets at least one figure, looked up by its module's stem in `DIAGRAMS`: how C is divided
into block tiles, warp tiles and each thread's registers; which addresses one warp touches in one
instruction and how many memory transactions or shared-memory wavefronts that is; the K loop over
time; the order in which blocks take their tiles. Nothing drawn is typed in here: tile sizes, warps,
stages and group sizes come from the rung module (its configs, its constants, the keywords its Triton
launcher passes), and where a constant lives only in the .cu (a `constexpr`, an instruction shape) it
is read from the .cu. What the kernels compute per thread (an index expression) is mirrored here from
the .cu line it names, and the tests recompute what each picture claims from those expressions.

Where a picture needs a matrix size or a number of SMs it uses a small example, said in its caption
(the rungs themselves take any size); schedules over time are drawn from the rung's stages with made-up
durations and say so: they show the order of events, not measured times. The one measured picture, v15's
tile walk CTA by CTA, reads the stamps `python -m implementations.tools.timeline --save` kept in
docs/results, and is left out where the checkout has none.

Style: figures print in grey. Fills differ in lightness, and what a picture points at (a thread's
registers, a conflict, a race) is dark grey or hatched, never told apart by hue alone.
"""

from __future__ import annotations

import argparse
import functools
import io
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import triton
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ..core import IMPORT_ROOT
from ..core.registry import Variant, all_variants, config_label, select

DPI = 130
FILLS = ("0.96", "0.80", "0.64", "0.48")  # lightness steps that stay apart in grey
MARK = "0.25"  # what a picture points at
MARK_HATCH = "////"
EDGE = "0.1"
FONT = 8
GREYS = ListedColormap([str(0.93 - 0.5 * i / 7) for i in range(8)])  # eight greys, light to mid
WARP = 32
LINE_BYTES = 128  # a global-memory transaction (one L1 line)
BANKS = 32
FLOAT = 4


@dataclass
class Diagram:
    """One figure of one rung: `name` is its file stem, `facts` the numbers it shows (tests check them)."""

    name: str
    caption: str
    figure: Figure
    facts: dict = field(default_factory=dict)


# ---- reading the rung's own constants ------------------------------------------------------------------


def cu_constant(variant: Variant, name: str) -> int:
    """`constexpr int NAME = value;` from the rung's .cu: for constants the launcher never passes."""
    match = re.search(rf"constexpr int {name} = (\d+);", variant.cuda_source.path.read_text())
    if match is None:
        raise LookupError(f"{variant.cuda_source.path.name} has no `constexpr int {name} = ...;`")
    return int(match.group(1))


def cu_shape(variant: Variant, pattern: str) -> tuple[int, ...]:
    """An instruction or fragment shape written in the rung's .cu, e.g. m16n8k16 -> (16, 8, 16)."""
    match = re.search(pattern, variant.cuda_source.path.read_text())
    if match is None:
        raise LookupError(f"{variant.cuda_source.path.name} does not match {pattern!r}")
    return tuple(int(g) for g in match.groups())


def triton_knobs(variant: Variant, config: Mapping[str, int]) -> dict:
    """The keywords the rung's Triton launcher gives its kernel (block sizes, num_warps, num_stages),
    read from the launch it binds for small CPU operands: nothing runs."""
    a = torch.zeros((64, 64))
    launch = variant.triton(a, a, torch.zeros((64, 64)), **config)
    if not isinstance(launch, functools.partial):
        raise TypeError(f"{variant.stem}'s Triton launcher does not bind a plain launch")
    return dict(launch.keywords)


def example_shape(bm: int, bn: int, bk: int = 0) -> tuple[int, int, int]:
    """A small M×N×K product, ragged at every edge, so that ceil() shows in the tile counts."""
    return 3 * bm + bm // 2, 4 * bn + bn // 2, 3 * bk + bk // 2


# ---- drawing helpers -----------------------------------------------------------------------------------


def _figure(panels: int, width: float = 4.2, height: float = 4.2, rows: int = 1) -> tuple[Figure, list]:
    fig = Figure(figsize=(width * panels, height * rows), layout="constrained")
    axes = fig.subplots(rows, panels, squeeze=False)
    return fig, [ax for row in axes for ax in row]


def _matrix_axes(ax, height: float, width: float, title: str) -> None:
    ax.set_xlim(-0.02 * width, width * 1.02)
    ax.set_ylim(height * 1.02, -0.02 * height)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_title(title, fontsize=FONT + 1)


def _box(ax, x, y, w, h, *, fill="none", hatch=None, lw=0.8, edge=EDGE, gid=None, **kw) -> Rectangle:
    patch = Rectangle((x, y), w, h, facecolor=fill, hatch=hatch, linewidth=lw, edgecolor=edge, gid=gid, **kw)
    ax.add_patch(patch)
    return patch


def draw_block_grid(ax, M: int, N: int, bm: int, bn: int, *, label: Callable[[int, int], str],
                    mark: tuple[int, int] | None = (0, 0), title: str = "") -> tuple[int, int]:
    """C (M×N) cut into bm×bn block tiles, each labelled; the part of a tile past C's edge is hatched
    (its loads are masked); `mark`: the tile the next panel zooms into. Returns the tile grid's shape."""
    rows, cols = triton.cdiv(M, bm), triton.cdiv(N, bn)
    height, width = rows * bm, cols * bn
    _matrix_axes(ax, height, width, title or f"C {M}×{N}: {rows}×{cols} tiles of {bm}×{bn}")
    for r in range(rows):
        for c in range(cols):
            fill = MARK if (r, c) == mark else FILLS[(r + c) % 2]
            _box(ax, c * bn, r * bm, bn, bm, fill=fill, gid="block-tile")
            # the label sits in the part of the tile inside C
            ax.text((c * bn + min(c * bn + bn, N)) / 2, (r * bm + min(r * bm + bm, M)) / 2, label(r, c),
                    ha="center", va="center", fontsize=FONT - 1, color="white" if (r, c) == mark else "black")
    if width > N:
        _box(ax, N, 0, width - N, height, hatch="xx", lw=0, edge="0.55")
    if height > M:
        _box(ax, 0, M, N, height - M, hatch="xx", lw=0, edge="0.55")
    _box(ax, 0, 0, N, M, lw=2)  # C's edge
    return rows, cols


def draw_owners(ax, owner: np.ndarray, *, unit: str, mark: int = 0, title: str, names=None) -> None:
    """A tile whose every element is labelled with the warp (or lane) that computes it: greys by owner,
    the owner `mark` hatched dark, a name at each owner's centre when its part is one rectangle."""
    ids = np.unique(owner[owner >= 0])
    _matrix_axes(ax, owner.shape[0], owner.shape[1], title)
    shade = np.ma.masked_less(owner % GREYS.N, 0)
    ax.imshow(shade, cmap=GREYS, vmin=0, vmax=GREYS.N - 1, extent=(0, owner.shape[1], owner.shape[0], 0),
              interpolation="nearest")
    for r, c in zip(*np.nonzero(owner == mark)):
        _box(ax, c, r, 1, 1, fill=MARK, hatch=MARK_HATCH, lw=0, edge="white", gid=f"{unit}-mark")
    smallest = max(owner.shape) / 40  # sides below this get an outline but no name
    for i in ids:
        rs, cs = np.nonzero(owner == i)
        rows, cols = _runs(rs), _runs(cs)
        if sum(n for _, n in rows) * sum(n for _, n in cols) != len(rs):
            continue  # not whole rectangles: nothing to outline
        whole = len(rows) == len(cols) == 1
        for (r, h), (c, w) in ((r, c) for r in rows for c in cols):
            _box(ax, c, r, w, h, lw=1.2 if whole else 0.5, gid=f"{unit}-tile" if whole else None)
            if min(h, w) >= smallest and len(ids) <= 64:
                short = unit == "lane" or not whole  # many small parts: the number alone
                name = str(i) if short else names(i) if names else f"{unit} {i}"
                ax.text(c + w / 2, r + h / 2, name, ha="center", va="center", fontsize=FONT - (3 if short else 1),
                        color="white" if i == mark else "black", rotation=90 if w < h / 2 else 0)
    _box(ax, 0, 0, owner.shape[1], owner.shape[0], lw=1.6)


def _runs(values: np.ndarray) -> list[tuple[int, int]]:
    """Consecutive runs (start, length) of the distinct values."""
    runs: list[list[int]] = []
    for v in np.unique(values):
        if runs and runs[-1][0] + runs[-1][1] == v:
            runs[-1][1] += 1
        else:
            runs.append([int(v), 1])
    return [(a, n) for a, n in runs]


def owner_map(shape: tuple[int, int], cells: Callable[[int], tuple[np.ndarray, np.ndarray]], threads: int) -> np.ndarray:
    """The thread id that computes each element of a block tile; `cells(tid)`: its rows and columns."""
    owner = np.full(shape, -1)
    for tid in range(threads):
        rows, cols = cells(tid)
        if (owner[rows, cols] >= 0).any():
            raise ValueError(f"thread {tid} computes an element another thread computes")
        owner[rows, cols] = tid
    if (owner < 0).any():
        raise ValueError("some element of the block tile has no thread")
    return owner


def _grid_cells(rows: Iterable[int], cols: Iterable[int]) -> tuple[np.ndarray, np.ndarray]:
    r, c = np.meshgrid(np.asarray(list(rows)), np.asarray(list(cols)), indexing="ij")
    return r.ravel(), c.ravel()


def hierarchy(variant: Variant, title: str, bm: int, bn: int, threads: int, cells, caption: str,
              *, triton_note: str = "", zoom_lanes: bool = True, zoom: tuple[int, int] | None = None) -> Diagram:
    """Three levels: C in block tiles, one block tile by warp, and the first warp's elements by lane
    (all of them, or the top-left `zoom` rows×columns where they repeat)."""
    owner = owner_map((bm, bn), cells, threads)
    warp = owner // WARP
    M, N, _ = example_shape(bm, bn)
    panels = 3 if zoom_lanes else 2
    fig, axes = _figure(panels)
    rows, cols = draw_block_grid(axes[0], M, N, bm, bn, label=lambda r, c: f"({r},{c})")
    draw_owners(axes[1], warp, unit="warp", title=f"one {bm}×{bn} block tile: {threads // WARP} warps")
    facts = {"grid": (rows, cols), "example": (M, N), "block": (bm, bn), "threads": threads,
             "warps": threads // WARP, "thread_elements": int((owner == 0).sum())}
    if zoom_lanes:
        rs, cs = np.nonzero(warp == 0)
        box = owner[rs.min():rs.max() + 1, cs.min():cs.max() + 1]
        lanes = np.where(box // WARP == 0, box % WARP, -1)
        where = f"warp 0's {box.shape[0]}×{box.shape[1]}"
        if zoom:
            lanes = lanes[:zoom[0], :zoom[1]]
            where = f"the first {zoom[0]}×{zoom[1]} of warp 0's {box.shape[0]}×{box.shape[1]}"
        draw_owners(axes[2], lanes, unit="lane", title=f"{where}: lane 0's outputs dark")
        facts["warp_box"] = box.shape
    fig.suptitle(f"{variant.tag} {title}", fontsize=FONT + 3)
    text = (f"{variant.tag}: {caption} The block tile here is {bm}×{bn} with {threads} threads "
            f"({threads // WARP} warps), each computing {facts['thread_elements']} outputs; an example C of "
            f"{M}×{N} takes ceil({M}/{bm})×ceil({N}/{bn}) = {rows}×{cols} blocks (hatched: past C's edge, masked)."
            + (f" Triton: {triton_note}" if triton_note else ""))
    return Diagram(f"{variant.tag}_tiles", text, fig, facts)


# ---- one warp, one instruction: global memory ----------------------------------------------------------


def segments(addresses: Iterable[tuple[int, int]]) -> set[int]:
    """The 128-byte lines that byte ranges (first byte, bytes) touch: the transactions of one access."""
    return {line for start, size in addresses for line in range(start // LINE_BYTES, (start + size - 1) // LINE_BYTES + 1)}


def draw_lines(ax, lanes: Mapping[int, tuple[int, int]], title: str) -> int:
    """The 128-byte lines a warp's lanes touch (lane -> (first byte, bytes)), each drawn as 32 words
    with the lanes that read them; returns the number of lines (transactions)."""
    touched = sorted(segments(lanes.values()))
    words: dict[tuple[int, int], list[int]] = {}
    for lane, (start, size) in lanes.items():
        for byte in range(start, start + size, FLOAT):
            words.setdefault((touched.index(byte // LINE_BYTES), byte % LINE_BYTES // FLOAT), []).append(lane)
    per_line = LINE_BYTES // FLOAT
    _matrix_axes(ax, len(touched), per_line, title)
    ax.set_ylim(len(touched) + 0.1, -0.1)
    for row, line in enumerate(touched):
        _box(ax, 0, row, per_line, 1, fill=FILLS[1], gid="line")
        ax.text(-0.4, row + 0.5, f"line {line}", ha="right", va="center", fontsize=FONT - 2)
    for (row, word), who in words.items():
        _box(ax, word, row, 1, 1, fill=MARK, lw=0.3, edge="white")
        if len(who) == 1:
            ax.text(word + 0.5, row + 0.5, str(who[0]), ha="center", va="center", fontsize=FONT - 3, color="white")
        else:  # one word for many lanes: a broadcast, named beside it
            ax.text(word + 1.3, row + 0.5, f"lanes {who[0]}-{who[-1]}: one word (broadcast)", va="center",
                    fontsize=FONT - 1, bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5})
    ax.set_anchor("N")
    return len(touched)


def warp_threads(block_x: int) -> list[tuple[int, int]]:
    """(threadIdx.x, threadIdx.y) of the 32 threads of a block's first warp: x runs fastest."""
    return [(t % block_x, t // block_x) for t in range(WARP)]


def naive_addresses(variant: Variant, K: int, N: int, k: int = 0) -> dict[str, dict[int, tuple[int, int]]]:
    """Byte ranges the first warp of block (0, 0) reads from A and B at step k (v01 and v02's kernels)."""
    module = sys.modules[variant.module]
    out = {"A": {}, "B": {}}
    for lane, (tx, ty) in enumerate(warp_threads(module.THREADS)):
        # v01: row = blockIdx.x·blockDim.x + threadIdx.x; v02 swaps x and y (kernels_cuda/v0N_*.cu, step 1)
        row, col = (tx, ty) if variant.stem == "v01_naive" else (ty, tx)
        out["A"][lane] = ((row * K + k) * FLOAT, FLOAT)  # a[row * K + k]
        out["B"][lane] = ((k * N + col) * FLOAT, FLOAT)  # b[k * N + col]
    return out


def naive_access(variant: Variant) -> list[Diagram]:
    module = sys.modules[variant.module]
    _, N, K = example_shape(module.THREADS, module.THREADS, module.THREADS)
    loads = naive_addresses(variant, K, N)
    tallest = max(len(segments(lanes.values())) for lanes in loads.values())
    fig, axes = _figure(2, width=5.2, height=1.0 + 0.17 * max(tallest, 2))
    counts = {}
    for ax, (operand, lanes) in zip(axes, loads.items()):
        dims = f"{K} floats a row" if operand == "A" else f"{N} floats a row"
        counts[operand] = len(segments(lanes.values()))
        draw_lines(ax, lanes, f"{operand} ({dims}): {counts[operand]} transaction(s)")
    lane_axis = "rows" if variant.stem == "v01_naive" else "columns"
    fig.suptitle(f"{variant.tag}: one warp, one k: lanes walk the {lane_axis} of C", fontsize=FONT + 3)
    block = module.BLOCK_M if variant.stem == "v01_naive" else module.BLOCK_N
    caption = (f"{variant.tag}: the 32 lanes of block (0, 0)'s first warp at k = 0 (block {module.THREADS}×"
               f"{module.THREADS}, threadIdx.x fastest), K = {K}, N = {N}. Each row is one 128-byte line of memory, "
               f"its 32 words marked with the lanes that read them: A takes {counts['A']} transaction(s), "
               f"B {counts['B']}. Triton: a program of {block} lanes ({block // WARP} warps) along the "
               f"{lane_axis} of C; its first 32 lanes issue the same addresses.")
    facts = {"transactions": counts, "K": K, "N": N}
    return [Diagram(f"{variant.tag}_warp_loads", caption, fig, facts)]


def float4_loads(variant: Variant) -> list[Diagram]:
    """v07: the first warp's first copy instruction of B's tile, one float a lane (v06) against a float4."""
    config = variant.configs[0]
    BN = config["BN"]
    _, N, _ = example_shape(config["BM"], BN)
    loads = {}
    for lane in range(WARP):  # i = tid, row k0 = 0 of block column 0 (kernels_cuda/v06 and v07, step 3)
        k, col = lane // BN, lane % BN  # v06: b_tile[k][col] = b[(k0 + k)·N + block_col + col]
        loads.setdefault("v06: one float a lane", {})[lane] = ((k * N + col) * FLOAT, FLOAT)
        k, col = lane // (BN // 4), (lane % (BN // 4)) * 4  # v07: load4(b, k0 + k, block_col + col, ...)
        loads.setdefault("v07: a float4 a lane", {})[lane] = ((k * N + col) * FLOAT, 4 * FLOAT)
    fig, axes = _figure(2, width=5.6, height=1.7)
    facts = {}
    for ax, (what, lanes) in zip(axes, loads.items()):
        per = lanes[0][1] // FLOAT
        count = len(segments(lanes.values()))
        instructions = triton.cdiv(BN, WARP * per)
        draw_lines(ax, lanes, f"{what}: {count} line(s) per instruction,\n{instructions} instruction(s) per "
                              f"{BN}-float row of the tile")
        facts[what.split(":")[0]] = {"lines": count, "instructions": instructions}
    fig.suptitle(f"{variant.tag}: one warp copying B's tile from global memory", fontsize=FONT + 3)
    caption = (f"{variant.tag}: the 128-byte lines block 0's first warp reads in its first copy instruction of B's "
               f"{BN}-wide tile, each word marked with its lane: v06 reads a float a lane and needs "
               f"{facts['v06']['instructions']} instructions per row of the tile, v07 a float4 a lane "
               f"({facts['v07']['instructions']}). Both are coalesced; v07 issues "
               f"{facts['v06']['instructions'] // facts['v07']['instructions']} times fewer load instructions. "
               f"Triton: v03's kernel; the compiler vectorises the loads it can prove contiguous and aligned.")
    return [Diagram(f"{variant.tag}_float4", caption, fig, facts)]


# ---- one warp, one instruction: shared-memory banks ----------------------------------------------------


def bank_wavefronts(words: Mapping[int, tuple[int, int]]) -> tuple[int, list[dict[int, set]]]:
    """Shared-memory wavefronts of one warp access: lane -> (first word, words per lane). Accesses of
    16 bytes are served 8 lanes at a time, of 8 bytes 16 at a time, else all 32; in each phase a bank
    that holds k distinct words costs k wavefronts. Returns the count and, per phase, bank -> words."""
    width = next(iter(words.values()))[1]
    per_phase = WARP // width if width > 1 else WARP
    total, phases = 0, []
    for first in range(0, WARP, per_phase):
        banks: dict[int, set] = {}
        for lane in range(first, first + per_phase):
            start, count = words[lane]
            for word in range(start, start + count):
                banks.setdefault(word % BANKS, set()).add((word, lane))
        phases.append(banks)
        total += max(len({w for w, _ in hits}) for hits in banks.values())
    return total, phases


def draw_banks(ax, phases: list[dict[int, set]], title: str) -> None:
    """Banks (columns) by phase (rows): the lanes in each bank; dark: more than one word in a bank."""
    _matrix_axes(ax, len(phases), BANKS, title)
    ax.set_ylim(len(phases) + 0.1, -0.9)
    ax.set_xlim(-3.2, BANKS + 0.2)
    for b in range(BANKS):
        ax.text(b + 0.5, -0.3, str(b), ha="center", va="center", fontsize=FONT - 2)
    ax.text(-0.2, -0.3, "bank", ha="right", va="center", fontsize=FONT - 2)
    per_phase = WARP // len(phases)
    for row in range(len(phases)):
        ax.text(-0.2, row + 0.5, f"lanes {row * per_phase}-{row * per_phase + per_phase - 1}", ha="right",
                va="center", fontsize=FONT - 2)
    for row, banks in enumerate(phases):
        for bank, hits in banks.items():
            conflict = len({w for w, _ in hits}) > 1
            _box(ax, bank, row, 1, 1, fill=MARK if conflict else FILLS[1], hatch=MARK_HATCH if conflict else None,
                 lw=0.4, gid="conflict" if conflict else "bank")
            lanes = sorted({lane for _, lane in hits})
            label = "\n".join(map(str, lanes)) if len(lanes) <= 2 else f"{lanes[0]}..\n{lanes[-1]}"
            ax.text(bank + 0.5, row + 0.5, label, ha="center", va="center", fontsize=FONT - 2.5,
                    color="white" if conflict else "black")


def v08_accesses(variant: Variant, kernel: str) -> dict[str, dict[int, tuple[int, int]]]:
    """Words the first warp touches in its first A store and first B read (kernels_cuda/v07 and v08, step 3
    and 4), as index expressions over the rung's config and the .cu's padding."""
    config = variant.configs[0]
    module = sys.modules[variant.module]
    BM, BN, TN, BK = config["BM"], config["BN"], config["TN"], module.BK
    row = BM + (cu_constant(variant, "PAD") if kernel == "v08" else 0)  # a_tile[BK][BM (+ PAD)]
    store, read = {}, {}
    for lane in range(WARP):
        r, k = lane // (BK // 4), (lane % (BK // 4)) * 4  # i = tid: its A float4
        store[lane] = (k * row + r, 1)  # a_tile[k + 0][r] = v.x
        thread_col = lane % (BN // TN)
        col = thread_col * TN if kernel == "v07" else thread_col * 4  # b_tile[k][...]: the first float4 (j = 0)
        read[lane] = (col, 4)
    return {"A^T store (a_tile[k][r] = v.x)": store, "B float4 read (b_tile[k][...], j = 0)": read}


def bank_conflicts(variant: Variant) -> list[Diagram]:
    fig = Figure(figsize=(16, 3.7), layout="constrained")
    axes = list(fig.subplots(2, 2, height_ratios=[2.9, 5.9]).ravel())  # a row per phase, and the titles
    facts = {}
    for i, kernel in enumerate(("v07", "v08")):
        for j, (what, words) in enumerate(v08_accesses(variant, kernel).items()):
            wavefronts, phases = bank_wavefronts(words)
            ideal = len(phases)
            facts[(kernel, what)] = wavefronts
            draw_banks(axes[2 * j + i], phases, f"{kernel}: {what}\n{wavefronts} wavefront(s), conflict-free: {ideal}")
    fig.suptitle(f"{variant.tag}: the 32 banks one warp hits, v07 (left) and v08 (right)", fontsize=FONT + 3)
    config = variant.configs[0]
    caption = (f"{variant.tag}: shared-memory banks (columns) hit by block 0's first warp in one instruction, the "
               f"lanes in each bank; dark hatched: a bank asked for two or more different words, which are served "
               f"one after another. A 16-byte read is served 8 lanes at a time (one row per phase). Computed from the "
               f"kernels' index expressions with {config_label(config)}, BK = {sys.modules[variant.module].BK} and v08's "
               f"row padding of {cu_constant(variant, 'PAD')} floats (read from the .cu). Triton lays out its own "
               f"shared memory: v03's kernel, unchanged.")
    return [Diagram(f"{variant.tag}_banks", caption, fig, facts)]


# ---- the K loop over time ------------------------------------------------------------------------------

LOAD, MATH, EPILOGUE = 3.0, 2.0, 1.5  # made-up durations: a tile's copy outlasts its multiply


def pipeline(k_tiles: int, stages: int) -> list[tuple[str, float, float, str]]:
    """(row, start, duration, label) of a K loop over `stages` shared-memory buffers. One buffer: copy,
    barrier, multiply, barrier. More: the prologue starts the copies of the first stages - 1 tiles, and
    as the multiply of tile t starts, the copy of tile t + stages - 1 starts into the buffer tile t - 1
    freed, so stages - 1 copies are in flight during each multiply."""
    bars, begins, math_end = [], [], 0.0
    for t in range(k_tiles):
        if stages == 1:
            start = math_end
        elif t < stages - 1:
            start = 0.25 * t
        else:
            start = begins[t - stages + 1]
        bars.append((f"buffer {t % stages}", start, LOAD, f"copy tile {t}"))
        begins.append(max(math_end, start + LOAD))
        bars.append(("multiply", begins[t], MATH, f"tile {t}"))
        math_end = begins[t] + MATH
    return bars


def draw_schedule(ax, bars: list[tuple[str, float, float, str]], rows: list[str], title: str,
                  kind: Callable[[tuple], str] = lambda bar: bar[0], marks: Mapping[int, str] = {}) -> float:
    """Bars over time, one row per unit of work, shaded by `kind` (by default the row); `marks`: bar index
    -> what to call the bars a picture points at (drawn dark, the name as their gid). Returns the end of
    the last bar."""
    kinds = list(dict.fromkeys(kind(b) for b in bars))
    for i, bar in enumerate(bars):
        bar_row, start, dur, label = bar
        y = rows.index(bar_row)
        marked = marks.get(i)
        fill = MARK if marked else FILLS[1 + kinds.index(kind(bar)) % 3]
        _box(ax, start, y + 0.12, dur, 0.76, fill=fill, hatch=MARK_HATCH if marked else None, lw=0.6,
             gid=marked or f"bar-{bar_row}")
        ax.text(start + dur / 2, y + 0.5, f"{label}: {marked}" if marked else label, ha="center", va="center",
                fontsize=FONT - 2, clip_on=True, color="white" if marked else "black")
    end = max(s + d for _, s, d, _ in bars)
    ax.set_xlim(0, end * 1.01)
    ax.set_ylim(len(rows), 0)
    ax.set_yticks([i + 0.5 for i in range(len(rows))], rows, fontsize=FONT)
    ax.set_xticks([])
    ax.set_xlabel("time (schedule, not measured) →", fontsize=FONT)
    ax.set_title(title, fontsize=FONT + 1)
    return end


def double_buffering(variant: Variant) -> list[Diagram]:
    config = variant.configs[0]
    cuda_stages = cu_constant(variant, "STAGES")
    triton_stages = triton_knobs(variant, config)["num_stages"]
    k_tiles = 6
    cases = [("v08: one buffer", 1), (f"{variant.tag} CUDA C: STAGES = {cuda_stages} (cp.async)", cuda_stages),
             (f"{variant.tag} Triton: num_stages = {triton_stages}", triton_stages)]
    fig = Figure(figsize=(10, 0.5 * sum(s + 1 for _, s in cases) + 1.5 * len(cases)), layout="constrained")
    axes = fig.subplots(len(cases), 1, height_ratios=[s + 1 for _, s in cases])
    facts = {}
    for ax, (title, stages) in zip(axes, cases):
        bars = pipeline(k_tiles, stages)
        facts[stages] = {"end": draw_schedule(ax, bars, [f"buffer {b}" for b in range(stages)] + ["multiply"], title,
                                              kind=lambda bar: bar[3].split()[0])}
    for ax in axes:
        ax.set_xlim(0, max(f["end"] for f in facts.values()) * 1.01)
    fig.suptitle(f"{variant.tag}: the K loop over time, {k_tiles} tiles", fontsize=FONT + 3)
    caption = (f"{variant.tag}: the K loop of one block as a schedule (durations made up, a copy taking longer "
               f"than a multiply; not a measurement). With one buffer (v08) every copy waits for the multiply "
               f"before it and the multiply for its copy. CUDA C's STAGES = {cuda_stages} (the .cu's constexpr) "
               f"buffers let the copy of tile t + 1 run during the multiply of tile t; Triton's pipeliner, with "
               f"num_stages = {triton_stages} from the launcher, keeps {triton_stages - 1} copies in flight.")
    return [Diagram(f"{variant.tag}_k_loop", caption, fig, {"stages": {"cuda": cuda_stages, "triton": triton_stages},
                                                             **facts})]


# ---- v03/v04: tiles staged per K step, and the race --------------------------------------------------


def staging(variant: Variant) -> list[Diagram]:
    diagrams = []
    for config in variant.configs:
        tile = config["TILE"]
        M, N, K = example_shape(tile, tile, tile)
        k_tiles = triton.cdiv(K, tile)
        fig = Figure(figsize=(11, 5.4), layout="constrained")
        panels = fig.subplot_mosaic([["C", "A", "B"], ["flow", "flow", "flow"]], height_ratios=[3.2, 1])
        axes = [panels["C"], panels["A"], panels["B"]]
        step = 1
        rows = triton.cdiv(M, tile)
        cols = triton.cdiv(N, tile)
        draw_block_grid(axes[0], M, N, tile, tile, label=lambda r, c: f"({r},{c})", mark=(1, 2),
                        title=f"C: block (1, 2)'s {tile}×{tile} tile dark")
        # A's row panel and B's column panel, cut into the K steps the block walks
        _matrix_axes(axes[1], rows * tile, k_tiles * tile, f"A {M}×{K}: block row 1 in {k_tiles} K steps")
        _matrix_axes(axes[2], k_tiles * tile, cols * tile, f"B {K}×{N}: block column 2 in {k_tiles} K steps")
        for s in range(k_tiles):
            for ax, (x, y) in ((axes[1], (s * tile, tile)), (axes[2], (2 * tile, s * tile))):
                now = s == step
                _box(ax, x, y, tile, tile, fill=MARK if now else FILLS[1 + s % 2], hatch=MARK_HATCH if now else None,
                     gid="k-step")
                ax.text(x + tile / 2, y + tile / 2, f"k{s}", ha="center", va="center", fontsize=FONT - 1,
                        color="white" if now else "black")
        _box(axes[1], 0, 0, K, M, lw=2)
        _box(axes[2], 0, 0, N, K, lw=2)
        flow = []
        for s in range(2):
            t = s * 7.0
            flow += [("block", t, 2.5, f"copy tiles k{s}: an element a thread"), ("block", t + 2.5, 0.8, "sync"),
                     ("block", t + 3.3, 2.9, f"multiply k{s}: {tile} FMAs a thread"), ("block", t + 6.2, 0.8, "sync")]
        draw_schedule(panels["flow"], flow, ["block"], "one block's first two K steps: two __syncthreads() each",
                      kind=lambda bar: bar[3].split()[0])
        panels["flow"].set_yticks([0.5], [f"{tile}×{tile} threads"], fontsize=FONT)
        knobs = triton_knobs(variant, config)
        fig.suptitle(f"{variant.tag} TILE={tile}: per K step, stage an A tile and a B tile "
                     f"(load → barrier → multiply → barrier)", fontsize=FONT + 2)
        caption = (f"{variant.tag} with TILE = {tile}: block (1, 2) of an example {M}×{N}×{K} product walks "
                   f"ceil({K}/{tile}) = {k_tiles} K steps; at each (k{step} dark) its {tile}×{tile} threads copy one "
                   f"{tile}×{tile} tile of A and one of B into shared memory, wait at __syncthreads(), multiply them "
                   f"out of shared memory, and wait again before the next copy (the strip: its order, not its durations; "
                   f"the hatched edge tiles are padded with zeros). Triton: one program per tile, BLOCK_M×BLOCK_N×"
                   f"BLOCK_K = {knobs['BLOCK_M']}×{knobs['BLOCK_N']}×{knobs['BLOCK_K']}; the compiler stages the "
                   f"tiles and places the barriers.")
        diagrams.append(Diagram(f"{variant.tag}_staging_tile{tile}", caption, fig,
                                {"k_steps": k_tiles, "grid": (rows, cols), "example": (M, N, K)}))
    return diagrams


def b_tile_writers(tile: int) -> np.ndarray:
    """The warp that stores each element of b_tile (b_tile[ty][tx], thread ty·TILE + tx, warps of 32)."""
    ty, tx = np.meshgrid(np.arange(tile), np.arange(tile), indexing="ij")
    return (ty * tile + tx) // WARP


def race(variant: Variant) -> list[Diagram]:
    module = sys.modules[variant.module]
    tile = variant.configs[0]["TILE"]
    writers = b_tile_writers(tile)
    warps = tile * tile // WARP
    read = np.unique(writers[:, 0])  # thread (0, 0) reads b_tile[k][0] for every k
    fig = Figure(figsize=(13, 4.4), layout="constrained")
    axes = fig.subplots(1, 3, width_ratios=[1, 1.6, 1.1])
    draw_owners(axes[0], writers, unit="warp", mark=-1,
                title=f"b_tile {tile}×{tile}: the warp that stores each row")
    for k in range(tile):
        _box(axes[0], 0, k, 1, 1, fill="none", hatch=MARK_HATCH, lw=0.5, gid="read")
    axes[0].set_xlabel("hatched: column 0, which thread (0,0) reads", fontsize=FONT)
    # warps drift apart without a barrier: warp w is slower by w steps of 0.35
    bars = []
    for w in range(warps):
        t = 0.35 * w
        for step in range(2):
            bars.append((f"warp {w}", t, 1.0, f"store {step}"))
            bars.append((f"warp {w}", t + 1.0, 2.0, f"multiply {step}"))
            t += 3.0
    rows = [f"warp {w}" for w in range(warps)]
    # a warp's store of step 1 races with every slower warp still multiplying step 0
    races = {i: "race" for i, (row, s, _, label) in enumerate(bars) if label == "store 1" and any(
        b[3] == "multiply 0" and b[1] + b[2] > s and b[0] != row for b in bars)}
    draw_schedule(axes[1], bars, rows, "no barrier: warps drift apart (one interleaving)",
                  kind=lambda bar: bar[3].split()[0], marks=races)
    axes[1].tick_params(axis="y", labelsize=FONT - 2)
    split = module.SPLIT_K
    lost = []
    for p in range(split):
        t = 0.4 * p
        lost += [(f"program {p}", t, 1.0, "load C"), (f"program {p}", t + 1.0, 0.6, "add"),
                 (f"program {p}", t + 1.6, 1.0, "store C")]
    # every program loads C before the first store, so each store but the last is overwritten
    last = max(s for _, s, _, label in lost if label == "store C")
    draw_schedule(axes[2], lost, [f"program {p}" for p in range(split)],
                  f"Triton: {split} split-K programs of one tile", kind=lambda bar: bar[3],
                  marks={i: "lost" for i, (_, s, _, label) in enumerate(lost) if label == "store C" and s < last})
    fig.suptitle(f"{variant.tag} TILE={tile}: who overwrites what others still read", fontsize=FONT + 3)
    caption = (f"{variant.tag} with TILE = {tile}: a block of {tile}×{tile} threads is {warps} warps; warp w stores "
               f"rows of b_tile that every thread then reads (thread (0,0) reads column 0, stored by warps "
               f"{read.min()}..{read.max()}). Without __syncthreads() nothing keeps a fast warp from storing step 1's "
               f"tile (dark: 'overwrites') while slower warps still multiply step 0's: one interleaving, drawn as a "
               f"schedule with made-up durations. Triton: the SPLIT_K = {split} programs of one tile each load C, add "
               f"and store; all load before any stores, so all but the last addition is lost.")
    return [Diagram(f"{variant.tag}_race", caption, fig, {"warps": warps, "writers_read": len(read),
                                                          "races": len(races), "split_k": split})]


# ---- the tile hierarchies ------------------------------------------------------------------------------


def register_tiles(variant: Variant) -> list[Diagram]:
    """v05-v09: a thread's TM×TN outputs; v08 and v09 interleave a thread's columns in float4 chunks."""
    config = variant.configs[0]
    BM, BN, TM = config["BM"], config["BN"], config["TM"]
    TN = config.get("TN", 1)
    threads = BM * BN // (TM * TN)
    interleaved = variant.number >= 8

    def cells(tid):
        thread_row, thread_col = tid // (BN // TN), tid % (BN // TN)
        rows = range(thread_row * TM, thread_row * TM + TM)
        if interleaved:  # (j / 4)·CHUNK_STRIDE + thread_col·4 + q, CHUNK_STRIDE = BN·4/TN
            cols = [(j // 4) * (BN * 4 // TN) + thread_col * 4 + q for j in range(0, TN, 4) for q in range(4)]
        else:
            cols = range(thread_col * TN, thread_col * TN + TN)
        return _grid_cells(rows, cols)

    knobs = triton_knobs(variant, config)
    shape = f"a column of {TM}" if TN == 1 else f"{TM}×{TN}" + (" in float4 chunks BN·4/TN apart" if interleaved else "")
    caption = f"each thread keeps {shape} outputs of C in registers."
    note = (f"BLOCK_M×BLOCK_N = {knobs['BLOCK_M']}×{knobs['BLOCK_N']} over num_warps = {knobs['num_warps']}; "
            f"which lane holds which output is the layout tl.dot picks.")
    return [hierarchy(variant, f"{config_label(config)}: block → warps → one thread's registers", BM, BN, threads,
                      cells, caption, triton_note=note)]


def warp_tiles(variant: Variant) -> list[Diagram]:
    """v10 and v11: warp tiles of WM×WN, walked in 16×32 sub-tiles in which lane (lr, lc) owns 4×4."""
    if variant.stem == "v11_autotuned":
        tile = sys.modules[variant.module].CUDA_CANDIDATES[0]
        BM, BN, WM, WN = tile.BM, tile.BN, tile.WM, tile.WN
        label = f"first candidate {tile}"
    else:
        config = variant.configs[0]
        BM, BN, WM, WN = config["BM"], config["BN"], config["WM"], config["WN"]
        label = config_label(config)
    threads = (BM // WM) * (BN // WN) * WARP

    def cells(tid):  # kernels_cuda/v10_warptiling.cu, step 1 and the fragment reads
        warp, lane = tid // WARP, tid % WARP
        warp_row, warp_col = (warp // (BN // WN)) * WM, (warp % (BN // WN)) * WN
        lane_row, lane_col = (lane // 8) * 4, (lane % 8) * 4
        rows = [warp_row + mi * 16 + lane_row + i for mi in range(WM // 16) for i in range(4)]
        cols = [warp_col + ni * 32 + lane_col + j for ni in range(WN // 32) for j in range(4)]
        return _grid_cells(rows, cols)

    caption = (f"warp tiles of {WM}×{WN}, walked in 16×32 sub-tiles; in each, lane (lr, lc) of a 4×8 grid owns "
               f"the 4×4 outputs at rows 4·lr, columns 4·lc, so a lane's outputs repeat every 16 rows and 32 columns.")
    if variant.stem == "v11_autotuned":
        caption += " The search picks the tile per device and shape; this is its first candidate."
    return [hierarchy(variant, f"{label}: block → warps → lanes", BM, BN, threads, cells, caption,
                      triton_note="tl.dot picks the layout; v11's Gluon kernel writes this same one out "
                                  "(a BlockedLayout of 4×4 per lane, 4×8 lanes).")]


def fragments(variant: Variant) -> list[Diagram]:
    """v12 and v13: warp tiles made of tensor-core fragments (WMMA 16×16, mma.sync m16n8)."""
    config = variant.configs[0]
    BM, BN, WM, WN = config["BM"], config["BN"], config["WM"], config["WN"]
    threads = (BM // WM) * (BN // WN) * WARP
    if variant.stem == "v12_wmma":
        fm, fn, fk = cu_shape(variant, r"fragment<wmma::accumulator, (\d+), (\d+), (\d+)")
        what = f"WMMA {fm}×{fn}×{fk} fragments; which lane holds which element of one is unspecified"
    else:
        fm, fn, fk = cu_shape(variant, r"mma\.sync\.aligned\.m(\d+)n(\d+)k(\d+)")
        what = (f"mma.sync m{fm}n{fn}k{fk} fragments; in each, lane l holds rows l/4 and l/4 + 8, "
                f"columns 2·(l%4) and + 1 (dark: lane 0)")

    def cells(tid):
        warp, lane = tid // WARP, tid % WARP
        warp_row, warp_col = (warp // (BN // WN)) * WM, (warp % (BN // WN)) * WN
        if variant.stem == "v12_wmma":  # a fragment's elements belong to the warp as a whole: deal them out
            rows, cols = _grid_cells(range(warp_row, warp_row + WM), range(warp_col, warp_col + WN))
            return rows[lane::WARP], cols[lane::WARP]
        rows = [warp_row + f * fm + lane // 4 + h for f in range(WM // fm) for h in (0, fm // 2)]
        cols = [warp_col + f * fn + 2 * (lane % 4) + q for f in range(WN // fn) for q in range(2)]
        return _grid_cells(rows, cols)

    knobs = triton_knobs(variant, config)
    diagram = hierarchy(variant, f"{config_label(config)}: block → warps → fragments", BM, BN, threads, cells,
                        f"warp tiles of {WM}×{WN}, each {WM // fm}×{WN // fn} {what}.",
                        triton_note=f"tl.dot on BLOCK_M×BLOCK_N×BLOCK_K = {knobs['BLOCK_M']}×{knobs['BLOCK_N']}×"
                                    f"{knobs['BLOCK_K']} with num_warps = {knobs['num_warps']}, num_stages = "
                                    f"{knobs['num_stages']}: the compiler picks the mma instructions.",
                        zoom_lanes=variant.stem != "v12_wmma", zoom=(fm, fn))
    ax = diagram.figure.axes[1]
    for r in range(0, BM, fm):
        for c in range(0, BN, fn):
            _box(ax, c, r, fn, fm, lw=0.3, edge="0.35", gid="fragment")
    diagram.facts["fragment"] = (fm, fn, fk)
    return [diagram]


def warpgroups(variant: Variant, bm: int, bn: int, consumers: int, split: str, caption: str) -> Diagram:
    """Hopper rungs: a CTA tile split between consumer warpgroups of 128 threads (by rows or columns)."""
    threads = consumers * 4 * WARP

    def cells(tid):
        group, t = tid // (4 * WARP), tid % (4 * WARP)
        if split == "rows":
            h = bm // consumers
            rows, cols = _grid_cells(range(group * h, group * h + h), range(bn))
        else:
            w = bn // consumers
            rows, cols = _grid_cells(range(bm), range(group * w, group * w + w))
        return rows[t::4 * WARP], cols[t::4 * WARP]

    owner = owner_map((bm, bn), cells, threads)
    M, N, _ = example_shape(bm, bn)
    fig, axes = _figure(2)
    rows, cols = draw_block_grid(axes[0], M, N, bm, bn, label=lambda r, c: f"({r},{c})")
    draw_owners(axes[1], owner // (4 * WARP), unit="warpgroup", mark=-1,
                title=f"one {bm}×{bn} tile: {consumers} consumer warpgroups",
                names=lambda i: f"consumer {i + 1}\n(warpgroup {i + 1})" if variant.number >= 15
                else f"warpgroup {i}")
    fig.suptitle(f"{variant.tag}: CTA tile → warpgroups (wgmma)", fontsize=FONT + 3)
    text = (f"{variant.tag}: {caption} An example C of {M}×{N} takes ceil({M}/{bm})×ceil({N}/{bn}) = "
            f"{rows}×{cols} tiles of {bm}×{bn}.")
    return Diagram(f"{variant.tag}_tiles", text, fig, {"grid": (rows, cols), "example": (M, N), "block": (bm, bn),
                                                       "consumers": consumers, "threads": threads,
                                                       "thread_elements": int((owner == 0).sum())})


# ---- block order -------------------------------------------------------------------------------------


def draw_order(ax, order: list[tuple[int, int]], grid: tuple[int, int], wave: int, band: int,
               title: str) -> tuple[int, int]:
    """Tiles numbered by when they start, shaded in bands of `band` rows; the first `wave` (running
    together) dark. Returns the row panels of A and column panels of B those read."""
    _matrix_axes(ax, grid[0], grid[1], title)
    for i, (r, c) in enumerate(order):
        now = i < wave
        _box(ax, c, r, 1, 1, fill=MARK if now else FILLS[(r // band + c) % 2], lw=0.4, gid="wave" if now else "tile")
        ax.text(c + 0.5, r + 0.5, str(i), ha="center", va="center", fontsize=FONT - 3,
                color="white" if now else "black")
    first = order[:wave]
    return len({r for r, _ in first}), len({c for _, c in first})


def grouped_order(variant: Variant) -> list[Diagram]:
    module = sys.modules[variant.module]
    grouped = module.CUDA_CANDIDATES[0]
    row_major = module.CUDA_SEARCH.reference[1]
    M = N = 16 * grouped.BM
    grid = (triton.cdiv(M, grouped.BM), triton.cdiv(N, grouped.BN))
    wave = 2 * grid[1]
    fig, axes = _figure(2, width=5.2, height=5.4)
    facts = {}
    for ax, tile in zip(axes, (row_major, grouped)):
        order = [module._grouped_tile(t, grid[0], grid[1], tile.GROUP_M) for t in range(grid[0] * grid[1])]
        panels = draw_order(ax, order, grid, wave, tile.GROUP_M, f"GROUP_M = {tile.GROUP_M}")
        ax.set_title(f"GROUP_M = {tile.GROUP_M}: the first {wave} blocks read\n{panels[0]} row panels of A, "
                     f"{panels[1]} column panels of B", fontsize=FONT + 1)
        facts[tile.GROUP_M] = {"order": order, "panels": panels}
    fig.suptitle(f"{variant.tag}: block launch order over a {grid[0]}×{grid[1]} grid of tiles", fontsize=FONT + 3)
    caption = (f"{variant.tag}: which tile the i-th block computes, for an example {M}×{N} C in {grouped.BM}×"
               f"{grouped.BN} tiles, drawn with the kernel's own grouped_tile: row-major (the search's reference "
               f"candidate, GROUP_M = {row_major.GROUP_M}) against grouped (GROUP_M = {grouped.GROUP_M}). Dark: the first "
               f"{wave} blocks, as if that many ran at once; grouped, they share fewer panels of A and B, which stay "
               f"in L2. Triton uses the same function on tl.program_id(0).")
    return [Diagram(f"{variant.tag}_order", caption, fig, {"grid": grid, "wave": wave, **facts})]


def persistent_walk(variant: Variant, bm: int, bn: int, programs: int, group_m: int = 1, cluster: int = 1,
                    note: str = "") -> Diagram:
    """A persistent grid: program p takes tiles p, p + P, p + 2P, ... (each mapped through grouped_tile);
    with clusters, a cluster of `cluster` CTAs takes a cluster tile of cluster·bm rows."""
    from ..v11_autotuned import _grouped_tile

    height = cluster * bm
    M, N = 6 * height, 8 * bn
    grid = (M // height, N // bn)
    tiles = grid[0] * grid[1]
    who = "cluster" if cluster > 1 else "program"
    fig, axes = _figure(1, width=6.4, height=5.2)
    ax = axes[0]
    _matrix_axes(ax, grid[0], grid[1], "")
    rounds = triton.cdiv(tiles, programs)
    for t in range(tiles):
        r, c = _grouped_tile(t, grid[0], grid[1], group_m)
        rnd = t // programs
        last = rnd == rounds - 1
        _box(ax, c, r, 1, 1, fill=FILLS[rnd % len(FILLS)], hatch="..." if last else None, lw=0.5, gid="tile",
             edge="0.55" if last else EDGE)
        ax.text(c + 0.5, r + 0.5, f"{who[0]}{t % programs}\nround {rnd}", ha="center", va="center",
                fontsize=FONT - 2, bbox={"facecolor": "white", "edgecolor": "none", "pad": 1} if last else None)
    _box(ax, 0, 0, grid[1], grid[0], lw=1.6)
    idle = rounds * programs - tiles
    size = f"{height}×{bn} ({cluster} CTAs of {bm}×{bn})" if cluster > 1 else f"{bm}×{bn}"
    ax.set_title(f"{tiles} {who} tiles of {size}, {programs} persistent {who}s:\n{rounds} rounds, "
                 f"{idle} {who}s idle in the last (dotted)", fontsize=FONT + 1)
    fig.suptitle(f"{variant.tag}: the persistent tile walk", fontsize=FONT + 3)
    order = "row-major" if group_m == 1 else f"grouped (GROUP_M = {group_m} {who} rows, column by column)"
    caption = (f"{variant.tag}: a persistent grid; {who} p computes tiles p, p + P, p + 2P, ... in {order} order. "
               f"Example: a {M}×{N} C and P = {programs} {who}s, small so that the picture stays readable (on a GPU P "
               f"is as many as fit on its SMs at once). Shade: the round; the last round leaves {idle} {who}s idle."
               + (f" {note}" if note else ""))
    return Diagram(f"{variant.tag}_walk", caption, fig, {"tiles": tiles, "rounds": rounds, "programs": programs})


# ---- producer and consumers ----------------------------------------------------------------------------


def ring(tiles: int, k_tiles: int, stages: int, consumers: int, producer: bool) -> list[tuple[str, float, float, str]]:
    """A STAGES-deep ring of shared-memory slots: TMA fills slot i % STAGES once its `empty` barrier says the
    consumers are done with k-block i - STAGES; the consumers wait on `full`, multiply, arrive on `empty`.
    producer: a warpgroup of its own, which runs ahead across tiles (v15); else a consumer thread issues the
    copies, STAGES - 1 ahead, and the epilogue stalls them (v14)."""
    bars, done = [], {}
    math_end, issue = 0.0, 0.0
    total = tiles * k_tiles
    for i in range(total):
        tile, kb = divmod(i, k_tiles)
        free = done.get(i - stages, 0.0)
        start = max(issue, free)
        if not producer:  # the issuing thread is a consumer: it issues only between its own multiplies
            start = max(start, done.get(i - stages + 1, 0.0) if i >= stages - 1 else 0.0)
        bars.append((f"slot {i % stages}", start, LOAD, f"TMA t{tile} k{kb}"))
        issue = start + 0.2
        begin = max(math_end, start + LOAD)
        for c in range(consumers):
            bars.append((f"consumer {c + 1}" if producer else f"warpgroup {c}", begin, MATH, f"t{tile} k{kb}"))
        math_end = begin + MATH
        done[i] = math_end
        if kb == k_tiles - 1:
            for c in range(consumers):
                bars.append((f"consumer {c + 1}" if producer else f"warpgroup {c}", math_end, EPILOGUE, "store C"))
            math_end += EPILOGUE
    return bars


def producer_consumer(variant: Variant, stages: int, consumers: int, producer: bool, source: str) -> Diagram:
    k_tiles, tiles = 4, 2
    bars = ring(tiles, k_tiles, stages, consumers, producer)
    rows = [f"slot {s}" for s in range(stages)] + list(dict.fromkeys(b[0] for b in bars if not b[0].startswith("slot")))
    fig, axes = _figure(1, width=12, height=0.5 * len(rows) + 1.4)
    draw_schedule(axes[0], bars, rows, f"STAGES = {stages} shared-memory slots, {tiles} tiles of {k_tiles} k-blocks "
                  f"each: copies in flight per slot, then the multiplies", kind=lambda bar: bar[3].split()[0])
    who = ("a producer warpgroup issues every TMA copy and runs ahead across tiles, so the next tile's copies fly "
           "during the consumers' epilogue" if producer else
           "thread 0 of warpgroup 0 issues the TMA copies STAGES - 1 k-blocks ahead, between its own multiplies")
    fig.suptitle(f"{variant.tag}: TMA, mbarriers and wgmma over time", fontsize=FONT + 3)
    caption = (f"{variant.tag}: a schedule drawn from the config, not a measurement (durations made up; "
               f"`python -m implementations.tools.timeline` measures v15 on a GPU). A ring of STAGES = {stages} "
               f"shared-memory slots ({source}): {who}. A copy into a slot waits on the slot's `empty` mbarrier (every "
               f"consumer has finished the k-block that was there), a multiply on its `full` mbarrier (the copy engine "
               f"has counted the bytes in).")
    return Diagram(f"{variant.tag}_pipeline", caption, fig, {"stages": stages, "consumers": consumers,
                                                             "copies": sum(1 for b in bars if b[0].startswith("slot"))})


def cluster_multicast(variant: Variant) -> Diagram:
    """v15: the CTAs of a cluster compute vertically adjacent tiles and share each B tile; CTA `rank` loads
    B's column boxes rank, rank + CLUSTER_M, ... and TMA multicasts each into every CTA of the cluster."""
    module = sys.modules[variant.module]
    tile = module.CUDA_CANDIDATES[0]
    box = cu_constant(variant, "V15_ROW_BYTES") // 2  # a box's columns of 16-bit B: one 128-byte row
    BM, BK, BN, ranks = tile.BM, module.BK, tile.BN, tile.CLUSTER_M
    gap = BK / 2
    fig, axes = _figure(1, width=6.4, height=6.0)
    ax = axes[0]
    top = BK + gap
    _matrix_axes(ax, top + ranks * BM, BN, "")
    for b in range(BN // box):
        rank = b % ranks  # for (box = rank; box < B_BOXES; box += CLUSTER_M)
        _box(ax, b * box, 0, box, BK, fill=FILLS[1 + 2 * rank % 3], hatch=MARK_HATCH if rank else None,
             gid="b-box")
        ax.text(b * box + box / 2, BK / 2, f"box {b}\nloaded by\nCTA {rank}", ha="center", va="center",
                fontsize=FONT - 1, bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
    ax.text(BN / 2, -4, f"B's {BK}×{BN} tile for this k-block", ha="center", va="bottom", fontsize=FONT)
    for rank in range(ranks):
        y = top + rank * BM
        _box(ax, 0, y, BN, BM, fill=FILLS[0], lw=1.4, gid="cta-tile")
        ax.text(BN / 2, y + BM / 2, f"CTA {rank}: C rows {rank * BM}-{rank * BM + BM - 1} of the cluster tile,\n"
                f"multiplies with the whole B tile (every box lands in its shared memory)", ha="center",
                va="center", fontsize=FONT - 1)
        # the first CTA's arrow goes straight down, the others' along the right margin, clear of the text
        x = BN / 2 if rank == 0 else BN + 6 * rank
        ax.annotate("", xy=(x, y if rank == 0 else y + BM / 2), xytext=(x, BK if rank == 0 else BK / 2),
                    arrowprops={"arrowstyle": "->", "color": EDGE, "lw": 1.2})
    ax.set_xlim(-2, BN + 6 * ranks + 2)
    fig.suptitle(f"{variant.tag}: a cluster of {ranks} CTAs shares each B tile (TMA multicast)", fontsize=FONT + 3)
    caption = (f"{variant.tag}: the first candidate ({tile}) runs clusters of CLUSTER_M = {ranks} CTAs on vertically "
               f"adjacent {BM}×{BN} tiles, which need the same B tile. CTA r issues the TMA copies of B's {box}-column "
               f"boxes r, r + {ranks}, ... (the box width read from the .cu) with multicast, so each box is read from "
               f"L2 once and lands in both CTAs' shared memory; a slot is refilled only when the consumers of both "
               f"CTAs have arrived on its `empty` barrier.")
    return Diagram(f"{variant.tag}_cluster", caption, fig, {"boxes": BN // box, "ranks": ranks})


V15_STAMPS = IMPORT_ROOT / "docs" / "results" / "h100_v15_timeline" / "4096_bf16.npz"


def measured_walk(variant: Variant, path: Path = V15_STAMPS) -> list[Diagram]:
    """v15's CUDA C kernel as it ran: each CTA's start, the end of each tile it multiplied and its end, from
    stamps saved by `python -m implementations.tools.timeline --save` (none where they are not at hand)."""
    if not path.is_file():
        return []
    from .timeline import END_CLK, END_NS, START_CLK, START_NS, TILES

    saved = np.load(path)
    stamps, taken = saved["stamps"][0], saved["taken"]
    t0 = stamps[:, START_NS].min()
    fig, axes = _figure(1, width=11, height=5.6)
    ax = axes[0]
    for cta, row in enumerate(stamps):
        ns_per_clk = (row[END_NS] - row[START_NS]) / (row[END_CLK] - row[START_CLK])
        marks = [row[START_NS]] + [row[START_NS] + (clk - row[START_CLK]) * ns_per_clk
                                   for clk in row[TILES:TILES + min(taken[cta], len(row) - TILES)]]
        if marks[-1] < row[END_NS]:
            marks.append(row[END_NS])
        spans = [((a - t0) / 1e3, (b - a) / 1e3) for a, b in zip(marks, marks[1:])]
        ax.broken_barh(spans, (cta, 0.9), facecolors=[FILLS[1 + i % 3] for i in range(len(spans))],
                       edgecolor="none", gid="cta")
    ax.set_ylim(len(stamps), 0)
    ax.set_xlim(0, (stamps[:, END_NS].max() - t0) / 1e3 * 1.02)
    ax.set_xlabel("µs since the first CTA started (measured)", fontsize=FONT)
    ax.set_ylabel("CTA", fontsize=FONT)
    ax.tick_params(labelsize=FONT)
    shape, tile = "×".join(map(str, saved["shape"])), variant_tile(variant, saved["tile"])
    ax.set_title(f"{shape} bf16, {tile}: {len(stamps)} CTAs, shade changes at each tile's last multiply",
                 fontsize=FONT + 1)
    fig.suptitle(f"{variant.tag}: the tile walk as measured, CTA by CTA", fontsize=FONT + 3)
    caption = (f"{variant.tag}: measured, not drawn from the config: one launch of the CUDA C kernel ({shape}, bf16, "
               f"{tile}) on an H100, from the stamps in {path.relative_to(IMPORT_ROOT).as_posix()} (the first of "
               f"{len(saved['stamps'])} launches). Each row is a CTA from its start to its end; the shade changes where "
               f"it finished a tile's multiplies, and the piece after the last of them is its last epilogue (storing C). "
               f"`python -m implementations.tools.timeline` records and analyses such stamps.")
    return [Diagram(f"{variant.tag}_measured", caption, fig, {"ctas": len(stamps), "tiles": int(taken.sum())})]


def variant_tile(variant: Variant, values) -> str:
    return str(sys.modules[variant.module].Tile(*map(int, values)))


# ---- the registry: rung stem -> its diagrams -----------------------------------------------------------


def v14(variant: Variant) -> list[Diagram]:
    module = sys.modules[variant.module]
    consumers = 2  # the launch's 256 threads: both warpgroups multiply
    return [warpgroups(variant, module.BM, module.BN, consumers, "rows",
                       f"{consumers} warpgroups of 128 threads, each multiplying {module.BM // consumers} rows of the "
                       f"tile with wgmma. Triton: tma_persistent_kernel on the same {module.BM}×{module.BN}×{module.BK} "
                       f"tiles and walk; tl.dot becomes wgmma, and the compiler splits the tile over its warps."),
            producer_consumer(variant, module.STAGES, consumers, False, "the module's STAGES"),
            persistent_walk(variant, module.BM, module.BN, programs=20)]


def v15(variant: Variant) -> list[Diagram]:
    module = sys.modules[variant.module]
    tile = module.CUDA_CANDIDATES[0]
    consumers = tile.threads // (4 * WARP) - 1  # one producer warpgroup
    return [warpgroups(variant, tile.BM, tile.BN, consumers, "rows",
                       f"the first candidate ({tile}): warpgroup 0 only produces (TMA), warpgroups 1 to {consumers} "
                       f"each multiply {tile.BM // consumers}×{tile.BN}; CLUSTER_M = {tile.CLUSTER_M} CTAs of "
                       f"vertically adjacent tiles share each B tile by TMA multicast. Triton: v14's kernel with its "
                       f"FLATTEN and C_BY_TMA knobs on, searched over its configs; no warp specialization, no clusters."),
            cluster_multicast(variant),
            producer_consumer(variant, tile.STAGES, consumers, True, f"the first candidate, {tile}"),
            persistent_walk(variant, tile.BM, tile.BN, programs=10, group_m=tile.GROUP_M, cluster=tile.CLUSTER_M,
                            note="Every other round walks k downwards, starting on what the round before read last."),
            *measured_walk(variant)]


def v16(variant: Variant) -> list[Diagram]:
    module = sys.modules[variant.module]
    tile = module.CUDA_CANDIDATES[0]
    consumers = module.THREADS // (4 * WARP) - 1
    width = module.BN // consumers
    return [warpgroups(variant, module.BM, module.BN, consumers, "columns",
                       f"the kernel computes Cᵀ; consumer warpgroup w owns columns {width}·(w - 1) to {width}·w - 1 of "
                       f"the tile. Triton: a persistent tl.dot kernel on TMA descriptors, searched over its tf32 "
                       f"configs; the compiler lays out the accumulators."),
            producer_consumer(variant, tile.STAGES, consumers, True, f"the first candidate, {tile}")]


def epilogue_traffic(variant: Variant, shape: tuple[int, int, int] = (8192, 8192, 4096), size: int = 2) -> Diagram:
    """What fusion saves: the least each kernel of torch's unfused sequence must move through DRAM (its
    operands read once, its output written once) beside the fused kernel, at one bf16 shape."""
    M, N, K = shape
    a, b, c, bias = M * K * size, K * N * size, M * N * size, N * size
    steps = [("unfused: C = A @ B", [("read A, B", a + b), ("write C", c)]),
             ("unfused: C += bias", [("read C, bias", c + bias), ("write C", c)]),
             ("unfused: C = act(C)", [("read C", c), ("write C", c)]),
             (f"fused ({variant.tag})", [("read A, B, bias", a + b + bias), ("write C", c)])]
    fig, axes = _figure(1, width=11, height=3.2)
    ax = axes[0]
    mib = 2**20
    for row, (_, parts) in enumerate(steps):
        x = 0.0
        for i, (label, nbytes) in enumerate(parts):
            _box(ax, x, row + 0.15, nbytes / mib, 0.7, fill=FILLS[1 + i], lw=0.6, gid=f"bytes-{row}")
            ax.text(x + nbytes / mib / 2, row + 0.5, f"{label}: {nbytes / mib:,.0f} MiB", ha="center", va="center",
                    fontsize=FONT - 1, clip_on=True)
            x += nbytes / mib
    unfused = sum(n for _, parts in steps[:3] for _, n in parts)
    fused = sum(n for _, n in steps[3][1])
    ax.set_xlim(0, max(a + b + bias + c, 2 * c + bias) / mib * 1.02)
    ax.set_ylim(len(steps), 0)
    ax.set_yticks([i + 0.5 for i in range(len(steps))], [name for name, _ in steps], fontsize=FONT)
    ax.set_xlabel("MiB through DRAM, at least (computed from the shape, not measured)", fontsize=FONT)
    ax.tick_params(labelsize=FONT)
    ax.set_title(f"C = act(A @ B + bias), {M}×{N}×{K} bf16: {unfused / mib:,.0f} MiB in three kernels, "
                 f"{fused / mib:,.0f} MiB fused", fontsize=FONT + 1)
    fig.suptitle(f"{variant.tag}: what fusing the epilogue saves", fontsize=FONT + 3)
    caption = (f"{variant.tag}: the least each kernel must read and write through DRAM at {M}×{N}×{K} in bf16, computed "
               f"from the shape. The unfused sequence (the product, then += bias, then the activation, as torch runs "
               f"F.gelu(a @ b + bias)) reads and writes all of C once more per pass after the product: "
               f"{(unfused - fused) / mib:,.0f} MiB more than the fused kernel, which applies the bias and the "
               f"activation to its accumulators in registers and writes C once. The passes are memory-bound, so "
               f"their time is about those bytes over the memory bandwidth; the product's flops stay the same.")
    return Diagram(f"{variant.tag}_traffic", caption, fig, {"unfused": unfused, "fused": fused, "saved": unfused - fused})


def grouped_tiles(variant: Variant, routing: str = "mixtral") -> Diagram:
    """A's rows in a routing's ragged groups and the BM-row tiles laid over each group from its first row (the
    rung's first CUDA candidate's BM): the last tile of a group that is not a multiple of BM crosses into the
    next group's rows, which it computes and does not store; beside it, the tiles padding every group to the
    largest would take."""
    from ..core.check import ROUTINGS

    module = sys.modules[variant.module]
    bm = module.CUDA_CANDIDATES[0].BM
    groups = ROUTINGS[routing].groups
    M = sum(groups)
    fig, axes = _figure(1, width=11, height=3.0)
    ax = axes[0]
    start, tiles, straddling = 0, 0, 0
    for g, rows in enumerate(groups):
        _box(ax, start, 0.1, rows, 0.8, fill=FILLS[1 + g % 2], lw=0.6, gid=f"group-{g}")
        ax.text(start + rows / 2, 0.5, f"g{g}: {rows}", ha="center", va="center", fontsize=FONT - 1)
        count = triton.cdiv(rows, bm)
        for t in range(count):
            past = start + (t + 1) * bm > start + rows
            # a crossing tile drawn over the next group's first one, a little lower: both cover those rows
            _box(ax, start + t * bm, 1.35 if past else 1.2, bm, 0.6, fill=MARK if past else FILLS[0],
                 hatch=MARK_HATCH if past else None, lw=0.4, gid="straddling" if past else "tile", zorder=3 if past else 2)
        tiles, straddling = tiles + count, straddling + (rows % bm != 0)
        start += rows
    padded = len(groups) * triton.cdiv(max(groups), bm)
    ax.set_xlim(0, M + bm)
    ax.set_ylim(2.1, 0)
    ax.set_yticks([0.5, 1.6], ["groups (rows)", f"tiles of {bm} rows"], fontsize=FONT)
    ax.set_xlabel(f"rows of A (M = {M})", fontsize=FONT)
    ax.tick_params(labelsize=FONT)
    ax.set_title(f"{routing}: {len(groups)} groups, {tiles} tile rows end to end ({straddling} cross into the next "
                 f"group's rows, dark); padded to the largest group, {padded}", fontsize=FONT + 1)
    fig.suptitle(f"{variant.tag}: ragged groups, one persistent launch", fontsize=FONT + 3)
    caption = (f"{variant.tag}: the {routing} routing's {len(groups)} groups of A's rows (M = {M}), and the tiles of "
               f"BM = {bm} rows (the first CUDA candidate's) laid over each group from its first row, drawn from the "
               f"routing, not measured. Each group's tiles follow the last group's, and the persistent grid walks them "
               f"all: {tiles} tile rows, each times N / BN tiles. A tile that crosses its group's end (dark, hatched) "
               f"reads the next group's rows through the same tensor map, computes them and stores only its group's "
               f"rows, from registers; CUDA C stores the others by TMA (Triton stores every tile from registers, "
               f"masked). Padding every group to the largest would take "
               f"{padded} tile rows, and a loop of one product per group pays a launch and a tail of idle SMs each.")
    return Diagram(f"{variant.tag}_groups", caption, fig, {"tiles": tiles, "straddling": straddling, "padded": padded,
                                                          "BM": bm})


def fp8_rows(variant: Variant) -> Diagram:
    """v19: a tile's row along k is one 128-byte swizzle row (one TMA box row) for 16-bit and e4m3 operands
    alike, and a wgmma k-step reads 32 bytes of it: 64 k of bf16 in four k16 steps, or 128 k of e4m3 in four
    k32 steps. The widths are read from the kernel file v19's .cu includes (v15's)."""
    text = variant.cuda_source.path.read_text()
    kernel = variant.cuda_source.path.parent / re.search(r'#include "(v\d\d_\w+\.cu)"', text).group(1)
    row = int(re.search(r"constexpr int V15_ROW_BYTES = (\d+);", kernel.read_text()).group(1))
    step = int(re.search(r"K_STEPS = V15_ROW_BYTES / (\d+)", kernel.read_text()).group(1))
    types = [("bf16 (v15)", 2, "k16"), ("e4m3 (v19)", 1, "k32")]
    fig, axes = _figure(1, width=9, height=2.6)
    ax = axes[0]
    for y, (name, size, shape) in enumerate(types):
        for s in range(row // step):
            first, last = s * step // size, (s + 1) * step // size - 1
            _box(ax, s * step, y + 0.15, step, 0.7, fill=MARK if s == 0 else FILLS[1 + s % 2],
                 hatch=MARK_HATCH if s == 0 else None, lw=0.8, gid="k-step-mark" if s == 0 else f"k-step-{y}")
            ax.text(s * step + step / 2, y + 0.5, f"k {first}-{last}", ha="center", va="center", fontsize=FONT,
                    color="white" if s == 0 else "black",
                    bbox={"facecolor": MARK if s == 0 else "white", "edgecolor": "none", "pad": 1})
    ax.set_xlim(0, row)
    ax.set_ylim(len(types), 0)
    ax.set_yticks([i + 0.5 for i in range(len(types))],
                  [f"{name}: {row // size} k, {row // step} × wgmma {shape}" for name, size, shape in types],
                  fontsize=FONT)
    ax.set_xlabel(f"bytes along one row of A's (or the N×K B's) tile in shared memory: one {row}-byte swizzle row",
                  fontsize=FONT)
    ax.tick_params(labelsize=FONT)
    fig.suptitle(f"{variant.tag}: the same bytes per stage, twice the k", fontsize=FONT + 3)
    caption = (f"{variant.tag}: one row of a tile along k, as TMA lays it into shared memory, for bf16 (v15) and e4m3 "
               f"(v19), drawn from the kernel's constants, not measured. The row is {row} bytes either way (the "
               f"128-byte swizzle, a box row of TMA), so the boxes, the ring of stages and the wgmma descriptors are "
               f"the same byte for byte; each wgmma k-step (the first one dark) reads {step} bytes of it: 16 k of "
               f"bf16 or 32 of e4m3. A stage carries {row // 2} k of bf16 or {row} of e4m3 for the same bytes, and "
               f"fp8 wgmma runs at twice the rate: the data per stage is the same, the flops twice.")
    return Diagram(f"{variant.tag}_rows", caption, fig, {"row_bytes": row, "step_bytes": step,
                                                        "k_bf16": row // 2, "k_e4m3": row})


DIAGRAMS: dict[str, Callable[[Variant], list[Diagram]]] = {
    "v01_naive": naive_access,
    "v02_coalesced": naive_access,
    "v03_smem_tiling": staging,
    "v04_smem_no_sync": race,
    "v05_blocktiling_1d": register_tiles,
    "v06_blocktiling_2d": register_tiles,
    "v07_vectorize": lambda v: register_tiles(v) + float4_loads(v),
    "v08_bank_conflicts": lambda v: register_tiles(v) + bank_conflicts(v),
    "v09_double_buffering": double_buffering,
    "v10_warptiling": warp_tiles,
    "v11_autotuned": lambda v: warp_tiles(v) + grouped_order(v),
    "v12_wmma": fragments,
    "v13_mma_sync": fragments,
    "v14_wgmma_tma": v14,
    "v15_warp_specialized": v15,
    "v16_wgmma_tf32": v16,
    "v17_fused_epilogue": lambda v: [epilogue_traffic(v)],
    "v18_grouped": lambda v: [grouped_tiles(v)],
    "v19_fp8": lambda v: [fp8_rows(v)],
}


def diagrams_of(variant: Variant) -> list[Diagram]:
    """The rung's figures; none for a rung the registry does not know yet."""
    draw = DIAGRAMS.get(variant.stem)
    return draw(variant) if draw else []


def save(figure: Figure, path: Path) -> Path:
    """PNG in 8-bit grey: the pictures are drawn in greys only, and a third of the bytes of RGBA."""
    from PIL import Image  # matplotlib's own dependency

    buffer = io.BytesIO()
    figure.savefig(buffer, dpi=DPI, format="png")
    Image.open(buffer).convert("L").save(path, optimize=True)
    return path


def write(variants: Iterable[Variant], out_dir: Path) -> dict[str, list[tuple[Path, str]]]:
    """Draw every rung's figures into out_dir as PNG; returns rung tag -> [(path, caption)]."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, list[tuple[Path, str]]] = {}
    for variant in variants:
        for d in diagrams_of(variant):
            path = out_dir / f"{d.name}.png"
            save(d.figure, path)
            written.setdefault(variant.tag, []).append((path, d.caption))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m implementations.tools.diagrams",
                                     description="Draw each rung's diagrams from its own constants (no GPU needed).")
    parser.add_argument("--out", type=Path, required=True, help="folder for the PNG files")
    parser.add_argument("--rungs", default=None, help="rungs by number, name or range (default: all)")
    args = parser.parse_args(argv)
    for tag, drawn in write(select(args.rungs) if args.rungs else all_variants(), args.out).items():
        print(f"{tag}: " + ", ".join(str(p) for p, _ in drawn))
    return 0


if __name__ == "__main__":
    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")  # before the rung modules are imported
    sys.exit(main())
