"""compare.py: every rung in CUDA C and Triton, checked against torch and timed against cuBLAS."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import itertools
import json
import os
import sys
from pathlib import Path
from unittest import mock

import torch
from tabulate import tabulate
from tqdm import tqdm

from . import bench, cuda_c, distributed, isolation, report, search, shapes, tuning_cache
from ..tools import lessons, ncu, plots, profile, sanitize
from .check import INPUTS, PRECISIONS, ROUTINGS
from .env import end_of_run, environment, set_cublas_math
from .registry import LANGS, Variant, all_variants, config_label, select
from .tasks import (BASELINE_PREPARE, BASELINES, DEFAULT_CPU_LIMIT_S, DEFAULT_TASK_TIMEOUT_S, IMPLS, Task,
                    baseline_label, list_or, parse_epilogues, parse_group_spec, parse_impls, parse_layouts,
                    parse_modules, parse_rungs, parse_sizes, parse_sweep, plan, positive, skip_reason)
from .traffic import run_tile

DEFAULT_GPU_SIZES = "4096"
DEFAULT_CPU_SIZES = "17x33x5,97x61x130"
COLD_CACHES = {"CUPY_CACHE_IN_MEMORY": "1", "TRITON_ALWAYS_COMPILE": "1"}  # compile afresh, not from disk
INTERPRETER_COMFORT = 256  # the interpreter runs one program at a time: larger sizes take minutes

EPILOG = """
examples:
  python compare.py                           every rung at 4096³ fp32, CUDA C beside Triton, vs cuBLAS
  python compare.py --rungs 2-3 --sizes 1024,2048x512x4096
  python compare.py --impl triton,cublas --timing graph --sizes 256,512
  python compare.py --dtype bf16 --rungs 14,15 --sizes 8192 --rounds 3   clock drift shared out
  python compare.py --dtype bf16 --rungs 17 --epilogue bias+gelu --sizes 8192x8192x4096,4096
  python compare.py --dtype bf16 --rungs 18 --groups ramp       mixture-of-experts: 8 ragged groups in one launch
  python compare.py --dtype bf16 --rungs 18 --groups 128,0,640,300 --sizes 1068x2048x4096 --timing graph
  python compare.py --dtype fp8 --rungs 19 --sizes 4096,8192x8192x4096   e4m3, scaled, nt, vs torch._scaled_mm
  python compare.py --dtype fp8-rowwise --rungs 19     the same with a scale per row of A and column of B
  python compare.py --list
  python compare.py --rungs 3 --sweep TILE=8,16,32,64 --sizes 1024,4096 --plots out/
  python compare.py --rungs 11,15 --sizes 256,512,1024,2048,4096,8192 --json out/sweep.json --plots out/
  python compare.py --rungs 1-11 --ncu --json out/ladder.json    + Nsight Compute's speed of light per kernel
  python compare.py --sanitize                                    racecheck: v04's races beside v03 clean
  python compare.py --sanitize memcheck --rungs 14 --dtype bf16
  python compare.py --lessons out/lessons --json out/ladder.json --plots out/plots
  python compare.py --csv out/ladder.csv --json out/ladder.json --markdown out/ladder.md
  python compare.py --nproc 2 --dtype bf16 --sizes 8192,16384        two GPUs: row partition and overlap
  torchrun --nproc-per-node=8 compare.py --distributed --dtype bf16   the same, launched by torchrun

