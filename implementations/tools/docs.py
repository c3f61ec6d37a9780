"""The tables in README.md and docs/, generated from saved results so that no figure is pasted by hand.

A generated block sits between two marker comments; the first names the table's kind, its sources
(paths from the checkout's root) and options:

    <!-- generated: ladder docs/results/h100_fp32_4096.json size=4096x4096x4096 -->
    ...the table, rewritten by this module...
    <!-- end generated -->

    python -m implementations.tools.docs             # rewrite every block in README.md and docs/**/*.md
    python -m implementations.tools.docs --check     # exit 1 naming each block that differs
    python -m implementations.tools.docs --check docs/results.md   # only these files

Kinds (sources are documents of `compare.py --json`, or `--csv` rows with their .env.json beside them):
- headline DOC...       the best rung of each language against cuBLAS, one row per document (precision),
                        with the device and the date of the run; size= picks the size.
- ladder DOC            one document and size: every rung and config, CUDA C beside Triton (ms ± half
                        the 20-80 percentile spread, TFLOP/s, % of cuBLAS), then what each search chose
                        and why a row was not timed.
- pct DOC...            % of cuBLAS only, one column pair per document and size (sizes= to pick).
- sizes DOC...          one row per size: cuBLAS's TFLOP/s and each rung's % in each language;
                        choices=yes adds what each search chose.
- sweep DOC param=NAME  `compare.py --sweep NAME=...`: one row per value, ms (% of cuBLAS) per size.
- ncu DOC               the Nsight Compute records of `compare.py --ncu`: speed of light, DRAM bytes and
                        the traffic the block tile predicts.
- distributed DOC...    a `compare.py --distributed` run: per size, each kernel and strategy (slowest rank's
                        step, TFLOP/s per GPU, scaling efficiency, compute and all-gather times).
- scaling DOC...        several distributed runs of the same sizes: per size, kernel and strategy, each
                        run's scaling efficiency, their median, and median T1 / (W·median T_W);
                        size= keeps one size.
- copies PROBE...        `small_probe.py --layout-copies` probes, one per form of the CUDA C copy: µs per
                        copy of size= (default 4096×4096) into the other storage order, per element width.
- index DIR             every file under DIR with its device and date (result documents) and the pages,
                        tables and rung docstrings that name it.
rungs=1-11 (numbers and ranges) keeps those rungs in any table; cuBLAS always stays. A row whose every
result was skipped (a dtype the rung does not support) is left out and named under the table.
"""

from __future__ import annotations

import argparse
import dataclasses
import ast
import difflib
import fnmatch
import json
import os
import re
import shlex
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from html.parser import HTMLParser
from pathlib import Path

from tabulate import tabulate

from ..core import shapes as model_shapes
from ..core.bench import STATUS_OK, STATUS_SKIPPED, Result
from ..core.check import LAYOUTS, PRECISIONS
from ..core.registry import all_variants
from ..core.report import _ms, by_shape, csv_env_path, load_document, results_of
from ..core.traffic import predicted_bytes

BLOCK = re.compile(r"(?P<head><!-- generated: (?P<spec>[^\n]*?) -->\n)(?P<body>.*?)(?P<tail><!-- end generated -->)",
                   re.S)
LANG_NAMES = {"cuda": "CUDA C", "triton": "Triton"}


class DocsError(ValueError):
    """A marker that cannot be generated: unknown kind, missing source, a size the document lacks."""


@dataclass
class Context:
    """What a table is generated for: the checkout, the page it goes into, the marker's options."""

    root: Path
    page: Path  # the page's path (links in a table are relative to its folder)
    options: dict[str, str] = field(default_factory=dict)

    def link(self, source: str) -> str:
        """A Markdown link from the page to a file named by its path from the root."""
        target = Path(os.path.relpath(self.root / source, self.page.parent)).as_posix()
        return f"[{Path(source).name}]({target})"


# ---- reading the results ------------------------------------------------------------------------------


@cache
def _load(path: Path) -> dict:
    if not path.is_file():
        raise DocsError(f"{path}: no such results file")
    return load_document(path)


@cache
def _titles() -> dict[str, str]:
    """Each rung's title from the registry ("v03" -> "shared-memory tiling")."""
    return {v.tag: v.title for v in all_variants()}


def rung_label(r: Result) -> str:
    if r.impl == "cublas":
        return "cuBLAS (torch.matmul)"
    return f"{r.rung} {_titles().get(r.rung, r.name.replace('_', ' '))}"


def short_label(r: Result) -> str:
    """v11 autotuned: the rung as its files are named."""
    return "cuBLAS" if r.impl == "cublas" else f"{r.rung} {r.name}"


