"""What the tuning cache saves: the first call of every tuned rung and language, before and after (GPU only).

For each tuned rung (a rung with searches) and language, in a fresh process with an empty tuning cache, time
the first call on one shape: the search compiles and times every candidate. Then, in another fresh process
with the cache that first one filled, time the first call again: the choice is read, one kernel compiled
afresh (CuPy's and Triton's on-disk kernel caches off), so the difference is the search. Last, in a third
process, a shape the tuning cache has not seen (64 more in every dimension), with the kernels the first
process left in the on-disk kernel caches: what a user pays for a new shape once the kernels are built,
the search's timing alone. Each rung runs in bf16 if it takes bf16, else in its first dtype; 16-bit dtypes at --size-16,
the others (fp32, tf32) at --size-32.

    python scripts/first_call.py --markdown first_call.md --json first_call.json
    python scripts/first_call.py --rungs 15   # one rung
"""

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from implementations import all_variants  # noqa: E402
from implementations.core import search, tuning_cache  # noqa: E402
from implementations.core.check import PRECISIONS, make_inputs, scales_argument  # noqa: E402
from implementations.core.cli import COLD_CACHES  # noqa: E402
from implementations.core.env import environment, set_cublas_math  # noqa: E402
from implementations.core.tasks import Task, parse_rungs, parse_sizes, skip_reason  # noqa: E402

HEADER = ["rung", "language", "dtype", "shape", "first call, empty cache (s)", "first call, cache filled (s)",
          "new shape, kernels built (s)", "choice, empty cache", "choice, cache filled"]
NEW_SHAPE_STEP = 64  # the new shape: this much larger in every dimension (the same divisibility by 16)


def first_call(module: str, lang: str, dtype: str, shape: tuple[int, int, int]) -> dict:
    """In this (fresh) process: the seconds the rung's first call takes (binding included), and its
    search's report."""
    variant = importlib.import_module(module).VARIANT
    set_cublas_math(tf32=dtype == "tf32")
    layout = variant.layouts.get(lang, ("nn",))[0]  # one it reads in place (fp8: nt)
    a, b = make_inputs(*shape, PRECISIONS[dtype], "cuda", seed=1, layout=layout)
    scales = scales_argument(PRECISIONS[dtype], "cuda", 1, *shape[:2])
    torch.cuda.synchronize()
    start = time.perf_counter()
    prepared = variant.prepare(lang, a, b, **scales)
    prepared.run()
    torch.cuda.synchronize()
    return {"seconds": time.perf_counter() - start, "choice": prepared.run.chosen()}


def in_fresh_process(cache: str, *spec, kernels: str | None = None) -> dict:
    """first_call in a process of its own, with this tuning cache, and CuPy's and Triton's on-disk kernel
    caches in the directory `kernels` (None: no disk caches, everything compiled); its last line of error
    if it fails."""
    disk = ({"CUPY_CACHE_DIR": f"{kernels}/cupy", "TRITON_CACHE_DIR": f"{kernels}/triton"} if kernels
            else COLD_CACHES)
    env = {**os.environ, **disk, tuning_cache.DIR_VARIABLE: cache, search.MODE_VARIABLE: "time"}
    done = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], env=env, capture_output=True,
                          text=True)
    if done.returncode != 0:
        return {"seconds": None, "choice": (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]}
    return json.loads(done.stdout.splitlines()[-1])


def one_size(text: str) -> tuple[int, int, int]:
    sizes = parse_sizes(text)
    if len(sizes) != 1:
        raise argparse.ArgumentTypeError(f"{text!r}: one size, N or MxNxK")
    return sizes[0]


def seconds(outcome: dict) -> str:
    return "failed" if outcome["seconds"] is None else f"{outcome['seconds']:.2f}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size-16", type=one_size, default=one_size("1024"), metavar="N|MxNxK",
                   help="the shape for bf16 and fp16 rungs (default 1024)")
    p.add_argument("--size-32", type=one_size, default=one_size("1000x1100x1028"), metavar="N|MxNxK",
                   help="the shape for fp32 and tf32 rungs (default 1000x1100x1028)")
    p.add_argument("--rungs", type=parse_rungs, metavar="SPEC", help="these rungs only, as compare.py's --rungs "
                   "(default: every tuned rung)")
    p.add_argument("--markdown", type=Path, help="write the table as Markdown here")
    p.add_argument("--json", type=Path, help="write the environment and the rows as JSON here")
    p.add_argument("--child", help=argparse.SUPPRESS)  # one first call, in a process of its own
    args = p.parse_args()
    if args.child:
        print(json.dumps(first_call(*json.loads(args.child))))
        return 0
    if not torch.cuda.is_available():
        print("first_call.py needs a CUDA device: it times the tuned rungs' searches on a GPU", file=sys.stderr)
        return 2
    rows = []
    for v in args.rungs or all_variants():
        dtype = "bf16" if "bf16" in v.dtypes else v.dtypes[0]
        shape = args.size_16 if PRECISIONS[dtype].dtype.itemsize == 2 else args.size_32
        for s in v.searches:
            label = [v.tag, s.lang, dtype, "x".join(map(str, shape))]
            reason = skip_reason(Task(v, {}, s.lang, shape), dtype, torch.device("cuda"))
            if reason:
                rows.append(label + ["", "", reason, ""])
                continue
            new_shape = tuple(n + NEW_SHAPE_STEP for n in shape)
            with (tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as other,
                  tempfile.TemporaryDirectory() as kernels):
                before = in_fresh_process(cache, v.module, s.lang, dtype, shape, kernels=kernels)  # empty: all built
                after = in_fresh_process(cache, v.module, s.lang, dtype, shape)
                new = in_fresh_process(other, v.module, s.lang, dtype, new_shape, kernels=kernels)
            rows.append(label + [seconds(before), seconds(after), seconds(new), before["choice"], after["choice"]])
            print(" ".join(rows[-1][:6]), file=sys.stderr)
    print(tabulate(rows, HEADER, disable_numparse=True))
    if args.markdown:
        args.markdown.write_text(tabulate(rows, HEADER, "github", disable_numparse=True) + "\n")
    if args.json:
        document = {"environment": environment(torch.device("cuda")), "rows": [dict(zip(HEADER, r)) for r in rows]}
        args.json.write_text(json.dumps(document, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
