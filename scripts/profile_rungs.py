"""Run chosen rungs once each inside an NVTX range named "tvc", for Nsight Compute to profile.

Each implementation is prepared and run once first (compile, autotune search: not profiled), then
run once more inside the range. Prints the order of the profiled launches, which is the order of
ncu's rows. scripts/fp32_evidence.sh drives it:

    ncu --nvtx --nvtx-include "tvc/" ... python scripts/profile_rungs.py --rungs 7,8 --size 4096
"""

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from implementations import select  # noqa: E402
from implementations._check import PRECISIONS, make_inputs  # noqa: E402
from implementations._env import set_fp32_matmul  # noqa: E402
from implementations._registry import TunedRun  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rungs", default="6-11", help="rungs as compare.py takes them (default 6-11)")
    p.add_argument("--impl", default="cuda,triton", help="cuda, triton, cublas (comma-separated)")
    p.add_argument("--size", type=int, default=4096, help="N for N³ fp32")
    args = p.parse_args()
    set_fp32_matmul(tf32=False)
    a, b = make_inputs(args.size, args.size, args.size, PRECISIONS["fp32"], "cuda", 0)
    impls = args.impl.split(",")
    runs = []
    if "cublas" in impls:
        c = torch.empty_like(a)
        runs.append(("cuBLAS", lambda c=c: torch.matmul(a, b, out=c)))
    for v in select(args.rungs):
        for lang in (i for i in impls if i != "cublas"):
            run = v.prepare(lang, a, b, **v.configs[0]).run
            run()
            label = f"{v.tag} {v.name} {lang}"
            if isinstance(run, TunedRun):
                label += f" ({run.chosen().split(',')[0].split(' (')[0]})"
            runs.append((label, run))
    torch.cuda.synchronize()
    for i, (label, run) in enumerate(runs):
        torch.cuda.nvtx.range_push("tvc")
        run()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        print(f"profiled {i}: {label}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
