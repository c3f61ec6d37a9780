"""What a launch costs the host, by path: cuBLAS through torch, v15's CUDA C through CuPy (arguments bound
once), and v15's Triton kernel through `kernel[grid]` (every argument bound and specialized at each call)
and bound once (core/triton_util.prebound), on a product small enough that the launch is the cost.

For each path, the median of five runs: the host's time per call over many calls issued back to back (no
synchronisation between them: the CPU's share; once the GPU falls behind, the launch queue fills and the
host waits for it) and the time per call until the GPU has finished them all (the user's share); then the
call's time replayed in a CUDA graph (the GPU's share, no launch at all). Needs a GPU.

    python scripts/launch_cost.py --size 256 --json out/launch_cost.json --markdown out/launch_cost.md
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from tabulate import tabulate  # noqa: E402
from triton.testing import do_bench_cudagraph  # noqa: E402

from implementations import v15_warp_specialized as v15  # noqa: E402
from implementations.core.check import PRECISIONS, check, make_inputs  # noqa: E402
from implementations.core.env import environment  # noqa: E402

HEADER = ["path", "host µs per call", "µs per call, GPU done", "kernel µs (CUDA graph)", "output"]
CALLS, REPEATS = 2000, 5


def per_call(fn, calls: int, repeats: int = REPEATS) -> tuple[float, float]:
    """(host µs per call, µs per call until the GPU is done) over `calls` back-to-back calls, after a warm-up:
    the median of `repeats` such runs (the host's times jitter)."""
    for _ in range(100):
        fn()
    runs = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        issued = time.perf_counter()
        torch.cuda.synchronize()
        done = time.perf_counter()
        runs.append((1e6 * (issued - start) / calls, 1e6 * (done - start) / calls))
    return tuple(statistics.median(run[i] for run in runs) for i in range(2))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=256, help="n of the bf16 n³ product (default 256)")
    p.add_argument("--calls", type=int, default=CALLS, help=f"calls per path (default {CALLS})")
    p.add_argument("--json", type=Path, help="write the environment and the rows as JSON here")
    p.add_argument("--markdown", type=Path, help="write the table as Markdown here")
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("launch_cost.py needs a CUDA device: it times launches on a GPU", file=sys.stderr)
        return 2
    precision = PRECISIONS["bf16"]
    a, b = make_inputs(args.size, args.size, args.size, precision, "cuda", 1)
    c = torch.empty(args.size, args.size, device="cuda", dtype=a.dtype)
    tile = v15.Tile(64, 5, 1, 8, 0, 64)
    config = v15.TRITON_CONFIGS[-1]  # 64×64 tiles, the small products' choice
    _, cuda_runs = v15.prepare_cuda(a, b, c, (tile,))
    _, triton_runs = v15.prepare_triton(a, b, c, (config,))
    triton = triton_runs[config]
    paths = {
        "cuBLAS (torch.matmul, out=)": lambda: torch.matmul(a, b, out=c),
        f"v15 CUDA C, CuPy, bound once ({tile})": cuda_runs[tile],
        "v15 Triton, kernel[grid] each call": triton.jit,
        "v15 Triton, bound once (prebound)": triton,
    }
    rows = []
    for name, fn in paths.items():
        c.fill_(float("nan"))
        host, total = per_call(fn, args.calls)
        right = check(c, a, b, precision).ok
        kernel = 1000 * do_bench_cudagraph(fn, rep=50)
        rows.append([name, f"{host:.2f}", f"{total:.2f}", f"{kernel:.2f}", "ok" if right else "WRONG"])
        print(" | ".join(rows[-1]), file=sys.stderr)
    title = f"bf16 {args.size}³, {args.calls} calls back to back, the median of {REPEATS} runs"
    print(title)
    print(tabulate(rows, HEADER, disable_numparse=True))
    if args.markdown:
        args.markdown.write_text(f"{title}\n\n" + tabulate(rows, HEADER, "github", disable_numparse=True) + "\n")
    if args.json:
        document = {"environment": environment(torch.device("cuda")), "size": args.size, "calls": args.calls,
                    "rows": [dict(zip(HEADER, r)) for r in rows]}
        args.json.write_text(json.dumps(document, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