def size_label(size: str) -> str:
    """4096x4096x4096 -> 4096³ (and "4096x4096x4096 nt" -> "4096³ nt"); a non-cube stays MxNxK."""
    dims, _, rest = size.partition(" ")
    m, n, k = dims.split("x")
    return f"{m}³{' ' + rest if rest else ''}" if m == n == k else size


def _num(value: float | None, fmt: str, scale: float = 1.0) -> str:
    return "" if value is None else format(value / scale, fmt)


def _rung_filter(spec: str | None) -> Callable[[Result], bool]:
    if not spec:
        return lambda r: True
    keep: set[int] = set()
    for part in spec.split(","):
        first, _, last = part.strip().lstrip("v").partition("-")
        keep |= set(range(int(first), int(last.lstrip("v") or first) + 1))
    return lambda r: r.impl == "cublas" or (r.rung[1:].isdigit() and int(r.rung[1:]) in keep)


@dataclass
class Shape:
    """One document's results at one size and dtype."""

    source: str
    doc: dict
    size: str
    dtype: str
    results: list[Result]

    @property
    def cublas(self) -> Result | None:
        return next((r for r in self.results if r.impl == "cublas"), None)

    def rows(self) -> dict[tuple[str, str], dict[str, Result]]:
        """(rung, config) -> {impl: result}, in the run's order, without the baselines."""
        rows: dict[tuple[str, str], dict[str, Result]] = {}
        for r in self.results:
            if r.impl in LANG_NAMES:
                rows.setdefault((r.rung, r.config), {})[r.impl] = r
        return rows

    def timed_rows(self) -> tuple[dict[tuple[str, str], dict[str, Result]], list[str]]:
        """The rows, less those whose every result was skipped; and those left out, with the reason."""
        kept, left = {}, []
        for key, by_impl in self.rows().items():
            if all(r.status == STATUS_SKIPPED for r in by_impl.values()):
                first = next(iter(by_impl.values()))
                left.append(f"{rung_label(first)}: {first.note or 'skipped'}")
            else:
                kept[key] = by_impl
        return kept, sorted(set(left))

    @property
    def device(self) -> str:
        return self.doc.get("environment", {}).get("device", "")

    @property
    def date(self) -> str:
        return self.doc.get("environment", {}).get("date", "")[:10]


def shapes(source: str, ctx: Context) -> list[Shape]:
    """The shapes of one document that the options ask for: size= (one) or sizes= (several), dtype=."""
    doc, options = _load(ctx.root / source), ctx.options
    keep = _rung_filter(options.get("rungs"))
    found = [Shape(source, doc, size, dtype, [r for r in group if keep(r)])
             for (size, dtype), group in by_shape(results_of(doc)).items()]
    wanted = [options[k] for k in ("size", "sizes") if k in options]
    if wanted:
        sizes = [s.strip() for s in ",".join(wanted).split(",")]

        def asked(shape: Shape, size: str) -> bool:  # MxNxK names a size in one layout too ("... nt" for fp8)
            dims, _, layout = shape.size.partition(" ")
            return shape.size == size or (dims == size and layout in LAYOUTS)

        missing = [size for size in sizes if not any(asked(s, size) for s in found)]
        if missing:
            raise DocsError(f"{source} has no results at {', '.join(sorted(missing))}; "
                            f"it has {', '.join(sorted({s.size for s in found}))}")
        found = [s for s in found if any(asked(s, size) for size in sizes)]
    if "dtype" in options:
        found = [s for s in found if s.dtype == options["dtype"]]
    if not found:
        raise DocsError(f"{source}: no results match {options}")
    return found


def one_shape(source: str, ctx: Context) -> Shape:
    found = shapes(source, ctx)
    if len(found) > 1:
        raise DocsError(f"{source} has {len(found)} sizes/dtypes ({', '.join(s.size + ' ' + s.dtype for s in found)}): "
                        "name one with size= (and dtype=)")
    return found[0]


def _table(header: list[str], body: list[list[str]]) -> str:
    return tabulate(body, header, tablefmt="github", disable_numparse=True)


def _bullets(lines: Iterable[str]) -> str:
    return "\n".join(f"- {line}" for line in lines)


def _with_notes(table: str, notes: list[str], ctx: Context | None = None, sources: Iterable[str] = ()) -> str:
    """The table, then one line per source (the run behind it), then the notes."""
    lines = [source_line(ctx, source) for source in dict.fromkeys(sources)] if ctx else []
    lines += notes
    return table + ("\n\n" + _bullets(lines) if lines else "")


