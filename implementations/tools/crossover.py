"""When a GPU pays for a small matrix product: fp32 n³ for small n, each call timed as a user sees it.

    python -m implementations.tools.crossover --out DIR [--sizes 16,32,64,128,256,512,1024] [--calls 200]
    python -m implementations.tools.crossover --out DIR --from DIR/crossover.json   (redraw, measure nothing)

Series, inputs already on the device that computes:
- torch.matmul on the CPU (with torch's CPU threads, recorded);
- cuBLAS: torch.matmul on the GPU;
- the best fp32 rung of each language: the highest-numbered rung that supports fp32, is not broken on
  purpose and runs on this GPU (found through the registry), launched through its prepared run, so
  that binding stays outside the timed call;
- batched: torch.bmm of B products of n³ in one call, on the CPU and on the GPU. B = max(1, 2^24 // n³):
  a batch holds the multiply-adds of one 256³ product, so below 256 one launch is spread over a mid-size
  product's work, and from 256 on B = 1; and the best rung of a language whose kernel takes a batch
  in one launch (Variant.batched), batched the same way.

Each call is timed with the wall clock from before the call to after torch.cuda.synchronize() (on the
CPU, to its return): launch, queueing and the wait included, as a program that needs the result sees it.
The figure is the median of --calls calls after --warmup calls, with its 20-80 percentile spread. Every
series' output is checked once against the float64 product (check.py's bounds; a batch by its first
product) before it is timed, so a wrong or refused rung is reported with the reason instead of a time.

Written to DIR: crossover.json (the environment and every measurement), crossover.md (the table, and
from which n the GPU's single call beats the CPU's) and crossover.png (time per product against n,
log-log, one line per series; a batched call's time is divided by its B; styles that stay apart printed
in grey). Without a CUDA device only the CPU series run, and the tool says so.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from matplotlib.figure import Figure
from tabulate import tabulate

from ..core.check import PRECISIONS, check, poison
from ..core.env import environment, set_cublas_math
from ..core.registry import Variant, all_variants
from ..core.search import TunedRun
from ..core.tasks import Task, non_negative, positive, skip_reason

SIZES = (16, 32, 64, 128, 256, 512, 1024)
BATCH_WORK = 2**24  # multiply-adds in one batched call: one 256³ product
FP32 = PRECISIONS["fp32"]
DPI = 130
# (colour, line, marker, filled): told apart by line and marker when printed in grey
STYLES = {"cpu": ("black", "-", "o", True), "cpu_bmm": ("black", "--", "o", False),
          "cublas": ("dimgray", "-", "s", True), "cublas_bmm": ("dimgray", "--", "s", False),
          "cuda": ("grey", "-.", "^", True), "triton": ("darkgrey", ":", "v", True),
          "cuda_bmm": ("grey", "-.", "^", False), "triton_bmm": ("darkgrey", ":", "v", False)}


def batch_of(n: int) -> int:
    return max(1, BATCH_WORK // n**3)


class Wrong(Exception):
    """A series' output outside check.py's bounds."""


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


@dataclass
class Row:
    series: str
    n: int
    batch: int
    us: float | None = None  # median time of one call
    us_p20: float | None = None
    us_p80: float | None = None
    calls: int = 0
    note: str = ""

    @property
    def us_per_product(self) -> float | None:
        return None if self.us is None else self.us / self.batch


@dataclass(frozen=True)
class Series:
    key: str  # a key of STYLES
    label: str
    device: torch.device
    batched: bool = False
    variant: Variant | None = None  # a rung's series: its launch instead of torch's
    lang: str = ""  # the rung's language


def best_rung(lang: str, device: torch.device) -> Variant | None:
    """The highest-numbered rung with a `lang` kernel that computes fp32 correctly on this device."""
    for v in reversed(all_variants()):
        if not v.expect_wrong and not skip_reason(Task(v, {}, lang, (1, 1, 1)), "fp32", device):
            return v
    return None


def series_for(gpu: torch.device | None) -> list[Series]:
    cpu = torch.device("cpu")
    found = [Series("cpu", "CPU torch.matmul", cpu), Series("cpu_bmm", "CPU torch.bmm, batch B", cpu, batched=True)]
    if gpu is None:
        return found
    found += [Series("cublas", "cuBLAS torch.matmul", gpu), Series("cublas_bmm", "cuBLAS torch.bmm, batch B", gpu,
                                                                      batched=True)]
    for lang, name in (("cuda", "CUDA C"), ("triton", "Triton")):
        v = best_rung(lang, gpu)
        if v is not None:
            found.append(Series(lang, f"best {name} rung ({v.tag} {v.name})", gpu, variant=v, lang=lang))
            if lang in v.batched:
                found.append(Series(f"{lang}_bmm", f"best {name} rung ({v.tag}), batch B in one launch", gpu,
                                    batched=True, variant=v, lang=lang))
    return found


def bind(s: Series, n: int, seed: int) -> tuple[Callable[[], object], str]:
    """One call of the series at n³ with its operands in place, checked once; and a note (the tuned choice)."""
    shape = (batch_of(n), n, n) if s.batched else (n, n)
    gen = torch.Generator().manual_seed(seed)
    a, b = (torch.randn(shape, generator=gen).to(s.device) for _ in range(2))
    if s.variant is not None:
        prepared = s.variant.prepare(s.lang, a, b, **s.variant.configs[0])
        run, c = prepared.run, prepared.out
    else:
        c = torch.empty(shape, device=s.device)
        matmul = torch.bmm if s.batched else torch.matmul

        def run():
            matmul(a, b, out=c)

    poison(c)
    run()  # a tuned rung searches its candidates here, at its first call
    if s.device.type == "cuda":
        torch.cuda.synchronize(s.device)
    outcome = check(*((c[0], a[0], b[0]) if s.batched else (c, a, b)), FP32)
    if not outcome.ok:
        raise Wrong(outcome.why())
    return run, f"autotuned: {run.chosen()}" if isinstance(run, TunedRun) else ""


def time_us(run: Callable[[], object], device: torch.device, calls: int, warmup: int) -> list[float]:
    """Wall-clock µs of each of `calls` calls, each to its end on the device, after `warmup` calls."""
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    for _ in range(warmup):
        run()
    sync()
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        run()
        sync()
        samples.append(1e6 * (time.perf_counter() - start))
    return samples


def measure(s: Series, n: int, calls: int, warmup: int, seed: int) -> Row:
    row = Row(s.key, n, batch_of(n) if s.batched else 1)
    try:
        run, row.note = bind(s, n, seed)
        samples = time_us(run, s.device, calls, warmup)
    except Wrong as exc:
        row.note = f"WRONG: {exc}"
        return row
    except Exception as exc:  # a refused launch, a compile error, CuPy missing: the reason, in one line
        row.note = (f"{type(exc).__name__}: {exc}".strip().splitlines() or [""])[0]
        return row
    row.us = float(np.median(samples))
    row.us_p20, row.us_p80 = (float(q) for q in np.percentile(samples, [20, 80]))
    row.calls = len(samples)
    return row


def crossover_n(rows: list[Row], fast: str, slow: str) -> int | None:
    """The smallest n from which `fast` takes less time per product than `slow` at every n measured."""
    times = {(r.series, r.n): r.us_per_product for r in rows}
    sizes = sorted({r.n for r in rows})
    found = None
    for n in reversed(sizes):
        f, s = times.get((fast, n)), times.get((slow, n))
        if f is None or s is None or f >= s:
            break
        found = n
    return found


def _us(value: float | None) -> str:
    return "" if value is None else f"{value:,.1f}"


def table(series: list[Series], rows: list[Row], fmt: str = "github") -> str:
    """One row per n: each series' median µs per call; a batched series also per product."""
    by = {(r.series, r.n): r for r in rows}
    header = ["n", "B"]
    for s in series:
        header += [f"{s.label} µs/call", f"{s.label} µs/product"] if s.batched else [f"{s.label} µs"]
    body = []
    for n in sorted({r.n for r in rows}):
        line = [str(n), str(batch_of(n))]
        for s in series:
            r = by.get((s.key, n))
            line += [_us(r and r.us), _us(r and r.us_per_product)] if s.batched else [_us(r and r.us)]
        body.append(line)
    return tabulate(body, header, tablefmt=fmt, disable_numparse=True)


