"""One search for every tuned rung, in both languages: the rung declares its candidates and how to
launch one; this module times them on the real operands, keeps the fastest, launches it from then on,
and reports the choice. It knows no rung.

A rung's part:

    CUDA_SEARCH = Search(__name__, "cuda", CUDA_CANDIDATES, each(launch_candidate), tile=lambda t: (t.BM, t.BN))

    def autotuned_cuda(a, b, c):
        return CUDA_SEARCH.tuned(a, b, c)

- `prepare(a, b, c, candidates)` binds candidates to the operands once and returns
  `(refresh, {candidate: launch})`: `refresh` is work every call repeats before launching (copying the
  operands into the padded buffers TMA needs; None when there is none), a launch only launches. With an
  epilogue (a rung that fuses one, core/check.py's EPILOGUES), `prepare` is also given `epilogue=` and
  `bias=`, and the epilogue joins the problem's key: it changes the kernel. A grouped product's `offsets=`
  likewise, and its rows per group join the key (read on the host once, when the run is prepared).
  `each(launch)` builds one from a per-candidate `launch(a, b, c, candidate)`.
- `tile(candidate)`: the BM×BN block tile it computes with (the roofline's traffic model).
- `describe(candidate)`, and `family(candidate)` where candidates come in kinds (v11's Triton side races
  `tl.dot` configs against Gluon tiles): the report names the best of every other family too.
- `reads(candidate, layout)`, where some candidates do not take every layout the rung reads in place (v11's
  80-row CUDA tiles do not read tn): a search times those `offered(layout)`.

At the first call for a problem (rung, language, GPU, dtype, layout, M, N, K, strides and 16-byte
alignment, epilogue, groups, per-row scales: what the kernels are specialised on) the choice comes from
the tuning cache (core/tuning_cache.py) when an earlier search, in any process, left one there; otherwise
every candidate is timed with do_bench (CUDA events, the L2 flushed before each call: the benchmark's own
timer; where calls are shorter than GRAPH_BELOW_MS, those that tie within TIE are timed again in a CUDA
graph, where launches no longer hide the kernels' differences; for a benchmark that replays calls in a
CUDA graph, TVC_SEARCH_TIMING=graph, every candidate is timed that way, its choice kept apart) and the
winner is saved there. Later calls launch the winner directly. The harness checks the output of that
first call, which the winner computed, as it checks any run. The report says where the choice came from.

TVC_SEARCH sets the mode: "time" (the default, as above), "retune" (search even when the cache has a
choice, and save it: compare.py --retune), "first" (the test suite's seeded choice: the first candidate,
untimed, the cache neither read nor written; there every candidate is checked on its own, so whichever
one a GPU picks has been checked). Under Triton's interpreter (operands on the CPU) the first candidate
runs untimed too. A choice taken untimed is never saved.
"""

from __future__ import annotations

import datetime
import json
import os
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from . import prebuild, tuning_cache
from .check import rowwise
from .validate import check_groups

SEARCH_WARMUP_MS, SEARCH_REP_MS = 5, 25
# Candidates this fast, and this close, are timed again in a graph (time_candidates). Past about 20 µs a launch is a
# small part of an event-timed call, and a warm graph would misjudge kernels that read their operands from DRAM.
GRAPH_BELOW_MS, TIE = 0.02, 1.1
MODE_VARIABLE = "TVC_SEARCH"
TIMING_VARIABLE = "TVC_SEARCH_TIMING"  # "graph": the benchmark replays calls in a CUDA graph (compare.py --timing)
FLUSH_VARIABLE = "TVC_L2_FLUSH"  # "clean": events timing reads a buffer after do_bench's flush (compare.py --flush)
MODES = ("time", "retune", "first")

Launch = Callable[[], Any]
Prepare = Callable[..., tuple[Callable[[], None] | None, dict]]


