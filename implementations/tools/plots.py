"""Plots of saved results (the JSON document compare.py writes): PNG files, drawn with matplotlib.

- the ladder: % of cuBLAS per rung, the CUDA C bar beside the Triton bar, one figure per size and dtype;
- a roofline: each rung's arithmetic intensity (flops over the global traffic its block tile implies,
  traffic.py) against the TFLOP/s it reached, under the two ceilings measured in the same run: the
  device copy bandwidth (the slanted memory roof) and cuBLAS at that size and precision (the flat roof);
- TFLOP/s against size, one line per rung and language with cuBLAS dashed, when a run has several sizes;
- a config sweep (`compare.py --sweep TILE=8,16,32,64`): time against the swept value per language,
  with the values a rung refused marked and named;
- % of cuBLAS per shape across the timing modes (pct_of_cublas: the lesson page's small-shapes section);
- a distributed run's scaling efficiency against size, and where each strategy's step goes: the compute
  alone, the gather alone and the whole step, per kernel (compare.py --distributed --plots).

    python -m implementations.tools.plots results.json [more.json | rows.csv ...] --out plots/ [--sweep TILE]

Figures are drawn on `matplotlib.figure.Figure` objects, not through pyplot, so no display or global
state is involved and the same code runs on a CPU-only machine over results saved on a GPU one.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from matplotlib.figure import Figure

from ..core.bench import Result, size_label
from ..core.distributed import strategy_label
from ..core.report import by_shape, config_values, results_of
from ..core.report import load_document as load

IMPL_STYLE = {"cuda": ("CUDA C", "o", "#1f77b4"), "triton": ("Triton", "s", "#ff7f0e")}
CUBLAS_COLOR = "black"
DPI = 130


def _label(r: Result) -> str:
    return f"{r.rung} {r.config}".strip()


def _shape(doc: dict, size: str, dtype: str) -> list[Result]:
    return by_shape(results_of(doc)).get((size, dtype), [])


def _device(doc: dict) -> str:
    env = doc.get("environment", {})
    return f"{env.get('device', 'unknown device')}, {env.get('date', '')[:10]}"


def copy_bandwidth_gbs(doc: dict) -> float | None:
    text = doc.get("environment", {}).get("copy bandwidth", "")
    try:
        return float(text.split()[0])
    except (IndexError, ValueError):
        return None


def _save(fig: Figure, path: Path) -> Path:
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    return path


def ladder(doc: dict, size: str, dtype: str, out: Path) -> Path | None:
    """Grouped bars: % of cuBLAS per rung and config, CUDA C beside Triton."""
    rows: dict[str, dict[str, Result]] = {}
    for r in _shape(doc, size, dtype):
        if r.impl in IMPL_STYLE:
            rows.setdefault(_label(r), {})[r.impl] = r
    if not any(r.pct_cublas for by_impl in rows.values() for r in by_impl.values()):
        return None
    labels = list(rows)
    # the config goes under the rung only where it tells bars apart (v03 TILE=16 and TILE=32)
    configs_of = Counter(label.split()[0] for label in labels)
    ticks = [label.replace(" ", "\n", 1) if configs_of[label.split()[0]] > 1 else label.split()[0] for label in labels]
    fig = Figure(figsize=(max(7.0, 0.62 * len(labels) + 2), 4.8))
    ax = fig.subplots()
    width = 0.4
    for offset, (impl, (name, _, color)) in zip((-width / 2, width / 2), IMPL_STYLE.items()):
        for x, label in enumerate(labels):
            r = rows[label].get(impl)
            if r is None:
                continue
            pct = r.pct_cublas
            if pct:
                ax.bar(x + offset, pct, width, color=color, label=name)
                # near cuBLAS a whole number would round 99.6 up to the line: one decimal there
                ax.annotate(f"{pct:.0f}" if round(pct, 1) < 95 else f"{pct:.1f}", (x + offset, pct), ha="center",
                            va="bottom", fontsize=7)
            else:  # not timed: say why in place of the bar
                ax.annotate(r.status, (x + offset, 1), ha="center", va="bottom", rotation=90, fontsize=7,
                            color=color)
    ax.axhline(100, color=CUBLAS_COLOR, linestyle="--", linewidth=1, label="cuBLAS (same run)")
    ax.set_xticks(range(len(labels)), ticks, fontsize=7)
    ax.set_ylabel("% of cuBLAS (higher is better)")
    ax.set_title(f"The ladder at {size} {dtype}: CUDA C beside Triton\n{_device(doc)}", fontsize=10)
    handles, names = ax.get_legend_handles_labels()
    unique = dict(zip(names, handles))
    ax.legend(unique.values(), unique.keys(), fontsize=8, loc="upper left")
    return _save(fig, out / f"ladder_{size}_{dtype}.png")


def roofline(doc: dict, size: str, dtype: str, out: Path) -> Path | None:
    """Each timed rung at (flop per byte of implied global traffic, TFLOP/s), under the measured ceilings."""
    group = _shape(doc, size, dtype)
    points = [r for r in group if r.impl in IMPL_STYLE and r.tflops and r.traffic_bytes]
    cublas = next((r for r in group if r.impl == "cublas" and r.tflops), None)
    bandwidth = copy_bandwidth_gbs(doc)
    if not points or cublas is None or bandwidth is None:
        return None
    fig = Figure(figsize=(8.0, 5.6))
    ax = fig.subplots()
    ax.set_xscale("log")
    ax.set_yscale("log")
    intensities = [r.flops / r.traffic_bytes for r in points]
    lo, hi = min(intensities) / 2, max(intensities) * 2
    peak = cublas.tflops
    ridge = peak * 1e3 / bandwidth  # flop/byte where the two roofs meet
    xs = sorted({lo, hi, min(max(ridge, lo), hi)})
    ax.plot(xs, [min(peak, bandwidth * x / 1e3) for x in xs], color=CUBLAS_COLOR, linewidth=1.5)
    ax.annotate(f"copy bandwidth {bandwidth:,.0f} GB/s", (lo, bandwidth * lo / 1e3), rotation=0, fontsize=8,
                va="bottom")
    ax.annotate(f"cuBLAS {peak:,.1f} TFLOP/s", (hi, peak), ha="right", va="bottom", fontsize=8)
    for r, x in zip(points, intensities):
        _, marker, color = IMPL_STYLE[r.impl]
        ax.scatter(x, r.tflops, marker=marker, color=color, s=36, zorder=3)
        tile = config_values(r.config).get("TILE")
        ax.annotate(r.rung + (f" T{tile}" if tile else ""), (x, r.tflops), textcoords="offset points",
                    xytext=(4, 3), fontsize=6)
    for name, marker, color in IMPL_STYLE.values():
        ax.scatter([], [], marker=marker, color=color, label=name)
    ax.set_xlabel("arithmetic intensity: flops / bytes the block tile must move (log); above the slanted "
                  "roof, caches served repeats", fontsize=8)
    ax.set_ylabel("TFLOP/s achieved (log)")
    ax.set_title(f"Roofline at {size} {dtype}, ceilings measured in the same run\n{_device(doc)}", fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    return _save(fig, out / f"roofline_{size}_{dtype}.png")


def _work(r: Result) -> float:
    return float(r.M) * r.N * r.K


def tflops_vs_size(doc: dict, dtype: str, out: Path) -> Path | None:
    """TFLOP/s against size, a line per rung, config, language and problem (layout, epilogue), cuBLAS dashed;
    needs two sizes or more. Other baselines (the unfused sequence, the CPU) are left out."""
    timed = [r for r in results_of(doc)
             if r.dtype == dtype and r.tflops and (r.impl in IMPL_STYLE or r.impl == "cublas")]
    if len({_work(r) for r in timed}) < 2:
        return None
    lines: dict[tuple[str, str, str], list[Result]] = {}
    for r in timed:
        lines.setdefault((_label(r), r.impl, _problem(r)), []).append(r)
    fig = Figure(figsize=(9.0, 5.0))
    ax = fig.subplots()
    ax.set_xscale("log", base=2)
    rung_colors = {key: f"C{i % 10}" for i, key in enumerate(dict.fromkeys((label, problem)
                                                                           for label, _, problem in lines))}
    for (label, impl, problem), rs in lines.items():
        rs.sort(key=_work)
        xs, ys = [_work(r) ** (1 / 3) for r in rs], [r.tflops for r in rs]
        if impl == "cublas":
            ax.plot(xs, ys, "--", color=CUBLAS_COLOR, linewidth=2, label=f"cuBLAS {problem}".strip())
        else:  # colour: the rung (and problem); marker and line: the language
            name, marker, _ = IMPL_STYLE[impl]
            ax.plot(xs, ys, marker=marker, linestyle="-" if impl == "cuda" else ":",
                    color=rung_colors[(label, problem)], label=f"{label} {name} {problem}".strip())
    sizes = sorted({(_work(r) ** (1 / 3), size_label((r.M, r.N, r.K), batch=r.batch)) for r in timed})
    ax.set_xticks([x for x, _ in sizes], [s for _, s in sizes], rotation=30, fontsize=7)
    ax.set_xlabel("size M×N×K (placed at its cube root)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(f"TFLOP/s against size, {dtype} (solid: CUDA C, dotted: Triton)\n{_device(doc)}", fontsize=10)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return _save(fig, out / f"tflops_vs_size_{dtype}.png")


def pct_of_cublas(docs: list[dict], out: Path) -> Path | None:
    """% of cuBLAS per shape across runs of one rung set in different timing modes (scripts/small_shapes.sh:
    graph and events): a row of bars per shape, CUDA C and Triton in each mode, lines at 100 and 95%."""
    rows = [r for doc in docs for r in results_of(doc) if r.impl in IMPL_STYLE and r.pct_cublas]
    if not rows:
        return None
    shapes = list(dict.fromkeys(r.size for r in rows))
    bars = list(dict.fromkeys((r.impl, r.timing) for r in rows))
    fig = Figure(figsize=(8.0, 0.2 * len(shapes) * len(bars) + 1.8))
    ax = fig.subplots()
    height = 0.8 / len(bars)
    for i, (impl, timing) in enumerate(bars):
        name, _, color = IMPL_STYLE[impl]
        values = {r.size: r.pct_cublas for r in rows if (r.impl, r.timing) == (impl, timing)}
        ys = [j + i * height for j, shape in enumerate(shapes) if shape in values]
        ax.barh(ys, [values[shape] for shape in shapes if shape in values], height=height, color=color,
                alpha=1.0 if timing == "graph" else 0.45, label=f"{name}, {timing}")
    ax.set_yticks([j + 0.4 - height / 2 for j in range(len(shapes))], shapes, fontsize=8)
    ax.invert_yaxis()
    ax.axvline(100, color=CUBLAS_COLOR, linewidth=1)
    ax.axvline(95, color=CUBLAS_COLOR, linewidth=1, linestyle=":")
    ax.set_xlabel("% of cuBLAS in the same run (dotted: 95%)")
    rungs = ", ".join(sorted({f"{r.rung} {r.dtype}" for r in rows}))
    ax.set_title(f"{rungs} against cuBLAS: graph (kernel time) and events (launch included)\n{_device(docs[0])}",
                 fontsize=10)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.09), ncol=len(bars))
    return _save(fig, out)


def _problem(r: Result) -> str:
    """What besides the size a result's problem is: its layout other than nn and its epilogue, if any."""
    return " ".join(x for x in (r.layout if r.layout != "nn" else "", r.epilogue if r.epilogue != "none" else "") if x)