def markdown(env: dict, series: list[Series], rows: list[Row]) -> str:
    parts = ["# fp32 n³, one call as a user sees it: the CPU against the GPU", "",
             f"{env['device']}, {env['date'][:10]}; torch {env['torch']}; {env['CPU']}, {env['torch CPU threads']} "
             "CPU threads. "
             f"{env['timing']}. {env['batch']}.", "", table(series, rows), ""]
    labels = {s.key: s.label for s in series}
    for fast, slow in (("cublas", "cpu"), ("cublas_bmm", "cpu_bmm")):
        if fast in labels:
            n = crossover_n(rows, fast, slow)
            parts.append(f"- {labels[fast]} takes less time per product than {labels[slow]} "
                         + (f"from n = {n} on." if n else "at no n measured up to the largest."))
    parts += [f"- {labels[r.series]} at n = {r.n}: {r.note}" for r in rows if r.note]
    return "\n".join(parts) + "\n"


def plot(env: dict, series: list[Series], rows: list[Row], path: Path) -> Path:
    fig = Figure(figsize=(8.0, 5.2))
    ax = fig.subplots()
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    for s in series:
        points = sorted((r.n, r.us_per_product) for r in rows if r.series == s.key and r.us is not None)
        if points:
            color, line, marker, filled = STYLES[s.key]
            ax.plot(*zip(*points), color=color, linestyle=line, marker=marker,
                    markerfacecolor=color if filled else "white", label=s.label + (" (per product)" * s.batched))
    sizes = sorted({r.n for r in rows})
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.set_xlabel("n (fp32 n×n times n×n)")
    ax.set_ylabel("µs per product, wall clock to the result (log)")
    ax.set_title(f"One matrix product as a user sees it: the CPU against the GPU\n{env['device']}, "
                 f"{env['date'][:10]}; batch B = max(1, 2^24 / n³)", fontsize=10)
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    return path