Without a CUDA device it verifies the Triton rungs in Triton's interpreter on small shapes and prints
nvcc's compile report for the CUDA rungs; nothing is timed.
"""


def sweep_configs(variants: list[Variant], name: str, values: tuple[int, ...]) -> list[Variant]:
    """The rungs whose configs have parameter `name`, each config repeated with every value of it."""
    swept = []
    for v in variants:
        bases = [c for c in v.configs if name in c]
        if bases:
            configs = {tuple({**c, name: x}.items()): None for c in bases for x in values}
            swept.append(dataclasses.replace(v, configs=tuple(dict(c) for c in configs)))
    if not swept:
        having = sorted({k for v in all_variants() for c in v.configs for k in c})
        raise SystemExit(f"--sweep {name}: none of the chosen rungs has a config parameter {name!r}; "
                         f"parameters: {', '.join(having)}")
    return swept


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="compare.py", description=__doc__, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rungs", type=parse_rungs, default=None, metavar="SPEC",
                   help='rungs by number, name or range: "3", "v03", "smem_tiling", "1-3", "1,3-4" (default: all)')
    p.add_argument("--impl", type=parse_impls, default=IMPLS, metavar="LIST",
                   help="comma-separated: cuda, triton, cublas, cpu (torch on the host, the baseline the GPU "
                        "speedup is taken over), unfused (with --epilogue: torch's unfused sequence) (default: all)")
    p.add_argument("--sizes", type=parse_sizes, default=None, metavar="LIST",
                   help=f"N for N³ or MxNxK, comma-separated (default: {DEFAULT_GPU_SIZES} on a GPU, "
                        f"{DEFAULT_CPU_SIZES} in the interpreter)")
    p.add_argument("--layout", type=parse_layouts, default=None, metavar="LIST",
                   help="C = op(A) @ op(B), op(A) then op(B): n as stored row-major, t a transposed view of a "
                        "row-major matrix; comma-separated from nn, nt, tn, tt. cuBLAS reads the views in place; a rung "
                        "reads the layouts it declares (--list) in place and copies the others inside its timed "
                        "call, saying so (default: nn; with --dtype fp8 or fp8-rowwise nt, the layout fp8 tensor "
                        "cores read)")
    p.add_argument("--batch", type=positive(int), default=0, metavar="B",
                   help="B products of the --sizes matrices each, in one call (cuBLAS: torch.matmul on 3-D "
                        "operands, its batched GEMM); a rung without a batched kernel launches once per matrix "
                        "inside its timed call, saying so (default: one product)")
    p.add_argument("--shared", choices=("a", "b"), default="",
                   help="with --batch: one matrix of this operand (a: A, M×K; b: B, K×N) shared by every product "
                        "of the batch, broadcast as torch.matmul does (default: each product has its own)")
    p.add_argument("--epilogue", type=parse_epilogues, default=("none",), metavar="NAME[,NAME]",
                   help="C = act(A @ B + bias), comma-separated from none, bias, bias+relu, bias+gelu (GELU in "
                        "torch's tanh form). cuBLAS fuses it through torch.addmm / torch._addmm_activation (one "
                        "product only), the unfused row runs torch's sequence (matmul, += bias, activation); "
                        "rungs that do not fuse it (--list) are skipped (default: none)")
    p.add_argument("--groups", type=parse_group_spec, default=None, metavar="SPEC",
                   help="grouped products (mixture-of-experts): A's M rows split into groups, one K×N matrix of B "
                        "per group, C[rows of g] = A[rows of g] @ B[g] (torch._grouped_mm's offsets). SPEC: a group "
                        "count (8: each size's M split evenly), the rows of each group (128,0,640,300: they must sum "
                        f"to M; 0 is an empty group), or a routing: {', '.join(ROUTINGS)} (its groups, and its NxK "
                        "when --sizes is not given; --groups list shows them). Baselines: the loop of torch.matmul "
                        "(the cuBLAS row), the same loop in a CUDA graph, torch._grouped_mm; rungs without a "
                        "grouped kernel (--list) are skipped (default: no groups)")
    p.add_argument("--shapes", type=list_or(shapes.resolve), default=None, metavar="NAME[,NAME]",
                   help=f"instead of --sizes, named shape sets from real models: {', '.join(shapes.SETS)} "
                        f"({shapes.LIST}: print every shape and where it comes from)")
    p.add_argument("--dtype", choices=sorted(PRECISIONS), default="fp32",
                   help="operand precision; rungs that do not support it are skipped with the reason; fp8: e4m3 "
                        "with a scale per tensor, fp8-rowwise: per row of A and column of B (default: fp32)")
    p.add_argument("--timing", choices=("events", "graph"), default="events",
                   help="events: CUDA events per call, L2 flushed between calls; graph: many calls in one CUDA "
                        "graph, for small sizes where launch overhead dominates; the tuned rungs' searches time "
                        "their candidates the same way, and keep each mode's choice apart (default: events)")
    p.add_argument("--flush", choices=bench.FLUSHES, default="zero",
                   help="events timing: how the L2 is emptied before each call. zero: do_bench's own, a 256 MB "
                        "buffer zeroed, which leaves the L2 full of dirty lines that the timed call writes back "
                        "as it evicts them (as after a kernel that wrote that much); clean: then a read of another "
                        "256 MB, so the call starts from clean lines and pays for its own traffic alone (as Nsight "
                        "Compute's cache control); the searches flush the same way (default: zero)")
    p.add_argument("--warmup", type=positive(float), default=25.0, metavar="MS",
                   help="warm-up time per measurement (ms)")
    p.add_argument("--rep", type=positive(float), default=200.0, metavar="MS", help="timed time per measurement (ms)")
    p.add_argument("--min-runs", type=positive(int), default=10, metavar="N",
                   help="timed calls at least, however slow the kernel (default 10)")
    p.add_argument("--rounds", type=positive(int), default=1, metavar="N",
                   help="check and time every implementation of a size N times, in reverse order every other "
                        "round, pooling each one's samples: a GPU's clocks drift with its temperature and power "
                        "draw, and in one pass the drift lands on whatever runs last (default 1)")
    p.add_argument("--cpu-limit", type=positive(float), default=DEFAULT_CPU_LIMIT_S, metavar="S",
                   help="run the CPU baseline only at sizes where one call is estimated (from a 512³ probe) "
                        f"to take at most S seconds (default {DEFAULT_CPU_LIMIT_S})")
    p.add_argument("--sweep", type=parse_sweep, metavar="NAME=V,...",
                   help="try every value of one config parameter on the rungs that have it, e.g. TILE=8,16,32,64 "
                        "(v03's tile exercise: 64 is refused with the reason); tabulated, and plotted with --plots")
    p.add_argument("--plots", metavar="DIR",
                   help="write PNG plots: the ladder as %% of cuBLAS, a roofline under the ceilings measured in "
                        "this run, TFLOP/s against size (more than one size), the --sweep result")
    p.add_argument("--ncu", action="store_true",
                   help="after timing, profile every chosen launch under Nsight Compute (clock control off, "
                        "filtered by kernel name): SM and memory throughput %%, DRAM bytes, achieved occupancy, and "
                        "the traffic each block tile implies beside the DRAM bytes measured")
    p.add_argument("--sanitize", nargs="?", const="racecheck", choices=sanitize.TOOLS, metavar="TOOL",
                   help="instead of timing, run compute-sanitizer (racecheck by default; memcheck, initcheck, "
                        "synccheck) over the chosen rungs' CUDA C and Triton kernels at one small ragged size "
                        "(default rungs: the broken-on-purpose one and the correct rung it breaks)")
    p.add_argument("--lessons", metavar="DIR",
                   help="write the side-by-side lessons (lessons.html, self-contained, and lessons.md) with this "
                        "run's figures and plots")
    p.add_argument("--inputs", choices=INPUTS, default="normal",
                   help="the inputs' distribution: normal; positive (no cancellation to hide an error); wide (a wide "
                        "dynamic range); integers (exact products: the output must be exact) (default: normal)")
    p.add_argument("--seed", type=int, default=None, help="base seed of the random inputs (default: random, printed)")
    p.add_argument("--csv", metavar="PATH", help="write every result as a CSV row as it is measured")
    p.add_argument("--json", metavar="PATH", help="keep a JSON document (environment + results) current")
    p.add_argument("--markdown", metavar="PATH", help="keep a Markdown report current")
    p.add_argument("--task-timeout", type=positive(float), default=DEFAULT_TASK_TIMEOUT_S, metavar="S",
                   help="on a GPU every implementation is checked and timed in a worker process; one that gives no "
                        f"result within S seconds is recorded as timeout and its process ended (default "
                        f"{DEFAULT_TASK_TIMEOUT_S:g}); one whose CUDA error leaves the context unusable as fault. "
                        "Either way the run goes on in a fresh process")
    p.add_argument("--in-process", action="store_true",
                   help="run the tasks in this process instead (a fault then ends the run; for debugging)")
    p.add_argument("--with", dest="extra", type=parse_modules, default=[], metavar="MODULES",
                   help="rung modules from outside the package, comma-separated (e.g. your own vNN_name.py that "
                        "defines VARIANT, importable by name); they run after the chosen rungs")
    p.add_argument("--disk-cache", action="store_true",
                   help="let CuPy and Triton load kernels from their on-disk caches (default: compile afresh, so "
                        "the compile-time column shows real compiles)")
    p.add_argument("--retune", action="store_true",
                   help="search the tuned rungs' candidates again at every shape, even where the tuning cache "
                        "has a choice, and keep the new choice there (default: a shape searched before, in any "
                        f"run, is taken from the cache; its file: ${tuning_cache.DIR_VARIABLE}/tuning.json, else "
                        "$XDG_CACHE_HOME/triton-vs-cuda/tuning.json)")
    d = p.add_argument_group("more than one GPU (torch.distributed; see docs/methods.md)")
    d.add_argument("--distributed", action="store_true",
                   help="run as one rank of a torchrun job (torchrun --nproc-per-node=N compare.py --distributed): "
                        "each rank computes its rows of C with the chosen rungs (default: the best rung for "
                        "--dtype), C is all-gathered, checked whole and timed per strategy against one GPU")
    d.add_argument("--nproc", type=positive(int), metavar="N",
                   help="start N ranks of --distributed here, one per GPU (without a GPU: N CPU processes on "
                        "gloo, checked, not timed); one failing rank ends them all")
    d.add_argument("--strategies", type=parse_strategies, default=distributed.STRATEGIES, metavar="LIST",
                   help="rows: the seed's row partition then one all-gather; overlap: the rows in chunks, each "
                        "chunk's all-gather behind the next chunk's compute (default: both)")
    d.add_argument("--chunks", type=positive(int), default=distributed.DEFAULT_CHUNKS, metavar="N",
                   help=f"steps of the overlap strategy (default {distributed.DEFAULT_CHUNKS})")
    d.add_argument("--dist-timeout", type=positive(float), default=distributed.DEFAULT_TIMEOUT_S, metavar="S",
                   help="a collective that waits longer than S seconds ends the run with an error "
                        f"(default {distributed.DEFAULT_TIMEOUT_S:g})")
    p.add_argument("--list", action="store_true", help="list the rungs and exit")
    return p


def parse_strategies(text: str) -> tuple[str, ...]:
    chosen = tuple(s.strip() for s in text.split(",") if s.strip())
    unknown = [s for s in chosen if s not in distributed.STRATEGIES]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"unknown strategy {', '.join(unknown) or text!r}; choose from "
                                         f"{', '.join(distributed.STRATEGIES)}")
    return chosen


def list_rungs() -> str:
    rows = []
    for v in all_variants():
        configs = "; ".join(config_label(c) for c in v.configs if c) or "-"
        langs = ", ".join(lang for lang in LANGS if getattr(v, lang) is not None)
        in_place = " / ".join(f"{lang}: {','.join(v.layouts.get(lang, ('nn',)))}" for lang in LANGS
                              if getattr(v, lang) is not None)
        rows.append([v.tag, v.name, v.title, ", ".join(v.dtypes), configs, langs, in_place,
                     ", ".join(v.batched) or "-", ", ".join(v.epilogues), ", ".join(v.grouped) or "-",
                     "broken on purpose" if v.expect_wrong else ""])
    table = tabulate(rows, ["rung", "name", "title", "dtypes", "configs", "languages", "layouts read in place",
                            "batched kernel", "epilogues", "grouped kernel", ""], disable_numparse=True)
    return (table + "\n\nOther layouts are copied to row-major inside the timed call, and a batch without a batched "
            "kernel is launched once per matrix; the result rows say so. A rung runs only the epilogues it fuses "
            "(--epilogue) and grouped products (--groups) where it has a grouped kernel; the others are skipped "
            "with the reason.")


def list_routings() -> str:
    rows = [[r.name, len(r.groups), ",".join(map(str, r.groups)), "x".join(map(str, r.shape)), r.description]
            for r in ROUTINGS.values()]
    return tabulate(rows, ["routing", "G", "rows per group", "size", ""], disable_numparse=True, maxcolwidths=60)


def run_tasks(tasks: list[Task], log: report.ResultLog, *, dtype: str, device: torch.device, seed: int,
              timing: bench.TimingOptions | None, cpu_limit_s: float = DEFAULT_CPU_LIMIT_S, rounds: int = 1,
              inputs: str = "normal", worker: isolation.Worker | None = None) -> None:
    """Check and time every task, size by size; in `worker`'s process when given (a fault or a hang then
    costs one result), else in this one.

    rounds > 1: the implementations of a size are checked and timed that many times, in reverse order every
    other round, and each one's samples pooled before the ratios are taken. A GPU's clocks follow its
    temperature and power draw, so in one pass in a fixed order the drift lands on whatever runs last.
    The CPU baseline, which does not drift that way and is slow, runs in the first round only.
    """
    precision = PRECISIONS[dtype]
    total = len(tasks) * rounds
    bar = tqdm(total=total, file=sys.stderr, disable=not sys.stderr.isatty(), leave=False)
    step = 0
    for _, group in itertools.groupby(enumerate(tasks), key=lambda item: item[1].case):
        group = list(group)
        results: dict[int, bench.Result] = {}
        for r in range(rounds):
            for i, task in group if r % 2 == 0 else group[::-1]:
                bar.set_description(task.label)
                bar.update()
                step += 1
                first = results.get(i)
                if first is not None and not (first.status == bench.STATUS_OK and first.samples
                                              and task.impl != "cpu"):
                    continue
                ratios = {f"{t.impl}_ms": results[j].ms for j, t in group if t.variant is None and j in results}
                case = (dtype, seed + i + r * len(tasks), timing, cpu_limit_s, ratios, inputs)
                result = (measure_isolated(worker, task, *case) if worker is not None
                          else measure_task(task, dtype, precision, device, *case[1:]))
                if first is None:
                    results[i] = result
                    log.add(result, final=rounds == 1)
                else:
                    bench.pool(first, result)
                timed = f" {result.ms:.3f} ms" if result.ms is not None else ""
                of = f", round {r + 1} of {rounds}" if rounds > 1 else ""
                tqdm.write(f"[{step}/{total}{of}] {task.label}: {result.status}{timed}", file=sys.stderr)
        if rounds > 1:
            pool_rounds(group, results, f"{timing.label if timing else 'none'}, {rounds} rounds")
            log.finish(results.values())
    bar.close()


def measure_task(task: Task, dtype: str, precision, device: torch.device, seed: int,
                 timing: bench.TimingOptions | None, cpu_limit_s: float, ratios: dict,
                 inputs: str = "normal") -> bench.Result:
    """One task checked and timed; ratios: the baselines' times at this size measured so far ({impl}_ms)."""
    v = task.variant
    rung, name = baseline_label(task.impl, task.epilogue, bool(task.groups), dtype) if v is None else (v.tag, v.name)
    problem = {"inputs": inputs, "layout": task.layout, "batch": task.batch, "epilogue": task.epilogue,
               "shared": task.shared}
    reason = skip_reason(task, dtype, device, cpu_limit_s)
    if task.impl == "loop_graph" and timing is not None and timing.mode == "graph":
        reason = "--timing graph times every row in a CUDA graph: the cuBLAS row is the loop graphed"
    if reason:
        return bench.Result(rung, name, config_label(task.config), task.impl, dtype, *task.shape, note=reason,
                            groups=bench.groups_text(task.groups), **problem)
    problem["groups"] = task.groups
    # the ratios to the baselines measured before this one at this size (never to itself)
    baselines = {f"{impl}_ms": ratios.get(f"{impl}_ms") for impl in BASELINES if impl != task.impl}
    if v is None:
        return bench.measure(
            rung=rung, name=name, config="", impl=task.impl, precision=precision, shape=task.shape, device=device,
            seed=seed, prepare=BASELINE_PREPARE[task.impl], timing=timing, **problem, **baselines)

    def prepare(a, b, **fused):
        return v.prepare(task.impl, a, b, **fused, **task.config)

    return bench.measure(
        rung=v.tag, name=v.name, config=config_label(task.config), impl=task.impl, precision=precision,
        shape=task.shape, device=device, seed=seed, prepare=prepare, expect_wrong=v.expect_wrong, timing=timing,
        tile_of=lambda run: run_tile(v, task.config, run), **problem, **baselines)


