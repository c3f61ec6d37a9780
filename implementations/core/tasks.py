"""What a comparison run is made of: its tasks (a rung, config and language at one size, or a
baseline), their order, why one is skipped, and the parsers of the options that choose them.

Shared by compare.py (cli.py) and the child program that the profiling tools run (profile.py).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from . import bench
from .shapes import LIST
from .check import PRECISIONS, parse_epilogue, parse_groups, parse_layout
from .registry import Variant, config_label, select

IMPLS = ("cuda", "triton", "cublas", "cpu", "unfused", "grouped_mm", "loop_graph")
DEFAULT_TASK_TIMEOUT_S = 300.0  # per implementation and size: far above any correct rung's check and timing
DEFAULT_CPU_LIMIT_S = 2.0  # the CPU baseline runs at the sizes where one call is estimated to take this long at most


def parse_sizes(text: str) -> list[tuple[int, int, int]]:
    """"4096" is 4096³; "512x1024x256" is M=512, N=1024, K=256; comma-separated lists of either."""
    sizes = []
    for token in (t.strip().lower() for t in text.split(",") if t.strip()):
        parts = token.split("x")
        if len(parts) not in (1, 3) or not all(p.isdigit() and int(p) > 0 for p in parts):
            raise argparse.ArgumentTypeError(f"size {token!r} is neither N nor MxNxK with positive integers")
        dims = tuple(int(p) for p in parts)
        sizes.append(dims * 3 if len(dims) == 1 else dims)
    if not sizes:
        raise argparse.ArgumentTypeError("no sizes given")
    return sizes


def _bounded(kind, allowed, bound: str):
    noun = {int: "integer", float: "number"}[kind]

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a {bound} {noun}, got {text!r}") from None
        if not allowed(value):
            raise argparse.ArgumentTypeError(f"must be {bound}, got {text}")
        return value

    return parse


def positive(kind):
    """An argparse type: an int or float above zero, with a one-line error otherwise."""
    return _bounded(kind, lambda v: v > 0, "positive")


def non_negative(kind):
    """An argparse type: an int or float of zero or more."""
    return _bounded(kind, lambda v: v >= 0, "non-negative")


def comma_list(parse_one):
    """An argparse type: a comma-separated list of distinct names, each through `parse_one` (which raises
    ValueError with the one-line reason); an empty list is parse_one's error for the text as given."""
    def parse(text: str) -> tuple:
        names = tuple(dict.fromkeys(t.strip().lower() for t in text.split(",") if t.strip()))
        try:
            return tuple(parse_one(name) for name in names) or (parse_one(text),)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from exc

    return parse


parse_layouts = comma_list(parse_layout)
parse_epilogues = comma_list(lambda name: parse_epilogue(name).name)