def source_line(ctx: Context, source: str) -> str:
    """Which run a table comes from: the device, when, the versions and how it was timed."""
    env = _load(ctx.root / source).get("environment", {})
    parts = [env.get("device", "unknown device"), env.get("date", "")[:16].replace("T", " ") + " UTC"]
    parts += [f"{name} {env[name]}" for name in ("torch", "triton") if env.get(name)]
    parts += [env[name] for name in ("cupy",) if env.get(name)]
    parts += [f"driver {env['driver_version']}"] if env.get("driver_version") else []
    timing = env.get("timing", "")
    rounds = re.search(r"(\d+) rounds per size", timing)
    parts.append(timing.split(":")[0] + " timing" + (f", {rounds.group(1)} rounds pooled" if rounds else ""))
    return f"from {ctx.link(source)}: {', '.join(p for p in parts if p.strip())}"


def _best(results: Iterable[Result]) -> Result | None:
    timed = [r for r in results if r.status == STATUS_OK and r.pct_cublas is not None]
    return max(timed, key=lambda r: r.pct_cublas, default=None)


# ---- the kinds -----------------------------------------------------------------------------------------


def headline(sources: list[str], ctx: Context) -> str:
    """One row per document: precision, cuBLAS, the best rung of each language and its % of cuBLAS."""
    header = ["precision", "size", "cuBLAS TFLOP/s", "best CUDA C rung", "% of cuBLAS", "best Triton rung",
              "% of cuBLAS", "device", "date"]
    body = []
    for source in sources:
        shape = one_shape(source, ctx)
        cublas = shape.cublas
        row = [shape.dtype, size_label(shape.size), _num(cublas.tflops if cublas else None, ".1f")]
        for impl in LANG_NAMES:
            best = _best(r for r in shape.results if r.impl == impl)
            row += ["", ""] if best is None else [short_label(best), _num(best.pct_cublas, ".1f")]
        body.append(row + [shape.device, shape.date])
    return _table(header, body)


def _with_several_configs(keys: Iterable[tuple[str, str]]) -> set[str]:
    """The rungs that come in more than one config (their config is part of their label)."""
    configs: dict[str, set[str]] = {}
    for rung, config in keys:
        configs.setdefault(rung, set()).add(config)
    return {rung for rung, found in configs.items() if len(found) > 1}


def _choice(r: Result) -> str:
    """What an autotuned rung's search chose, from its note ("autotuned: BM=128 ..., 2.758 ms; ...")."""
    match = re.match(r"autotuned: (.*?)(?:,? \d+(?:\.\d+)? ms| \(|;|$)", r.note)
    return match.group(1) if match else ""


def ladder(sources: list[str], ctx: Context) -> str:
    """Every rung and config of one document at one size: ms, TFLOP/s and % of cuBLAS per language."""
    (source,) = sources
    shape = one_shape(source, ctx)
    header = ["rung", "config"] + [f"{LANG_NAMES[impl]} {col}" for impl in LANG_NAMES
                                   for col in ("ms", "TFLOP/s", "% cuBLAS")]
    body = []
    cublas = shape.cublas
    if cublas is not None:
        body.append([rung_label(cublas), "", _ms(cublas), _num(cublas.tflops, ".2f"), "100", "", "", ""])
    rows, left_out = shape.timed_rows()
    best = {impl: _best(r for by_impl in rows.values() for r in by_impl.values() if r.impl == impl)
            for impl in LANG_NAMES}
    notes: dict[tuple[str, str], list[str]] = {}
    for (rung, config), by_impl in rows.items():
        first = next(iter(by_impl.values()))
        row = [rung_label(first), config]
        for impl in LANG_NAMES:
            r = by_impl.get(impl)
            if r is None:
                cells = ["", "", ""]
            elif r.ms is None:
                cells = [r.status, "", ""]
            else:
                cells = [_ms(r), _num(r.tflops, ".2f"), _num(r.pct_cublas, ".1f")]
                if r is best[impl]:
                    cells = [f"**{c}**" for c in cells]
            if r is not None and r.note:
                notes.setdefault((rung, r.note), []).append(f"{LANG_NAMES[impl]}{' ' + config if config else ''}")
            row += cells
        body.append(row)
    notes = [f"{rung} {', '.join(who)}: {note}" for (rung, note), who in notes.items()]
    notes += [f"not run: {line}" for line in left_out]
    return _with_notes(_table(header, body), notes, ctx, sources)