def measure_spec(spec: tuple, dtype: str, seed: int, timing, cpu_limit_s: float, ratios: dict,
                 inputs: str) -> bench.Result:
    """measure_task in a worker process: the task travels as (rung module, config, impl, shape, layout, batch,
    epilogue, groups, shared)."""
    module, config, impl, shape, layout, batch, epilogue, groups, shared = spec
    variant = importlib.import_module(module).VARIANT if module else None
    if torch.cuda.is_available():
        set_cublas_math(tf32=dtype == "tf32")
    device = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
    result = measure_task(Task(variant, config, impl, shape, layout, batch, epilogue, groups, shared), dtype,
                          PRECISIONS[dtype], device, seed, timing, cpu_limit_s, ratios, inputs)
    if result.status == bench.STATUS_ERROR and isolation.sticky_error(result.note) and impl == "cuda":
        result.note += f"; last CUDA C launch: {cuda_c.LAST_LAUNCH[0]}"
    return result


def sticky_result(result) -> str:
    """The CUDA error a result reports, if it is one that leaves the context unusable."""
    return result.note if isinstance(result, bench.Result) and isolation.sticky_error(result.note) else ""


def measure_isolated(worker: isolation.Worker, task: Task, dtype: str, seed: int, *rest) -> bench.Result:
    """One task in the worker's process; a fault, a hang or a crash there becomes this task's result."""
    spec = (task.variant.module if task.variant else None, task.config, task.impl, task.shape, task.layout, task.batch,
            task.epilogue, task.groups, task.shared)
    outcome = worker.call(measure_spec, spec, dtype, seed, *rest)
    if outcome.kind == "ok":
        return outcome.value
    v = task.variant
    rung, name = baseline_label(task.impl, task.epilogue, bool(task.groups), dtype) if v is None else (v.tag, v.name)
    result = bench.Result(rung, name, config_label(task.config), task.impl, dtype, *task.shape, seed=seed,
                          layout=task.layout, batch=task.batch, epilogue=task.epilogue,
                          groups=bench.groups_text(task.groups), shared=task.shared)
    if isinstance(outcome.value, bench.Result):
        result = outcome.value
    reason = outcome.value.note if isinstance(outcome.value, bench.Result) else outcome.value
    if outcome.kind == "fault":
        result.status = bench.STATUS_FAULT
        result.note = f"{reason or outcome.detail}; the tasks after it run in a fresh process"
    elif outcome.kind == "timeout":
        result.status = bench.STATUS_TIMEOUT
        result.note = f"{reason} (--task-timeout); its process was ended, the tasks after it run in a fresh one"
    else:
        result.status, result.note = bench.STATUS_ERROR, reason
    bench.clear_figures(result)
    tqdm.write(f"{task.label}: {result.status}: {result.note}", file=sys.stderr)
    return result