def list_or(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """An option's parser that also takes shapes.LIST ("list": print the choices instead of running),
    its errors one-line argparse errors."""
    def parse_or_list(text: str):
        if text.strip().lower() == LIST:
            return LIST
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from exc

    return parse_or_list


parse_group_spec = list_or(parse_groups)  # --groups: a GroupSpec, or LIST


def parse_impls(text: str) -> tuple[str, ...]:
    impls = tuple(t.strip().lower() for t in text.split(",") if t.strip())
    unknown = [i for i in impls if i not in IMPLS]
    if unknown or not impls:
        raise argparse.ArgumentTypeError(f"implementations are a comma-separated choice of {', '.join(IMPLS)}")
    return impls


def parse_sweep(text: str) -> tuple[str, tuple[int, ...]]:
    """"TILE=8,16,32,64": a config parameter and the values to try."""
    name, eq, values = text.partition("=")
    try:
        parsed = tuple(int(v) for v in values.split(",") if v.strip())
    except ValueError:
        parsed = ()
    if not eq or not name.strip().isidentifier() or not parsed:
        raise argparse.ArgumentTypeError(f"{text!r}: give a config parameter and integer values, e.g. TILE=8,16,32,64")
    return name.strip(), parsed


def parse_modules(text: str) -> list[Variant]:
    """"pkg.v90_mine,other.v91_yours": rung modules outside the package, each defining VARIANT."""
    found = []
    for name in (n.strip() for n in text.split(",") if n.strip()):
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            raise argparse.ArgumentTypeError(f"cannot import rung module {name!r}: {exc}") from exc
        variant = getattr(module, "VARIANT", None)
        if not isinstance(variant, Variant):
            raise argparse.ArgumentTypeError(f"{name} defines no VARIANT = Variant(__name__, ...)")
        found.append(variant)
    return found


def parse_rungs(text: str) -> list[Variant]:
    try:
        return select(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


@dataclass
class Task:
    variant: Variant | None  # None: the cuBLAS baseline
    config: dict
    impl: str
    shape: tuple[int, int, int]
    layout: str = "nn"
    batch: int = 0
    epilogue: str = "none"
    groups: tuple[int, ...] = ()  # rows per group of a grouped product (M in all)
    shared: str = ""  # "a" or "b": that operand is one matrix shared by the batch

    @property
    def case(self) -> tuple:
        """What the tasks of one comparison share: the problem."""
        return self.shape, self.layout, self.batch, self.epilogue, self.groups, self.shared

    @property
    def label(self) -> str:
        size = bench.size_label(self.shape, self.layout, self.batch, self.epilogue, self.groups, self.shared)
        if self.variant is None:
            return f"{BASELINES[self.impl][0]} {size}"
        return " ".join(p for p in (self.variant.tag, config_label(self.config), self.impl, size) if p)


# The baselines, in the order they run (each result's ratios are taken to those before it): rung, name, and
# how they are prepared (bench.py). The unfused torch sequence runs with an epilogue only, torch._grouped_mm and
# the graphed loop with groups only (the cuBLAS row of a grouped product is the loop, launched kernel by kernel).
BASELINES = {"cpu": ("CPU", "torch on the host"), "cublas": ("cuBLAS", "torch.matmul"),
             "unfused": ("unfused", "torch: matmul, += bias, activation"),
             "grouped_mm": ("grouped_mm", "torch._grouped_mm"),
             "loop_graph": ("loop graph", f"{bench.GROUPS_LOOP}, in a CUDA graph")}
BASELINE_PREPARE = {"cpu": bench.cpu_prepare, "cublas": bench.cublas_prepare, "unfused": bench.unfused_prepare,
                    "grouped_mm": bench.grouped_mm_prepare, "loop_graph": bench.loop_graph_prepare}
GROUPS_ONLY = ("grouped_mm", "loop_graph")


def baseline_label(impl: str, epilogue: str = "none", grouped: bool = False, dtype: str = "") -> tuple[str, str]:
    """A baseline's rung and name for this problem (the cuBLAS call differs by epilogue, with groups and for fp8)."""
    rung, name = BASELINES[impl]
    if impl == "cublas":
        scaled = bool(dtype) and PRECISIONS[dtype].scaled
        name = bench.SCALED_MM if scaled else bench.GROUPS_LOOP if grouped else bench.CUBLAS_CALLS[epilogue]
    return rung, name


def plan(variants: list[Variant], impls: tuple[str, ...], sizes, layouts: tuple[str, ...] = ("nn",),
         batch: int = 0, epilogues: tuple[str, ...] = ("none",), groups=None, shared: str = "") -> Iterator[Task]:
    """Per size, layout and epilogue: the baselines first (the rungs' ratios need them), then every rung,
    config and language. `groups`: the rows per group of each size, in the order of `sizes` (grouped products);
    `shared`: the operand ("a" or "b") that is one matrix for the whole batch."""
    for shape, rows in zip(sizes, groups or [()] * len(sizes)):
        for layout in layouts:
            for epilogue in epilogues:
                for impl in BASELINES:
                    if (impl in impls and not (impl == "unfused" and epilogue == "none")
                            and not (impl in GROUPS_ONLY and not rows)):
                        yield Task(None, {}, impl, shape, layout, batch, epilogue, rows, shared)
                for v in variants:
                    for config in v.configs:
                        for impl in impls:
                            if impl not in BASELINES:
                                yield Task(v, dict(config), impl, shape, layout, batch, epilogue, rows, shared)


def skip_reason(task: Task, dtype: str, device: torch.device, cpu_limit_s: float = DEFAULT_CPU_LIMIT_S) -> str:
    v = task.variant
    if task.impl == "cpu":
        seconds = max(task.batch, 1) * bench.cpu_seconds_estimate(*task.shape, PRECISIONS[dtype])
        if seconds > cpu_limit_s:
            return f"one CPU call would take about {seconds:.0f} s (--cpu-limit {cpu_limit_s:g})"
        return ""
    if v is None:
        return ""
    if getattr(v, task.impl) is None:
        return f"no {task.impl} implementation"
    if task.epilogue not in v.epilogues:
        return f"fuses no {task.epilogue} epilogue (applies {', '.join(v.epilogues)})"
    if task.groups and task.impl not in v.grouped:
        return f"has no grouped {task.impl} kernel (the cuBLAS row is the loop of launches, one per group)"
    if dtype not in v.dtypes:
        return f"supports {', '.join(v.dtypes)} only"
    if device.type == "cuda" and torch.cuda.get_device_capability(device) < v.min_cc:
        return f"needs compute capability {v.min_cc[0]}.{v.min_cc[1]}"
    source = v.cuda_source
    if (task.impl == "cuda" and source is not None and device.type == "cuda"
            and not source.runs_on(torch.cuda.get_device_capability(device))):
        return f"its CUDA C is built for {source.arch}, which runs on compute capability 9.0 (Hopper) only"
    return ""