def pct(sources: list[str], ctx: Context) -> str:
    """% of cuBLAS only: one column pair per document and size; cuBLAS's ms and TFLOP/s on its row."""
    columns = [shape for source in sources for shape in shapes(source, ctx)]
    header = ["rung"]
    labels: dict[tuple[str, str], str] = {}
    cells: dict[tuple[str, str], dict[int, str]] = {}
    left_out: list[str] = []
    cublas_row = ["cuBLAS (ms, TFLOP/s)"]
    several = _with_several_configs(key for shape in columns for key in shape.rows())
    for i, shape in enumerate(columns):
        header += [f"{shape.dtype} {size_label(shape.size)} CUDA C", "Triton"]
        cublas = shape.cublas
        cublas_row += ["" if cublas is None or cublas.ms is None else f"{cublas.ms:.3f}, {cublas.tflops:,.0f}", ""]
        rows, left = shape.timed_rows()
        left_out += left
        best = {impl: _best(r for by in rows.values() for r in by.values() if r.impl == impl) for impl in LANG_NAMES}
        for key, by_impl in rows.items():
            label = rung_label(next(iter(by_impl.values())))
            labels.setdefault(key, f"{label} {key[1]}" if key[0] in several else label)
            for j, impl in enumerate(LANG_NAMES):
                r = by_impl.get(impl)
                text = "" if r is None else r.status if r.pct_cublas is None else f"{r.pct_cublas:.1f}%"
                if r is not None and r is best[impl]:
                    text = f"**{text}**"
                cells.setdefault(key, {})[2 * i + j] = text
    order = sorted(labels, key=lambda key: (key[0][1:].zfill(3) if key[0][1:].isdigit() else key[0], key[1]))
    body = [cublas_row] + [[labels[key]] + [cells[key].get(c, "") for c in range(2 * len(columns))] for key in order]
    timed = {labels[key].split()[0] for key in order}
    notes = [f"not run: {line}" for line in sorted(set(left_out)) if line.split()[0] not in timed]
    return _with_notes(_table(header, body), notes, ctx, sources)


def sizes(sources: list[str], ctx: Context) -> str:
    """One row per size: cuBLAS's TFLOP/s, each rung's % of cuBLAS per language (and choices=yes: what
    each search chose; baselines=NAME,...: those baselines' % of cuBLAS; shapes=SET,...: each size's
    label in those `--shapes` sets; a timing column where the sources were timed differently)."""
    shaped = [shape for source in sources for shape in shapes(source, ctx)]
    rungs = list(dict.fromkeys(key for shape in shaped for key in shape.timed_rows()[0]))
    searched = {(r.rung, r.impl) for shape in shaped for r in shape.results if _choice(r)}
    with_choices = ctx.options.get("choices") == "yes"
    baselines = [b for b in ctx.options.get("baselines", "").split(",") if b]
    timings = [_load(ctx.root / shape.source).get("environment", {}).get("timing", "").split(":")[0]
               for shape in shaped]
    with_timing = len(set(timings)) > 1
    labels = {}
    if "shapes" in ctx.options:
        try:
            for s in model_shapes.resolve(ctx.options["shapes"]):  # a size two sets share gets both labels
                key = "x".join(map(str, s.dims))
                labels[key] = f"{labels[key]} / {s.label}" if key in labels else s.label
        except ValueError as exc:
            raise DocsError(str(exc)) from None
    header = ["size"] + (["shape"] if labels else []) + ["dtype"] + (["timing"] if with_timing else [])
    header.append("cuBLAS TFLOP/s")
    header += [f"{name} %" for name in baselines]
    several = _with_several_configs(rungs)
    for rung, config in rungs:
        header += [f"{rung}{' ' + config if rung in several else ''} {LANG_NAMES[impl]} %" for impl in LANG_NAMES]
    if with_choices:
        header += [f"{rung} {LANG_NAMES[impl]} choice" for rung, _ in rungs for impl in LANG_NAMES
                   if (rung, impl) in searched]
    body = []
    for shape, timing in zip(shaped, timings):
        rows = shape.rows()
        cublas = shape.cublas
        row = [size_label(shape.size)] + ([labels.get(shape.size, "")] if labels else []) + [shape.dtype]
        row += [timing] if with_timing else []
        row.append(_num(cublas.tflops if cublas else None, ".2f"))
        for name in baselines:
            r = next((r for r in shape.results if r.impl == name), None)
            row.append("" if r is None else r.status if r.pct_cublas is None else f"{r.pct_cublas:.1f}")
        choices = []
        for key in rungs:
            for impl in LANG_NAMES:
                r = rows.get(key, {}).get(impl)
                row.append("" if r is None else r.status if r.pct_cublas is None else f"{r.pct_cublas:.1f}")
                if with_choices and (key[0], impl) in searched:
                    choices.append("" if r is None else _choice(r))
        body.append(row + choices)
    return _with_notes(_table(header, body), [], ctx, sources)