def pool_rounds(group: list[tuple[int, Task]], results: dict[int, bench.Result], timing: str) -> None:
    """Each timed result of one size from all its rounds' samples, in plan order: the baselines come
    first, so the others' ratios are taken to the baselines' pooled medians."""
    baseline_ms: dict[str, float] = {}
    for i, task in group:
        result = results[i]
        if not (result.samples and result.status == bench.STATUS_OK):
            continue
        bench.summarize(result, *(baseline_ms.get(impl) if impl != task.impl else None
                                  for impl in ("cublas", "cpu", "unfused", "grouped_mm", "loop_graph")))
        result.timing = timing
        if task.variant is None:
            baseline_ms[task.impl] = result.ms


def print_results(log: report.ResultLog, gpu: bool) -> None:
    for (size, dtype), group in report.by_shape(log.results).items():
        print(f"\n{size} {dtype}" + ("" if gpu else " (Triton interpreter: checked, not timed)"))
        print(report.ladder_table(group))
        kernels = report.kernel_table(group)
        if kernels:
            print("\nkernels")
            print(kernels)
        notes = report.notes_table(group)
        if notes:
            print("\n" + notes)
    if log.compile_reports:
        print("\nCUDA C rungs: nvcc compile report (compiled for these architectures, not run)")
        print(report.compile_table(log.compile_reports))


