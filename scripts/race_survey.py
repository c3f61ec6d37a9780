#!/usr/bin/env python3
"""How reliably does v04's race show? Fresh random inputs, many runs per size, on a GPU.

    python scripts/race_survey.py [--runs 10] [--sizes 17x33x5,128,1024,4096]

For every language and TILE of the broken-on-purpose rung: how many runs the check caught, and the
smallest and median normwise error against the fp32 bound. Evidence for the rung's docstring and for
the sizes the GPU test relies on.
"""

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from implementations import config_label, select
from implementations.core import bench  # noqa: E402
from implementations.core.check import PRECISIONS  # noqa: E402
from implementations.core.cli import parse_sizes  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--sizes", type=parse_sizes, default=parse_sizes("17x33x5,64,128,256,1024,4096"))
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("needs a CUDA device: the race cannot show in Triton's interpreter, and CUDA C needs a GPU")
        return 2
    variant = next(v for v in select() if v.expect_wrong)
    precision, rows, seed = PRECISIONS["fp32"], [], 0
    for shape in args.sizes:
        for lang in ("cuda", "triton"):
            for config in variant.configs:
                errors, failures = [], []
                for _ in range(args.runs):
                    seed += 1
                    r = bench.measure(
                        rung=variant.tag, name=variant.name, config=config_label(config), impl=lang,
                        precision=precision, shape=shape, device=torch.device("cuda"), seed=seed,
                        prepare=lambda a, b, lang=lang, config=config: variant.prepare(lang, a, b, **config),
                        expect_wrong=variant.expect_wrong)
                    if r.error is None:  # the run itself failed (launch, compile, memory): say so, do not count it
                        failures.append(r.note)
                    else:
                        errors.append(r.error)
                caught = sum(not e <= precision.bound(shape[2]) for e in errors)  # NaN counts as caught
                spread = [f"{min(errors):.1e}", f"{np.median(errors):.1e}"] if errors else ["", ""]
                rows.append(["x".join(map(str, shape)), lang, config_label(config), f"{caught}/{len(errors)}",
                             *spread, f"{precision.bound(shape[2]):.1e}", failures[0] if failures else ""])
                print(*rows[-1], flush=True)
    print(tabulate(rows, ["size", "lang", "config", "caught", "min error", "median error", "bound", "failed runs"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