def sweep(sources: list[str], ctx: Context) -> str:
    """`compare.py --sweep NAME=...`: one row per value of the parameter, ms (% of cuBLAS) per language
    and size; a refusal is named under the table with its reason."""
    (source,) = sources
    name = ctx.options.get("param")
    if not name:
        raise DocsError("a sweep table needs param=NAME (the swept config parameter)")
    found = shapes(source, ctx)
    header = [name] + [f"{LANG_NAMES[impl]} {size_label(s.size)}" for s in found for impl in LANG_NAMES]
    values: dict[int, list[str]] = {}
    notes = []
    for i, shape in enumerate(found):
        for r in shape.results:
            value = dict(p.split("=", 1) for p in r.config.split() if "=" in p).get(name)
            if value is None or r.impl not in LANG_NAMES:
                continue
            cells = values.setdefault(int(value), [""] * (2 * len(found)))
            if r.ms is None:
                cells[2 * i + list(LANG_NAMES).index(r.impl)] = r.status
                reason = re.sub(r"^Refused: ", "", r.note)
                notes.append(f"{r.status}: {r.rung} {LANG_NAMES[r.impl]} {name}={value}: {reason}")
            else:
                cells[2 * i + list(LANG_NAMES).index(r.impl)] = f"{r.ms:.3f} ms ({r.pct_cublas:.1f}%)"
    body = [[str(value)] + cells for value, cells in sorted(values.items())]
    return _with_notes(_table(header, body), list(dict.fromkeys(notes)), ctx, sources)


def ncu(sources: list[str], ctx: Context) -> str:
    """Nsight Compute's records in a document (`compare.py --ncu`): SM and memory throughput as % of peak,
    DRAM bytes, achieved occupancy, and the global traffic the block tile predicts beside DRAM's."""
    (source,) = sources
    doc, options = _load(ctx.root / source), ctx.options
    records = doc.get("ncu")
    if not records:
        raise DocsError(f"{source} has no Nsight Compute records (written by compare.py --ncu)")
    keep = _rung_filter(options.get("rungs"))
    header = ["rung", "config", "impl", "time µs", "SM %", "memory %", "DRAM read MB", "occupancy %",
              "predicted MB", "DRAM read+write MB", "measured / predicted"]
    body = []
    for rec in records:
        probe = Result(rec["rung"], rec["name"], rec["config"], rec["impl"], rec["dtype"], rec["M"], rec["N"], rec["K"])
        if not keep(probe) or ("size" in options and probe.size != options["size"]):
            continue
        itemsize = PRECISIONS[rec["dtype"]].dtype.itemsize
        tile = tuple(rec["tile"]) if rec.get("tile") else None
        predicted = predicted_bytes(rec["M"], rec["N"], rec["K"], tile, itemsize, itemsize) if tile else None
        read, write = rec.get("dram_read"), rec.get("dram_write")
        measured = None if read is None or write is None else read + write
        body.append([rung_label(probe) if probe.impl != "cublas" else "cuBLAS", rec["config"],
                     LANG_NAMES.get(rec["impl"], ""),
                     "" if rec.get("time_ns") is None else f"{rec['time_ns'] / 1e3:,.1f}",
                     _num(rec.get("sm_pct"), ".1f"), _num(rec.get("mem_pct"), ".1f"), _num(read, ',.1f', 1e6),
                     _num(rec.get("occupancy_pct"), ".1f"), _num(predicted, ',.1f', 1e6), _num(measured, ',.1f', 1e6),
                     "" if predicted is None or measured is None else f"{measured / predicted:.3f}"])
    return _with_notes(_table(header, body), [], ctx, sources)


def distributed(sources: list[str], ctx: Context) -> str:
    """A distributed run (`compare.py --distributed --json`): per size, every kernel and strategy with the
    slowest rank's step, TFLOP/s per GPU, scaling efficiency, compute and all-gather times."""
    from ..core.distributed import DistResult, dist_table, gather_table

    parts = []
    known = {f.name for f in dataclasses.fields(DistResult)}
    for source in sources:
        doc = _load(ctx.root / source)
        records = doc["results"]
        if not records or "strategy" not in records[0]:
            raise DocsError(f"{source} is not a distributed run (written by compare.py --distributed --json)")
        if doc.get("all-gather"):
            parts.append(f"The gather alone ({doc['environment'].get('GPU links', 'links unknown')}):"
                         f"\n\n{gather_table(doc['all-gather'], 'github')}")
        results = [DistResult(**{k: v for k, v in r.items() if k in known}) for r in records]
        for (size, dtype), group in by_shape(results).items():
            world = max(r.world for r in group)
            parts.append(f"{size} {dtype} on {world} GPU(s):\n\n{dist_table(group, 'github')}")
    return _with_notes("\n\n".join(parts), [], ctx, sources)