def cpu_compile_reports(variants: list[Variant], log: report.ResultLog) -> int:
    """nvcc's report for every CUDA C kernel; returns how many .cu compiles failed."""
    try:
        cuda_c.nvcc_path()
    except RuntimeError as exc:
        print(f"\nCUDA C rungs: no compile report: {exc}")
        return 0
    failures = 0
    for v in variants:
        if v.cuda_source is None:
            continue
        for arch in v.cuda_source.archs:
            try:
                log.add_compile_reports(v.tag, cuda_c.compile_report(v.cuda_source, arch))
            except RuntimeError as exc:
                failures += 1
                print(f"\n{v.stem} for {arch}: {exc}")
    return failures


def timing_description(args) -> str:
    rounds = (f"; {args.rounds} rounds per size, the order reversed every other round, samples pooled"
              if args.rounds > 1 else "")
    if args.timing == "graph":
        return (f"graph: do_bench_cudagraph, one CUDA graph of >= {args.rep / bench.GRAPH_REPLAYS:g} ms and >= "
                f"{args.min_runs} calls, {bench.GRAPH_REPLAYS} replays, median of the replays' mean per call; no L2 "
                f"flush between calls{rounds}")
    label = bench.TimingOptions(args.timing, flush=args.flush).label  # as the results record it
    return (f"{label}: do_bench, warm-up {args.warmup} ms, >= {args.rep} ms and >= {args.min_runs} calls "
            f"each timed alone after an L2 flush, median with 20-80 percentile spread{rounds}")