def sweep_plot(doc: dict, name: str, dtype: str, out: Path) -> Path | None:
    """Time against the swept config value, a line per rung, size and language; refusals marked."""
    rows = [(r, config_values(r.config).get(name)) for r in results_of(doc) if r.dtype == dtype]
    rows = [(r, int(v)) for r, v in rows if v is not None and r.impl in IMPL_STYLE]
    if not any(r.ms for r, _ in rows):
        return None
    fig = Figure(figsize=(7.5, 4.8))
    ax = fig.subplots()
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    lines: dict[tuple[str, str, str], list[tuple[int, Result]]] = {}
    for r, value in rows:
        lines.setdefault((r.rung, r.size, r.impl), []).append((value, r))
    refused = []
    for (rung, size, impl), points in lines.items():
        points.sort(key=lambda p: p[0])
        label, marker, color = IMPL_STYLE[impl]
        timed = [(v, r.ms) for v, r in points if r.ms]
        if timed:
            ax.plot(*zip(*timed), marker=marker, label=f"{rung} {label} {size}")
        refused += [(v, f"{rung} {label}: {r.status}") for v, r in points if not r.ms]
    values = sorted({v for _, v in rows})
    ax.set_xticks(values, [str(v) for v in values])
    ax.set_xlabel(name)
    ax.set_ylabel("ms (lower is better)")
    notes = sorted(set(f"{name}={v}: {what}" for v, what in refused))
    ax.set_title(f"--sweep {name}, {dtype}\n{_device(doc)}", fontsize=10)
    if notes:
        ax.text(0.01, 0.01, "\n".join(notes), transform=ax.transAxes, fontsize=7, va="bottom")
    ax.legend(fontsize=7)
    return _save(fig, out / f"sweep_{name}_{dtype}.png")