def scaling(sources: list[str], ctx: Context) -> str:
    """Several distributed runs: one run times T1 once, so its efficiency carries T1's spread; the runs side by
    side show how far one run's figure can be trusted, and the pooled column divides the medians."""
    import numpy as np

    steps: dict[tuple, list[dict]] = {}
    singles: dict[tuple, list[float]] = {}
    for source in sources:
        records = _load(ctx.root / source)["results"]
        if not records or "strategy" not in records[0]:
            raise DocsError(f"{source} is not a distributed run (written by compare.py --distributed --json)")
        for r in records:
            if r.get("ms") is None or ctx.options.get("size", r["size"]) != r["size"]:
                continue
            kernel = (r["size"], r["dtype"], r["impl"], r["rung"], r["config"])
            if r["strategy"] == "single":
                singles.setdefault(kernel, []).append(r["ms"])
            else:
                steps.setdefault((*kernel, r["strategy"], r["chunks"], r["world"]), []).append(r)
    from ..core.distributed import STRATEGIES, strategy_label

    sizes = list(dict.fromkeys(key[0] for key in steps))

    def order(item):  # by size as first met, then kernel, strategy and chunks
        size, _, impl, rung, config, strategy, chunks, _ = item[0]
        return sizes.index(size), ("cublas", "cuda", "triton").index(impl), rung, config, STRATEGIES.index(strategy), chunks

    body = []
    for (size, dtype, impl, rung, config, strategy, chunks, world), runs in sorted(steps.items(), key=order):
        t1 = singles.get((size, dtype, impl, rung, config))
        name = "torch.matmul" if impl == "cublas" else f"{rung} {LANG_NAMES.get(impl, impl)}"
        pooled = t1 and float(np.median(t1)) / (world * float(np.median([r["ms"] for r in runs])))
        efficiencies = [100 * r["efficiency"] for r in runs if r.get("efficiency")]
        body.append([f"{size} {dtype}", name + (f" {config}" if config else ""),
                     strategy_label(strategy, chunks), str(world), str(len(runs)),
                     ", ".join(f"{e:.1f}" for e in efficiencies),
                     _num(efficiencies and float(np.median(efficiencies)), ".1f"), _num(pooled and 100 * pooled, ".1f")])
    header = ["size", "kernel", "strategy", "GPUs", "runs", "efficiency % per run", "median %",
              "pooled % (median T1 / (W·median T_W))"]
    return _with_notes(_table(header, body), [], ctx, sources)


COPY_WIDTHS = {"float32": "fp32", "bfloat16": "bf16", "float8_e4m3fn": "fp8"}


def copies(sources: list[str], ctx: Context) -> str:
    """`small_probe.py --layout-copies` probes, one per form of the CUDA C copy: µs to copy a size= matrix (or
    batch, "64×512×512") into the other storage order, the mean of both directions, per element width. torch's
    copy_, the same-order copy (the ceiling) and the Triton tiles come from the last source, then one CUDA C row
    per source, named by its `form`."""
    size = ctx.options.get("size", "4096×4096")
    pattern = re.compile(rf"layout copy {re.escape(size)} (\S+) .*")

    def times(source: str) -> tuple[dict, dict[str, dict[str, float]]]:
        path = ctx.root / source
        if not path.is_file():
            raise DocsError(f"{path}: no such results file")
        doc = json.loads(path.read_text(encoding="utf-8"))
        per: dict[str, dict[str, list[float]]] = {}
        for key, timed in doc.items():
            match = pattern.fullmatch(key)
            if match and isinstance(timed, dict):
                for who, us in timed.items():
                    per.setdefault(who, {}).setdefault(COPY_WIDTHS.get(match.group(1), match.group(1)), []).append(us)
        if not per:
            raise DocsError(f"{source}: no layout copy of {size}")
        return doc, {who: {w: sum(v) / len(v) for w, v in by.items()} for who, by in per.items()}

    timed = [times(source) for source in sources]
    widths = list(dict.fromkeys(w for _, per in timed for by in per.values() for w in by))

    def label(who: str) -> str:  # "torch", "plain", "triton 64 w4": a 64×64 block, 4 warps
        if who in ("torch", "plain"):
            return f"torch copy_ {'in the same' if who == 'plain' else 'into the other'} storage order"
        _, tile, warps = who.split()
        return f"Triton, {tile}×{tile} block, {warps.removeprefix('w')} warps"

    rows = [(label(who), by) for who, by in timed[-1][1].items() if not who.startswith("cuda")]
    forms = []
    for (doc, per), source in zip(timed, sources):
        form = doc.get("form", Path(source).stem)
        forms.append(f"- {form} (from {ctx.link(source)}, {doc.get('device', '')}, {doc.get('date', '')})")
        rows += [(f"CUDA C, {form.split(':')[0]}" + (f", a {who.split()[1]}-element tile" if " " in who else ""), by)
                 for who, by in per.items() if who.startswith("cuda")]
    body = [[name] + [_num(by.get(w), ".1f") for w in widths] for name, by in rows]
    return _table(["copy (µs)"] + widths, body) + "\n\n" + "\n".join(forms)


# ---- the index of a results folder ---------------------------------------------------------------------