def tuning_description(retune: bool) -> str:
    if retune:
        return f"--retune: every shape searched again, the choices kept in {tuning_cache.path()}"
    if search.mode() == "first":
        return f"{search.MODE_VARIABLE}=first: first candidate, untimed"
    return f"choices from {tuning_cache.path()} where searched before, else searched and kept there"


def tool_logs(args, name: str) -> Path | None:
    """Where a tool's raw output is kept: beside the JSON (or Markdown, CSV) report, when one is written."""
    saved = args.json or args.markdown or args.csv
    return None if saved is None else Path(saved).with_suffix("").with_name(f"{Path(saved).stem}_{name}")


def run_sanitizer(args) -> int:
    """compare.py --sanitize: compute-sanitizer over the chosen rungs, nothing timed."""
    if not torch.cuda.is_available():
        print("--sanitize needs a CUDA device: compute-sanitizer checks kernels as they run on the GPU",
              file=sys.stderr)
        return 2
    variants = args.rungs if args.rungs is not None else sanitize.default_selection()
    size = args.sizes[0] if args.sizes else sanitize.DEFAULT_SIZE
    impls = tuple(i for i in args.impl if i in LANGS)
    found = sanitize.sanitize(args.sanitize, variants, impls, size, args.dtype, tool_logs(args, args.sanitize))
    print(f"compute-sanitizer --tool {args.sanitize}, {args.dtype}, rungs {', '.join(v.tag for v in variants)}")
    print(sanitize.format_report(found))
    # in-kernel findings on a rung that should be correct; host API errors (cuda-python probing driver entry
    # points through cuGetProcAddress) are shown but are not the kernel's
    unexpected = [r for r in found.results if not r.expect_wrong and r.findings
                  and r.findings.errors > r.findings.api_errors]
    return 1 if found.problem or unexpected else 0