STRATEGY_LINES = {"rows": "-", "overlap": "--", "push": ":"}


def efficiency(doc: dict, out_dir) -> Path | None:
    """A distributed run (compare.py --distributed): scaling efficiency T1 / (W·T_W) against size, a line per
    kernel and strategy: solid for the row partition, dashed for the overlapped all-gather, dotted for the
    copy-engine push."""
    records = [r for r in doc["results"] if r.get("efficiency")]
    if not records:
        return None
    lines: dict[tuple, list[dict]] = {}
    for r in records:
        lines.setdefault((r["rung"], r["config"], r["impl"], r["strategy"], r["world"]), []).append(r)
    fig = Figure(figsize=(9.0, 5.0))
    ax = fig.subplots()
    ax.set_xscale("log", base=2)
    for (rung, config, impl, strategy, world), rs in lines.items():
        rs.sort(key=lambda r: float(r["M"]) * r["N"] * r["K"])
        xs = [(float(r["M"]) * r["N"] * r["K"]) ** (1 / 3) for r in rs]
        name, marker, color = IMPL_STYLE.get(impl, ("cuBLAS", "^", CUBLAS_COLOR))
        ax.plot(xs, [100 * r["efficiency"] for r in rs], marker=marker, color=color,
                linestyle=STRATEGY_LINES.get(strategy, "-"),
                label=" ".join(filter(None, ("" if impl == "cublas" else rung, config, name)))
                + f", {strategy}, {world} GPU(s)")
    sizes = sorted({((float(r["M"]) * r["N"] * r["K"]) ** (1 / 3), r["size"]) for r in records})
    ax.set_xticks([x for x, _ in sizes], [s for _, s in sizes], rotation=30, fontsize=7)
    ax.axhline(100, color="grey", linewidth=0.8)
    ax.set_xlabel("size M×N×K (placed at its cube root)")
    ax.set_ylabel("scaling efficiency T1 / (W·T_W), %")
    ax.set_title(f"Scaling efficiency against one GPU (solid: rows, dashed: overlap, dotted: push)\n{_device(doc)}",
                 fontsize=10)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return _save(fig, out / f"distributed_efficiency_{_dist_name(doc)}.png")