SIBLING_SUFFIXES = (".env.json", ".json", ".csv", ".md")


def _stem(name: str) -> str:
    for suffix in SIBLING_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _what(path: Path, env: dict[str, str]) -> str:
    name = path.name
    if name.endswith(".env.json"):
        return "environment of the CSV rows beside it"
    if path.suffix == ".json":
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            return "data (JSON that does not parse)"
        if isinstance(document, dict) and "entries" in document:
            return "tuning cache (every candidate's time)"
        if isinstance(document, dict) and "results" in document:
            return "results document (compare.py --json)"
        return "script output (JSON)"
    if path.suffix == ".csv":
        return "results rows (compare.py --csv)"
    if path.suffix == ".md":
        return "report (compare.py --markdown)" if env else "tables and notes (Markdown)"
    if path.suffix == ".txt":
        return "log or probe output (text)"
    return f"data ({path.suffix.lstrip('.') or 'file'})"


def _markdown_environment(path: Path) -> dict[str, str]:
    """The environment table at the top of a report written by compare.py --markdown."""
    env = {}
    for line in path.read_text(encoding="utf-8").splitlines()[:60]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0] in ("device", "date"):
            env[cells[0]] = cells[1]
    return env


def _environment(path: Path) -> dict[str, str]:
    try:
        if path.name.endswith(".env.json"):
            return json.loads(path.read_text(encoding="utf-8"))
        if path.suffix in (".json", ".csv"):
            return _load(path).get("environment", {})
        if path.suffix == ".md":
            return _markdown_environment(path)
    except (OSError, ValueError):
        pass
    return {}


class _Links(HTMLParser):
    """Every href and src of a rendered Markdown page (links inside code are text, not links)."""

    def __init__(self):
        super().__init__()
        self.targets: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.targets += [value for name, value in attrs if name in ("href", "src") and value]


def links(text: str) -> list[str]:
    """The link and image targets of a Markdown page, as Markdown renders them."""
    import markdown

    parser = _Links()
    parser.feed(markdown.markdown(text, extensions=["tables", "fenced_code"]))
    return parser.targets


def local_link(target: str) -> str | None:
    """The path part of a link into the checkout; None for a web address or an anchor on the same page."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
        return None
    return target.split("#", 1)[0] or None


@dataclass
class Referrer:
    name: str  # "README.md", "implementations/v15_warp_specialized.py (docstring)"
    text: str  # what it says, generated blocks' bodies left out
    tables: list[tuple[str, list[str]]] = field(default_factory=list)  # (kind, sources) of its markers


def strip_generated(text: str) -> str:
    return BLOCK.sub(lambda m: m.group("head") + m.group("tail"), text)


def referrers(root: Path, skip: Path) -> list[Referrer]:
    """README.md, every page under docs/ outside the indexed folder, and each rung module's docstring."""
    found = []
    pages = [root / "README.md"] + sorted((root / "docs").rglob("*.md"))
    for page in pages:
        if not page.is_file() or skip in page.parents:
            continue
        text = page.read_text(encoding="utf-8")
        tables = []
        for match in BLOCK.finditer(text):
            kind, sources, _ = _spec(match.group("spec"))
            tables.append(("".join(kind), sources))
        found.append(Referrer(page.relative_to(root).as_posix(), strip_generated(text), tables))
    for module in sorted((root / "implementations").glob("v[0-9][0-9]_*.py")):
        doc = ast.get_docstring(ast.parse(module.read_text(encoding="utf-8"))) or ""
        found.append(Referrer(f"{module.relative_to(root).as_posix()} (docstring)", doc))
    return found


GLOB = re.compile(r"[\w./-]*\w{4}[\w.-]*\*[\w.*-]*")  # h100_tc_*.md: a few letters of a name, then a *


def _mentions(text: str, names: Iterable[str]) -> bool:
    """Whether text names one of these (a file's name, its path in the folder, from the root): as a word of
    its own, or through a glob such as `h100_tc_*.md`."""
    for name in names:
        if re.search(r"(?<![\w-])" + re.escape(name) + r"(?![\w-]|\.\w)", text):
            return True
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in GLOB.findall(text) for name in names)