def load(path: Path) -> tuple[dict, list[Series], list[Row]]:
    """A saved crossover.json: its environment, series and rows."""
    doc = json.loads(Path(path).read_text())
    if not isinstance(doc, dict) or not {"environment", "series", "rows"} <= set(doc):
        raise ValueError(f"{path}: not a crossover document (python -m implementations.tools.crossover --out DIR)")
    series = [Series(s["key"], s["label"], torch.device("cpu"), s["batched"]) for s in doc["series"]]
    rows = [Row(**{k: v for k, v in r.items() if k != "us_per_product"}) for r in doc["rows"]]
    return doc["environment"], series, rows


def lesson(env: dict, series: list[Series], rows: list[Row]) -> str:
    """The lesson page's paragraph on a measured crossover: where the CPU wins, why, and what batching does."""
    us = {(r.series, r.n): r.us_per_product for r in rows if r.us is not None}
    sizes = sorted({r.n for r in rows})
    cross = crossover_n(rows, "cublas", "cpu")
    below = [n for n in sizes if cross is None or n < cross]
    gpu = [us[("cublas", n)] for n in below if ("cublas", n) in us]
    if not gpu or ("cpu", sizes[0]) not in us:
        return "The crossover run has no GPU series: run it on a GPU to see where the GPU starts to pay."
    text = (f"On {env['device']}, one fp32 product through cuBLAS, timed as a program that waits for its result "
            f"sees it, costs {min(gpu):.0f}-{max(gpu):.0f} µs at every n below {cross or 'the largest measured'}: "
            "the launch, its trip through the driver's queue and the synchronisation, hardly any of it "
            f"arithmetic. The CPU computes a {sizes[0]}³ product in {us[('cpu', sizes[0])]:.1f} µs with no trip "
            "to make, so for small products it answers first.")
    if cross is not None:
        last = sizes[-1]
        text += (f" From n = {cross} on, the GPU's arithmetic outruns that fixed cost: {us[('cublas', cross)]:.0f} "
                 f"against {us[('cpu', cross)]:.0f} µs at {cross}³, {us[('cpu', last)] / us[('cublas', last)]:.0f}× "
                 f"faster at {last}³.")
    if ("cublas_bmm", sizes[0]) in us:
        batch = batch_of(sizes[0])
        text += (f" Batching moves the line: {batch} products of {sizes[0]}³ in one torch.bmm call cost the GPU "
                 f"{us[('cublas_bmm', sizes[0])] * batch:.0f} µs, {us[('cublas_bmm', sizes[0])]:.3f} µs a product: "
                 "one launch and one wait shared by all of them. Keep a lone small product on the CPU, or hand the "
                 "GPU many at once.")
    return text


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give positive integers n, comma-separated")
    return sizes


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m implementations.tools.crossover", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True, help="folder for crossover.json, .md and .png")
    p.add_argument("--sizes", type=parse_sizes, default=list(SIZES), metavar="N,N,...",
                   help=f"the n of each n³ product (default {','.join(map(str, SIZES))})")
    p.add_argument("--calls", type=positive(int), default=200, help="timed calls per series and size (default 200)")
    p.add_argument("--warmup", type=non_negative(int), default=20, help="untimed calls first (default 20)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    p.add_argument("--from", dest="saved", type=Path, metavar="JSON",
                   help="measure nothing: redraw crossover.md and crossover.png in --out from a saved crossover.json")
    args = p.parse_args(argv)
    if args.saved:
        env, series, rows = load(args.saved)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "crossover.md").write_text(markdown(env, series, rows))
        print(f"written: {plot(env, series, rows, args.out / 'crossover.png')}, {args.out / 'crossover.md'}")
        return 0
    gpu = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else None
    if gpu is None:
        print("No CUDA device: only the CPU series (torch.matmul and torch.bmm on the host) are timed.")
    else:
        set_cublas_math(tf32=False)  # IEEE fp32, as the fp32 rungs compute
    env = environment(gpu)
    if gpu is None:
        env["device"] = "no CUDA device: CPU series only"
    env.update({"CPU": cpu_name(), "torch CPU threads": str(torch.get_num_threads()),
                "timing": f"wall clock of one call to its result (synchronised on the GPU), median of {args.calls} "
                          f"calls after {args.warmup}",
                "batch": f"batched series: B = max(1, {BATCH_WORK} // n³) products per torch.bmm call"})
    series = series_for(gpu)
    rows = []
    for n in args.sizes:
        for s in series:
            rows.append(measure(s, n, args.calls, args.warmup, args.seed + n))
            r = rows[-1]
            print(f"{s.label} n={n}: " + (f"{r.us:,.1f} µs" if r.us is not None else r.note), file=sys.stderr)
    args.out.mkdir(parents=True, exist_ok=True)
    doc = {"environment": env, "series": [{"key": s.key, "label": s.label, "batched": s.batched} for s in series],
           "rows": [asdict(r) | {"us_per_product": r.us_per_product} for r in rows]}
    written = [args.out / "crossover.json", args.out / "crossover.md"]
    written[0].write_text(json.dumps(doc, indent=1))
    written[1].write_text(markdown(env, series, rows))
    written.append(plot(env, series, rows, args.out / "crossover.png"))
    print(table(series, rows, "simple"))
    print("written: " + ", ".join(map(str, written)))
    return 1 if any(r.note.startswith("WRONG") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