def _dist_name(doc: dict) -> str:
    """bf16_2gpu: the dtypes and the largest rank count of a distributed run, for its plots' names."""
    results = doc["results"]
    dtypes = "_".join(sorted({r["dtype"] for r in results}))
    return f"{dtypes}_{max(r['world'] for r in results)}gpu"


def distributed_time(doc: dict, out_dir) -> Path | None:
    """Where a distributed step's time goes: per size, a row per kernel and strategy with the compute alone
    and the gather alone as bars and the whole step (slowest rank) as a mark. A step near the compute bar
    hid its gather; one near compute + gather hid nothing."""
    records = [r for r in doc["results"] if r.get("compute_ms") is not None and r["strategy"] != "single"]
    if not records:
        return None
    sizes = list(dict.fromkeys(r["size"] for r in records))
    fig = Figure(figsize=(9.0, 1.2 + 0.32 * len(records) + 0.5 * len(sizes)), layout="constrained")
    axes = fig.subplots(len(sizes), 1, squeeze=False)[:, 0]
    for ax, size in zip(axes, sizes):
        rows = [r for r in records if r["size"] == size][::-1]
        ys = range(len(rows))
        compute = [r["compute_ms"] for r in rows]
        comm = [r["comm_ms"] or 0.0 for r in rows]
        ax.barh(ys, compute, color="#9ecae1", label="compute alone")
        ax.barh(ys, comm, left=compute, color="#fdae6b", label="gather alone (after the compute)")
        ax.scatter([r["ms"] for r in rows], ys, color="black", marker="|", s=200, zorder=3,
                   label="whole step (slowest rank)")
        names = [("torch.matmul" if r["impl"] == "cublas" else f"{r['rung']} {IMPL_STYLE[r['impl']][0]}")
                 + f", {strategy_label(r['strategy'], r['chunks'])}" for r in rows]
        ax.set_yticks(list(ys), names, fontsize=7)
        ax.set_title(f"{size} {rows[0]['dtype']} on {rows[0]['world']} GPUs", fontsize=9)
        ax.set_xlabel("ms", fontsize=8)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=3, fontsize=7)
    fig.suptitle(f"Where a distributed step's time goes\n{_device(doc)}", fontsize=10)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return _save(fig, out / f"distributed_time_{_dist_name(doc)}.png")