def index(sources: list[str], ctx: Context) -> str:
    """Every file under the folder: what it is, its device and date, and who names it."""
    (source,) = sources
    root = ctx.root
    folder = root / source
    if not folder.is_dir():
        raise DocsError(f"{source}: no such folder")
    pages = referrers(root, folder)
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p != folder / "README.md")
    body = []
    for path in files:
        rel = path.relative_to(folder).as_posix()
        names = {rel, path.name, *(p.as_posix() for p in Path(rel).parents if p.name)}
        stems = {_stem(rel), _stem(path.name)} if path.name.endswith(SIBLING_SUFFIXES) else set()
        siblings = {p.relative_to(folder).as_posix() for p in path.parent.iterdir()
                    if p.is_file() and stems and _stem(p.name) in stems}
        by: list[str] = []
        for page in pages:
            kinds = [kind for kind, srcs in page.tables
                     if any(Path(s).as_posix().endswith(tuple("/" + n for n in names | siblings)) for s in srcs)]
            named = _mentions(page.text, {*names, *stems, *siblings, f"{source}/{rel}"})
            if kinds:
                by.append(f"{page.name} ({', '.join(dict.fromkeys(k + ' table' for k in kinds))})")
            elif named:
                by.append(page.name)
        env = _environment(path)
        if not env and path.name.endswith((".json", ".md")):
            env = _environment(csv_env_path(path.with_name(_stem(path.name) + ".csv")))
        link = f"[{rel}]({rel})"
        body.append([link, _what(path, env), env.get("device", ""), env.get("date", "")[:16].replace("T", " "),
                     "; ".join(by) or "nothing"])
    return _table(["file", "what", "device", "date (UTC)", "named by"], body)


KINDS: dict[str, Callable[[list[str], Context], str]] = {
    "headline": headline, "ladder": ladder, "pct": pct, "sizes": sizes, "sweep": sweep, "ncu": ncu,
    "distributed": distributed, "scaling": scaling, "index": index, "copies": copies,
}


# ---- rewriting and checking pages ----------------------------------------------------------------------


def _spec(spec: str) -> tuple[list[str], list[str], dict[str, str]]:
    """'ladder a.json size=4096x4096x4096' -> (['ladder'], ['a.json'], {'size': '4096x4096x4096'})."""
    words = shlex.split(spec)
    options = dict(w.split("=", 1) for w in words[1:] if "=" in w)
    return words[:1], [w for w in words[1:] if "=" not in w], options


def generate(spec: str, root: Path, page: Path) -> str:
    kind, sources, options = _spec(spec)
    if not kind or kind[0] not in KINDS:
        raise DocsError(f"unknown table kind {' '.join(kind)!r}; kinds: {', '.join(KINDS)}")
    if not sources:
        raise DocsError(f"a {kind[0]} table needs at least one source")
    return KINDS[kind[0]](sources, Context(root, page, options))


@dataclass
class Block:
    page: Path
    line: int
    spec: str
    old: str
    new: str

    @property
    def stale(self) -> bool:
        return self.old != self.new


def blocks(page: Path, root: Path) -> tuple[str, list[Block]]:
    """The page with every generated block rewritten, and the blocks."""
    text = page.read_text(encoding="utf-8")
    if text.count("<!-- generated:") != text.count("<!-- end generated -->"):
        raise DocsError(f"{page}: a '<!-- generated: ... -->' marker without its '<!-- end generated -->' "
                        "(or the other way round)")
    found: list[Block] = []

    def render(match: re.Match) -> str:
        line = text.count("\n", 0, match.start()) + 1
        try:
            body = "\n" + generate(match.group("spec"), root, page) + "\n\n"
        except DocsError as exc:
            raise DocsError(f"{page}:{line}: {exc}") from None
        found.append(Block(page, line, match.group("spec"), match.group("body"), body))
        return match.group("head") + body + match.group("tail")

    return BLOCK.sub(render, text), found


def default_pages(root: Path) -> list[Path]:
    return [p for p in [root / "README.md", *sorted((root / "docs").rglob("*.md"))] if p.is_file()]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m implementations.tools.docs", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("pages", nargs="*", type=Path, help="Markdown pages (default: README.md and docs/**/*.md)")
    p.add_argument("--check", action="store_true", help="rewrite nothing; exit 1 naming each block that differs")
    p.add_argument("--root", type=Path, default=Path.cwd(),
                   help="the checkout: sources in the markers are paths from here (default: the current folder)")
    args = p.parse_args(argv)
    root = args.root.resolve()
    pages = [page.resolve() for page in args.pages] or default_pages(root)
    stale = 0
    for page in pages:
        try:
            new_text, found = blocks(page, root)
        except (DocsError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        shown = page.relative_to(root) if page.is_relative_to(root) else page
        for block in found:
            if block.stale:
                stale += 1
                what = "differs from its sources" if args.check else "rewritten from its sources"
                print(f"{shown}:{block.line}: generated table {what}: {block.spec}")
                if args.check:
                    sys.stdout.writelines(difflib.unified_diff(block.old.splitlines(True), block.new.splitlines(True),
                                                               "on the page", "generated", n=0))
        if not args.check and new_text != page.read_text(encoding="utf-8"):
            page.write_text(new_text, encoding="utf-8")
    if args.check and stale:
        print(f"{stale} generated table(s) differ: run `python -m implementations.tools.docs` to rewrite them")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
