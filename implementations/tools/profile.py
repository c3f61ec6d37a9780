"""The child program that Nsight Compute and compute-sanitizer run: each chosen launch once, marked.

    python -m implementations.tools.profile --rungs 3,4 --impl cuda,triton,cublas --sizes 4096 --dtype fp32

For every size, rung, config and language (the order compare.py runs them in, cuBLAS first), it
prepares the launch, runs it once unmarked (compilation, an autotuner's search: not what we want to
profile), then once more inside an NVTX range "tvc" with a nested range "tvc#<i>" naming the launch,
and prints one line per marked launch:

    profiled 0: {"rung": "cuBLAS", "name": "torch.matmul", "config": "", "impl": "cublas", ...}

Nsight Compute profiles only kernels inside "tvc" (`--nvtx-include tvc/`), so the warm-up calls and
torch's helper kernels outside the range are left alone; the nested range tells the parent which
launch each profiled kernel belongs to. Combinations compare.py would skip are printed as
`skipped: {...}`, failures as `failed: {...}`, and the rest go on. `--no-warmup` runs each launch only
once, marked: compute-sanitizer checks every launch, so a warm-up would report each finding twice.

The parent side lives here too: the command line that runs this child, the names of the kernels
each rung launches (for the tools' kernel filters) and the reading of this child's output.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import torch

from ..core.bench import _one_line, cublas_prepare
from ..core.check import PRECISIONS, make_inputs, scales_argument
from ..core import tasks
from ..core.env import set_cublas_math
from ..core.registry import Variant, config_label, select
from ..core.traffic import run_tile
from ..core.validate import Refused

RANGE = "tvc"  # the NVTX range around every profiled launch
IMPLS = ("cuda", "triton", "cublas")  # what launches GPU kernels (compare.py's CPU baseline does not)
_PROFILED = re.compile(r"^profiled (\d+): (\{.*\})$", re.MULTILINE)
_NOTE = re.compile(r"^(skipped|failed): (\{.*\})$", re.MULTILINE)


def launch_range(index: int) -> str:
    """The nested NVTX range that names launch `index` (ncu's CSV shows the range stack of each kernel)."""
    return f"{RANGE}#{index}"


# ---- the child ----------------------------------------------------------------------------------------


def _config(text: str) -> dict[str, int]:
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"--config-json: {exc}") from exc
    if not isinstance(config, dict) or not all(isinstance(v, int) for v in config.values()):
        raise argparse.ArgumentTypeError('--config-json takes an object of integers, e.g. {"TILE": 16}')
    return config


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m implementations.tools.profile", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rungs", type=tasks.parse_rungs, default=None, metavar="SPEC",
                   help='rungs as compare.py takes them: "3", "v03", "smem_tiling", "1-3" (default: all)')
    p.add_argument("--impl", type=tasks.parse_impls, default=IMPLS, metavar="LIST",
                   help="comma-separated: cuda, triton, cublas (default: all three)")
    p.add_argument("--sizes", type=tasks.parse_sizes, default=tasks.parse_sizes("4096"), metavar="LIST",
                   help="N for N³ or MxNxK, comma-separated (default: 4096)")
    p.add_argument("--dtype", choices=sorted(PRECISIONS), default="fp32", help="operand precision (default: fp32)")
    p.add_argument("--layout", type=tasks.parse_layouts, default=("nn",), metavar="LIST",
                   help="operand layouts as compare.py takes them: nn, nt, tn, tt (default: nn)")
    p.add_argument("--batch", type=tasks.non_negative(int), default=0, metavar="B",
                   help="a batch of B products of each size (default: one product)")
    p.add_argument("--shared", choices=("a", "b"), default="", help="with --batch: the operand the batch shares")
    p.add_argument("--config-json", type=_config, default=None, metavar="JSON",
                   help='one config for every chosen rung instead of the rung\'s own, e.g. \'{"TILE": 16}\'')
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    p.add_argument("--no-warmup", action="store_true",
                   help="run each launch once, inside the range (for compute-sanitizer, which checks every launch)")
    return p


def _record(task: tasks.Task, dtype: str) -> dict:
    v = task.variant
    rung, name = tasks.baseline_label(task.impl, task.epilogue, bool(task.groups), dtype) if v is None else (
        v.tag, v.name)
    M, N, K = task.shape
    return {"rung": rung, "name": name, "config": config_label(task.config), "impl": task.impl,
            "M": M, "N": N, "K": K, "dtype": dtype, "layout": task.layout, "batch": task.batch}