@dataclass(frozen=True)
class TunedRun:
    """A launcher's `run` whose kernel a search picks at the first call; `chosen()` says which one.

    The shared layer puts `chosen()` in the result's note, so every tuned rung reports its choice.
    """

    launch: Launch
    chosen: Callable[[], str]
    tile: Callable[[], tuple[int, int]] | None = None  # the chosen BM×BN block tile (for the traffic model)

    def __call__(self):
        return self.launch()


@dataclass
class Choice:
    best: Hashable
    times: dict  # candidate -> ms (empty when nothing was timed)
    seconds: float  # how long the search took (in the process that ran it)
    why_untimed: str = ""
    cached: str = ""  # when the search ran, for a choice taken from the tuning cache
    graph: dict = field(default_factory=dict)  # the tied candidates' times in a CUDA graph, when they decided


def each(launch: Callable[..., Launch]) -> Prepare:
    """A `prepare` from a per-candidate `launch(a, b, c, candidate)` (nothing shared, nothing to refresh)."""
    def prepare(a, b, c, candidates):
        return None, {cand: launch(a, b, c, cand) for cand in candidates}

    return prepare


def with_refresh(refresh, launch: Launch) -> Launch:
    """`launch`, with `refresh()` (a copy into padded operands, say) run before it in the same call."""
    if refresh is None:
        return launch

    def run():
        refresh()
        return launch()

    return run


def mode() -> str:
    value = os.environ.get(MODE_VARIABLE, "time")
    if value not in MODES:
        raise ValueError(f"{MODE_VARIABLE}={value!r}: expected one of {', '.join(MODES)}")
    return value


def untimed_reason(device: torch.device) -> str:
    """Why this search will not time its candidates here ("" when it will)."""
    if device.type != "cuda":
        return "interpreter: first candidate, untimed"
    if mode() == "first":
        return f"{MODE_VARIABLE}=first: first candidate, untimed"
    return ""


def graph_timing() -> bool:
    """Whether the calls the choice is for are replayed in a CUDA graph (compare.py --timing graph sets it): warm
    L2, no launches. Then every candidate is timed that way, and the choice is kept apart from the events one."""
    return os.environ.get(TIMING_VARIABLE) == "graph"


def clean_flush() -> bool:
    """Whether events timing reads a second buffer after do_bench's flush (compare.py --flush clean)."""
    return os.environ.get(FLUSH_VARIABLE) == "clean"


def time_candidates(runs: dict) -> tuple[dict, dict]:
    """(events, graph): every candidate's time in ms with do_bench (its whole call, the L2 flushed before each),
    and, where the fastest is shorter than GRAPH_BELOW_MS, the times replayed in a CUDA graph of the candidates
    within TIE of it ({} otherwise). There a launch, the same for every candidate, is most of each event-timed
    call and its jitter decides between candidates that tie; in a graph they differ by their kernels alone.
    A candidate slower than that with events stays out: what it loses there (reading cold operands from
    DRAM, say) a warm graph would hide. A candidate that cannot be captured leaves the graph empty."""
    from triton.testing import do_bench_cudagraph

    from .bench import events_ms

    if graph_timing():
        return {cand: do_bench_cudagraph(run, rep=SEARCH_REP_MS) for cand, run in runs.items()}, {}
    flush = "clean" if clean_flush() else "zero"
    events = {cand: events_ms(run, warmup=SEARCH_WARMUP_MS, rep=SEARCH_REP_MS, flush=flush)
              for cand, run in runs.items()}
    fastest = min(events.values())
    tied = [cand for cand, ms in events.items() if ms <= TIE * fastest]
    if fastest >= GRAPH_BELOW_MS or len(tied) < 2:
        return events, {}
    try:
        return events, {cand: do_bench_cudagraph(runs[cand], rep=SEARCH_REP_MS) for cand in tied}
    except RuntimeError as exc:
        tuning_cache.warn(f"chosen with events: a candidate could not be captured in a CUDA graph ({exc})"
                          .splitlines()[0])
        return events, {}