def nsight(args, variants: list[Variant], impls, sizes, log: report.ResultLog) -> None:
    """compare.py --ncu: Nsight Compute's figures for every chosen launch, printed and kept in the reports."""
    impls = [i for i in impls if i in profile.IMPLS]  # the CPU baseline launches no kernel
    profiled = ncu.profile(variants, impls, sizes, args.dtype, tool_logs(args, "ncu"), layouts=args.layout,
                           batch=args.batch, shared=args.shared)
    if profiled.problem:
        print(f"\nNsight Compute: {profiled.problem}; going on without its columns")
        return
    sections = [("Nsight Compute: speed of light (clock control off)", ncu.ncu_table),
                ("Memory traffic: what each block tile asks for beside the DRAM bytes measured", ncu.traffic_table)]
    for title, table in sections:
        print(f"\n{title}\n{table(profiled.rows)}")
        log.add_section(title, table(profiled.rows, "github"))
    if profiled.notes:
        print("\n" + "\n".join(profiled.notes))
    log.add_records("ncu", [dataclasses.asdict(r) for r in profiled.rows])


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.shapes is not None:  # a shape set becomes the size list, for every mode below
        if args.sizes:
            print("--shapes and --sizes both give the sizes: choose one", file=sys.stderr)
            return 2
        if args.shapes == shapes.LIST:
            print(shapes.listing())
            return 0
        args.sizes = shapes.run_sizes(args.shapes)
    if args.flush != "zero" and (args.timing == "graph" or args.distributed or args.nproc):
        print("--flush applies to events timing in the single-GPU comparison: graph timing does not flush between "
              "calls, and --distributed and --nproc time with do_bench's own flush", file=sys.stderr)
        return 2
    own_layout = ("nt",) if PRECISIONS[args.dtype].scaled else ("nn",)  # the layout fp8 tensor cores read, else nn
    if args.layout is None:
        args.layout = own_layout
    if PRECISIONS[args.dtype].scaled and (args.epilogue != ("none",) or args.groups is not None or args.distributed
                                          or args.nproc):
        print(f"--dtype {args.dtype} runs single products and batches, without --epilogue, --groups, --distributed "
              "or --nproc", file=sys.stderr)
        return 2
    if PRECISIONS[args.dtype].scaled == "rowwise" and args.batch:
        print("--dtype fp8-rowwise scales single products (a scale per row of A and column of B), not --batch",
              file=sys.stderr)
        return 2
    if args.epilogue != ("none",) and (args.nproc or args.distributed or args.sanitize or args.ncu):
        print("--epilogue runs in the single-GPU comparison only, not with --distributed, --nproc, --sanitize or "
              "--ncu", file=sys.stderr)
        return 2
    if args.shared and not args.batch:
        print(f"--shared {args.shared} names the operand a batch shares: give --batch B too", file=sys.stderr)
        return 2
    if args.groups == shapes.LIST:
        print(list_routings())
        return 0
    if args.groups is not None:
        options = (("--batch", args.batch), ("--epilogue", args.epilogue != ("none",)), ("--sweep", args.sweep),
                   ("--distributed", args.distributed), ("--nproc", args.nproc), ("--sanitize", args.sanitize),
                   ("--ncu", args.ncu))
        clash = [option for option, given in options if given]
        if clash:
            print(f"--groups runs in the single-GPU comparison without {' or '.join(clash)}", file=sys.stderr)
            return 2
        if args.sizes is None and args.groups.routing:
            args.sizes = [ROUTINGS[args.groups.routing].shape]
    if args.nproc:
        return distributed.launch(sys.argv[1:] if argv is None else list(argv), args.nproc)
    if args.list:
        print(list_rungs())
        return 0
    if args.sanitize:
        if args.batch or args.layout != own_layout:
            print("--sanitize checks one product in the dtype's own layout: give it without --batch or --layout",
                  file=sys.stderr)
            return 2
        return run_sanitizer(args)
    default = distributed.default_rungs(args.dtype) if args.distributed else select()
    variants = (args.rungs if args.rungs is not None else default) + args.extra
    if args.sweep:
        variants = sweep_configs([v for v in variants if args.rungs is not None or not v.expect_wrong], *args.sweep)
    gpu = torch.cuda.is_available()
    if not gpu and not all(v.triton_interpreted for v in variants if v.triton):
        print("No CUDA device, and Triton was imported in compiled mode: set TRITON_INTERPRET=1 before triton is "
              "imported (importing the implementations package first does this when it finds no GPU).",
              file=sys.stderr)
        return 2
    sizes = args.sizes or parse_sizes(DEFAULT_GPU_SIZES if gpu else DEFAULT_CPU_SIZES)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    if args.distributed:
        return distributed.main(args, variants, sizes, seed)
    device = torch.device("cuda", torch.cuda.current_device()) if gpu else torch.device("cpu")
    try:
        groups = [args.groups.split(M) for M, _, _ in sizes] if args.groups else None
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    refusal = shapes.check_memory(sizes, PRECISIONS[args.dtype].c_dtype, device, args.batch,
                                  groups=len(groups[0]) if groups else 0,
                                  flush_buffers=2 if args.flush == "clean" else 1)
    if refusal:
        print(refusal, file=sys.stderr)
        return 2
    cublas_mode = set_cublas_math(tf32=args.dtype == "tf32") if gpu else "n/a (no GPU)"
    env = environment(device)
    if gpu:
        env["copy bandwidth"] = f"{bench.copy_bandwidth(device):.0f} GB/s (read + write, 1 GiB torch copy)"
        env["L2 flush"] = bench.l2_flush(device, args.flush)
    env.update({"cuBLAS setting": cublas_mode, "dtype": args.dtype, "inputs": args.inputs, "seed": str(seed),
                "kernel caches": "on-disk caches allowed" if args.disk_cache else "off: every kernel compiled afresh",
                "timing": timing_description(args) if gpu else "none",
                "triton mode": "compiled" if gpu else "interpreter (TRITON_INTERPRET=1)",
                "tuned rungs": tuning_description(args.retune) if gpu else "interpreter: first candidate, untimed"})
    print(report.env_table(env))
    impls = args.impl if gpu else tuple(i for i in args.impl if i == "triton")
    if not gpu:
        print("\nNo CUDA device: the Triton rungs are checked in Triton's interpreter on small shapes and the CUDA C "
              "rungs are compiled by nvcc; NOTHING IS TIMED.")
        if max(max(s) for s in sizes) > INTERPRETER_COMFORT:
            print(f"(sizes above {INTERPRETER_COMFORT} take minutes in the interpreter)")
    timing = bench.TimingOptions(args.timing, args.warmup, args.rep, args.min_runs, args.flush) if gpu else None
    log = report.ResultLog(env, csv_path=args.csv, json_path=args.json, markdown_path=args.markdown)
    if args.shapes:
        log.add_section("Shapes", shapes.legend(args.shapes, "github"))
        log.add_records("shapes", [dataclasses.asdict(s) for s in args.shapes])
    tasks = list(plan(variants, impls, sizes, args.layout, args.batch, args.epilogue, groups, args.shared))
    # The libraries read these at compile time, the searches at their first call, in this process and in the
    # workers it spawns (which inherit the environment); patch.dict puts the caller's environment back after.
    settings = (({} if args.disk_cache else COLD_CACHES) | ({search.MODE_VARIABLE: "retune"} if args.retune else {})
                | ({search.TIMING_VARIABLE: "graph"} if args.timing == "graph" else {})
                | ({search.FLUSH_VARIABLE: "clean"} if args.flush == "clean" else {}))
    patched = mock.patch.dict(os.environ, settings)
    compile_failures = 0
    worker = (isolation.Worker(args.task_timeout, sticky_result, preload=(__name__,))
              if gpu and not args.in_process else None)
    try:
        with patched:
            run_tasks(tasks, log, dtype=args.dtype, device=device, seed=seed, timing=timing,
                      cpu_limit_s=args.cpu_limit, rounds=args.rounds if gpu else 1, inputs=args.inputs,
                      worker=worker)
        if gpu:
            log.update_environment(end_of_run(device))
        elif "cuda" in args.impl:
            compile_failures = cpu_compile_reports(variants, log)
    except KeyboardInterrupt:
        print(f"\ninterrupted: {len(log.results)} of {len(tasks)} results kept", file=sys.stderr)
        print_results(log, gpu)
        return 130
    finally:
        if worker is not None:
            worker.close()
        log.close()
    print_results(log, gpu)
    if args.shapes:
        print(f"\n--shapes: the shapes each size stands for\n{shapes.legend(args.shapes)}")
    if args.ncu:
        if gpu:
            nsight(args, variants, impls, sizes, log)
        else:
            print("\nNsight Compute: no CUDA device, nothing to profile; going on without its columns")
    if args.sweep:
        print(f"\n--sweep {args.sweep[0]}")
        print(report.sweep_table(log.results, args.sweep[0]))
    written = []
    if args.plots:
        written = plots.write_all(log.document(), args.plots, sweep=args.sweep[0] if args.sweep else None)
        print("\nplots: " + (", ".join(map(str, written)) or "none (nothing was timed)"))
    if args.lessons:
        results = Path(args.json) if args.json else Path(args.lessons) / "results.json"
        if not args.json:
            results.parent.mkdir(parents=True, exist_ok=True)
            results.write_text(json.dumps(log.document(), indent=1))
        print("\nlessons: " + ", ".join(map(str, lessons.build_lessons(args.lessons, [results], written))))
    failed = [r for r in log.results if r.status in bench.FAILED]
    if failed:
        print(f"\n{len(failed)} result(s) failed: " + ", ".join(f"{r.rung} {r.config} {r.impl}" for r in failed))
    if compile_failures:
        print(f"\n{compile_failures} nvcc compile(s) failed")
    return 1 if failed or compile_failures else 0