def _prepare(task: tasks.Task, dtype: str, device: torch.device, seed: int):
    a, b = make_inputs(*task.shape, PRECISIONS[dtype], device, seed, layout=task.layout, batch=task.batch,
                       shared=task.shared)
    scales = scales_argument(PRECISIONS[dtype], device, seed, *task.shape[:2])  # fp8's, else none
    if task.variant is None:
        return cublas_prepare(a, b, **scales)
    return task.variant.prepare(task.impl, a, b, **scales, **task.config)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not set(args.impl) <= set(IMPLS):
        parser.error(f"--impl: choose from {', '.join(IMPLS)}: the others launch no GPU kernel")
    if not torch.cuda.is_available():
        print("python -m implementations.tools.profile needs a CUDA device: it runs kernels for Nsight Compute and "
              "compute-sanitizer, and there is none here.", file=sys.stderr)
        return 2
    device = torch.device("cuda", torch.cuda.current_device())
    set_cublas_math(tf32=args.dtype == "tf32")
    variants = args.rungs if args.rungs is not None else select()
    if args.config_json is not None:
        variants = [dataclasses.replace(v, configs=(args.config_json,)) for v in variants]
    index, failures = 0, 0
    for task in tasks.plan(variants, args.impl, args.sizes, args.layout, args.batch, shared=args.shared):
        record = _record(task, args.dtype)
        reason = tasks.skip_reason(task, args.dtype, device)
        try:
            if not reason:
                prepared = _prepare(task, args.dtype, device, args.seed)
                if not args.no_warmup:
                    prepared.run()
                torch.cuda.synchronize(device)
        except Refused as exc:  # a limit the rung states (threads per block, ...): skipped, as compare.py says
            reason = _one_line(exc)
        except Exception as exc:  # a compile or launch failure: say so, go on with the rest
            failures += 1
            print(f"failed: {json.dumps({**record, 'error': _one_line(exc)})}", flush=True)
            continue
        if reason:
            print(f"skipped: {json.dumps({**record, 'reason': reason})}", flush=True)
            continue
        launch, index = index, index + 1  # counted even if the run fails: its kernels may be in the profile
        try:
            with torch.cuda.nvtx.range(RANGE), torch.cuda.nvtx.range(launch_range(launch)):
                prepared.run()
                torch.cuda.synchronize(device)
            tile = None if task.variant is None else run_tile(task.variant, task.config, prepared.run)
        except Exception as exc:
            failures += 1
            print(f"failed: {json.dumps({**record, 'launch': launch, 'error': _one_line(exc)})}", flush=True)
            continue
        print(f"profiled {launch}: {json.dumps({**record, 'tile': tile})}", flush=True)
    return 1 if failures else 0


# ---- the parent's side ------------------------------------------------------------------------------


def child_command(variants: Sequence[Variant], impls: Iterable[str], sizes: Iterable[tuple[int, int, int]],
                  dtype: str, *, config: dict | None = None, warmup: bool = True, layouts: Sequence[str] = ("nn",),
                  batch: int = 0, shared: str = "") -> list[str]:
    """The command line (this Python) that runs the child on these rungs; run it from the repository root."""
    cmd = [sys.executable, "-m", __name__, "--rungs", ",".join(v.tag for v in variants),
           "--impl", ",".join(impls), "--sizes", ",".join("x".join(map(str, s)) for s in sizes), "--dtype", dtype,
           "--layout", ",".join(layouts)]
    if batch:
        cmd += ["--batch", str(batch)] + (["--shared", shared] if shared else [])
    if config is not None:
        cmd += ["--config-json", json.dumps(config)]
    if not warmup:
        cmd.append("--no-warmup")
    return cmd


@dataclass
class ChildOutput:
    labels: dict[int, dict] = field(default_factory=dict)  # launch index -> what ran (rung, config, impl, ...)
    notes: list[str] = field(default_factory=list)  # skipped and failed combinations, one line each


def problem_label(M: int, N: int, K: int, layout: str = "nn", batch: int = 0) -> str:
    """The size as the tools print it: "64×512x512x512 nt" for a batch of 64 in layout nt."""
    return f"{f'{batch}×' if batch else ''}{M}x{N}x{K}{'' if layout == 'nn' else ' ' + layout}"


def describe(record: dict) -> str:
    size = problem_label(record["M"], record["N"], record["K"], record.get("layout", "nn"), record.get("batch", 0))
    return " ".join(p for p in (record["rung"], record["config"], record["impl"], size) if p)


def read_child_output(text: str) -> ChildOutput:
    out = ChildOutput({int(i): json.loads(record) for i, record in _PROFILED.findall(text)})
    for kind, payload in _NOTE.findall(text):
        record = json.loads(payload)
        out.notes.append(f"{describe(record)}: {kind}: {record.get('reason') or record.get('error')}")
    return out


def cuda_kernel_names(variant: Variant) -> tuple[str, ...]:
    """The rung's CUDA kernels by function name, template arguments dropped ("smem_tiling<32>" ->
    "smem_tiling"): the name Nsight Compute's default `--kernel-name-base function` matches."""
    if variant.cuda_source is None:
        return ()
    return tuple(dict.fromkeys(k.split("<", 1)[0] for k in variant.cuda_source.kernels))


def triton_kernel_names(variant: Variant) -> tuple[str, ...]:
    """The names of the @triton.jit functions the rung may launch: a compiled Triton kernel is named after
    its Python function. Found in the rung's `homes`: its module and the earlier rungs' whose launch
    helpers it imports (v05-v09 launch v03's kernel)."""
    from triton.runtime.jit import KernelInterface

    from ..core.triton_util import python_function

    names = [python_function(obj).__name__ for home in variant.homes for obj in vars(home).values()
             if isinstance(obj, KernelInterface)]
    return tuple(dict.fromkeys(names))


if __name__ == "__main__":
    sys.exit(main())