def problem_layout(a: torch.Tensor, b: torch.Tensor) -> str:
    """n: row-major (a unit column stride), t: column-major (a transposed view), for A then B."""
    return "".join("n" if t.stride(-1) == 1 else "t" for t in (a, b))


@dataclass(frozen=True, eq=False)
class Search:
    """A tuned rung's search space for one language: its candidates and how to launch them."""

    rung: str  # the rung module's __name__
    lang: str  # "cuda" or "triton"
    candidates: tuple
    prepare: Prepare
    tile: Callable[[Any], tuple[int, int]]
    describe: Callable[[Any], str] = str
    family: Callable[[Any], str] = lambda _: ""
    gpu_only: Callable[[Any], bool] = lambda _: False  # e.g. a Gluon kernel: no interpreter runs it
    reference: tuple[str, Any] | None = None  # (label, candidate) named beside the winner: what an idea is worth
    reads: Callable[[Any, str], bool] = lambda _, layout: True  # whether a candidate takes a layout ("tn"...)
    choices: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        described = [self.describe(cand) for cand in self.candidates]
        if len(set(described)) != len(described):
            raise ValueError(f"{self.rung} {self.lang}: two candidates are described alike; the tuning cache "
                             "knows a candidate by its description")

    def offered(self, layout: str) -> tuple:
        """The candidates that take `layout`: those a search of a problem in it times, unless it is given others."""
        return tuple(cand for cand in self.candidates if self.reads(cand, layout))

    def key(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, epilogue: str = "none",
            groups: tuple[int, ...] = (), scales: torch.Tensor | None = None) -> str:
        """The problem the kernels are specialised on, as canonical JSON: the key of the choices made in
        this process and of the tuning cache."""
        gpu = a.device.type == "cuda"
        problem = {
            "rung": self.rung, "lang": self.lang,
            "gpu": torch.cuda.get_device_name(a.device) if gpu else "cpu",
            "cc": "{}.{}".format(*torch.cuda.get_device_capability(a.device)) if gpu else None,
            "dtype": str(a.dtype).removeprefix("torch."),
            "layout": problem_layout(a, b),
            "M": a.shape[-2], "N": b.shape[-1], "K": a.shape[-1],
            "batch": [list(t.shape[:-2]) for t in (a, b)],  # [[], []]: one product; [[B], []]: B shares one B
            "strides": [t.stride() for t in (a, b, c)],
            "aligned": all(t.data_ptr() % 16 == 0 for t in (a, b, c)),
        }
        if epilogue != "none":  # absent for none: a plain product keeps the key it has without the epilogue field
            problem["epilogue"] = epilogue
        if groups:  # likewise absent for a product that is not grouped
            problem["groups"] = list(groups)
        if scales is not None and rowwise(scales):  # and for fp8's per-tensor scales: per-row ones cost an epilogue
            problem["scales"] = "rowwise"
        if graph_timing():  # and for a choice made for calls one at a time
            problem["timing"] = "graph"
        elif clean_flush():  # and for one made with do_bench's flush
            problem["flush"] = "clean"
        return json.dumps(problem, sort_keys=True)

    def one(self, a, b, c, candidate, **fused) -> Launch:
        """One candidate's whole call (refresh included), without the search: what the tests check.
        `fused`: epilogue= and bias=, for a rung that fuses one; offsets= for a grouped product."""
        refresh, launches = self.prepare(a, b, c, (candidate,), **fused)
        return with_refresh(refresh, launches[candidate])

    def tuned(self, a, b, c, candidates: Sequence | None = None, **fused) -> TunedRun:
        """The run compare.py times: the first call searches (or takes the first candidate), later calls
        launch the choice directly. `fused`: epilogue= and bias=, for a rung that fuses one; offsets= for a
        grouped product."""
        candidates = tuple(candidates or self.offered(problem_layout(a, b)))
        offsets = fused.get("offsets")
        groups = () if offsets is None else tuple(check_groups(a, b, offsets))
        key = self.key(a, b, c, fused.get("epilogue", "none"), groups, fused.get("scales"))
        why_untimed = untimed_reason(a.device)
        if why_untimed:
            candidates = candidates[:1]
        with prebuild.collecting() as compiles:
            refresh, launches = self.prepare(a, b, c, candidates, **fused)
        runs = {cand: with_refresh(refresh, launch) for cand, launch in launches.items()}

        def launch():
            choice = self.choices.get(key)
            if choice is None or choice.best not in runs or (choice.why_untimed and not why_untimed):
                choice = self.choices[key] = self._choose(key, runs, why_untimed, compiles)
            return runs[choice.best]()

        return TunedRun(launch, lambda: self.report(self.choices[key]), lambda: self.tile(self.choices[key].best))

    def _choose(self, key: str, runs: dict, why_untimed: str, compiles=()) -> Choice:
        if why_untimed:
            return Choice(next(iter(runs)), {}, 0.0, why_untimed)
        problem = json.loads(key)
        if mode() != "retune":
            cached = self._cached(problem, runs)
            if cached is not None:
                return cached
        start = time.perf_counter()
        prebuild.build(list(compiles))  # the candidates' compiles side by side, not one per first launch
        times, graph = time_candidates(runs)
        decided = graph or times
        choice = Choice(min(decided, key=decided.get), times, time.perf_counter() - start, graph=graph)
        entry = tuning_cache.Entry(
            problem, self.describe(choice.best), {self.describe(cand): ms for cand, ms in times.items()},
            choice.seconds, datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            tuning_cache.software(), {self.describe(cand): ms for cand, ms in graph.items()})
        try:
            tuning_cache.save(entry)
        except OSError as exc:  # a cache that cannot be written costs the next process a search, not this run
            tuning_cache.warn(f"not saved: {exc}")
        return choice

    def _cached(self, problem: dict, runs: dict) -> Choice | None:
        """The choice the tuning cache keeps for this problem, if it was made among exactly these candidates."""
        known = {self.describe(cand): cand for cand in runs}
        entry = tuning_cache.load(problem, set(known))
        if entry is None:
            return None
        times = {known[described]: ms for described, ms in entry.times_ms.items()}
        graph = {known[described]: ms for described, ms in entry.graph_ms.items()}
        return Choice(known[entry.best], times, entry.seconds, cached=entry.searched, graph=graph)

    def report(self, choice: Choice) -> str:
        """The winner and its time; beside it the runner-up, the fastest of every other family, the reference."""
        if choice.why_untimed:
            return f"{self.describe(choice.best)} ({choice.why_untimed})"
        times, graph = choice.times, choice.graph
        ranked = sorted(graph, key=graph.get) + sorted(set(times) - set(graph), key=times.get)
        named = {}
        if len(ranked) > 1:
            named[ranked[1]] = "runner-up"
        families = {self.family(choice.best)}
        for cand in ranked:
            if self.family(cand) not in families:
                families.add(self.family(cand))
                named.setdefault(cand, "fastest")
        if self.reference is not None and self.reference[1] in times and self.reference[1] != choice.best:
            named.setdefault(self.reference[1], self.reference[0])
        def timed(cand):
            return f"{times[cand]:.3f} ms" + (f" ({graph[cand]:.3f} in a graph)" if cand in graph else "")

        beside = "; ".join(f"{label} {self.describe(cand)} {timed(cand)}" for cand, label in named.items())
        searched = (f"from the tuning cache: searched {choice.cached[:10]} in {choice.seconds:.1f} s"
                    if choice.cached else f"{choice.seconds:.1f} s")
        tied = (f", {len(graph)} within {TIE:g}x decided in a CUDA graph" if graph
                else ", timed in CUDA graphs" if graph_timing() else "")
        return (f"{self.describe(choice.best)}, {timed(choice.best)}"
                + (f"; {beside}" if beside else "") + f" ({len(times)} candidates{tied}, {searched})")