def write_all(doc: dict, out_dir, sweep: str | None = None) -> list[Path]:
    """Every plot these results can give, written into out_dir; returns the files written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if doc["results"] and "strategy" in doc["results"][0]:  # a distributed run
        return [p for p in (efficiency(doc, out), distributed_time(doc, out)) if p is not None]
    written = []
    results = results_of(doc)
    for size, dtype in by_shape(results):
        written += [ladder(doc, size, dtype, out), roofline(doc, size, dtype, out)]
    for dtype in sorted({r.dtype for r in results}):
        written.append(tflops_vs_size(doc, dtype, out))
        if sweep:
            written.append(sweep_plot(doc, sweep, dtype, out))
    return [p for p in written if p is not None]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m implementations.tools.plots", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", nargs="+", type=Path,
                   help="documents written by compare.py --json, or rows by --csv (its .env.json beside them)")
    p.add_argument("--out", type=Path, required=True, help="folder for the PNG files")
    p.add_argument("--sweep", metavar="NAME", help="also plot the sweep over this config parameter")
    args = p.parse_args(argv)
    for path in args.results:
        try:
            written = write_all(load(path), args.out, args.sweep)
        except (OSError, ValueError) as exc:
            print(f"{path}: {exc}", file=sys.stderr)
            return 1
        print(f"{path}: " + (", ".join(map(str, written)) or "nothing timed to plot"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
