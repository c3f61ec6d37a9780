"""What a launch costs on the host, and whether per-call event timing sees it.

    python scripts/launch_overhead.py [--size 4096] [--dtype bf16] [--rungs 15]

For cuBLAS and each rung's CUDA C and Triton launch: the host time per call at 128³ (calls issued back
to back, one synchronize at the end, so the GPU is never the bottleneck), then at --size the median of
do_bench's per-call event timing (compare.py's default) beside do_bench_cudagraph's (a CUDA graph
replays the launches with no Python in between).
"""

import argparse
import time

import torch
from tabulate import tabulate
from triton.testing import do_bench, do_bench_cudagraph

from implementations import select
from implementations.core import bench
from implementations.core.check import PRECISIONS, make_inputs
from implementations.core.env import set_fp32_matmul


def host_us(run, calls=300) -> float:
    run()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        run()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def runs(a, b, rungs):
    yield "cuBLAS", bench.cublas_prepare(a, b).run
    for v in select(rungs):
        for lang in ("cuda", "triton"):
            yield f"{v.tag} {lang}", v.prepare(lang, a, b, **v.configs[0]).run


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--rungs", default="15")
    args = parser.parse_args()
    precision = PRECISIONS[args.dtype]
    set_fp32_matmul(tf32=args.dtype == "tf32")
    small = make_inputs(128, 128, 128, precision, "cuda", seed=1)
    large = make_inputs(args.size, args.size, args.size, precision, "cuda", seed=1)
    rows = []
    for (label, run_small), (_, run_large) in zip(runs(*small, args.rungs), runs(*large, args.rungs)):
        run_large()  # the autotuned rungs search here, outside the timing
        events = do_bench(run_large, warmup=25, rep=200)
        graph = do_bench_cudagraph(run_large, rep=200)
        rows.append([label, f"{host_us(run_small):.1f}", f"{events:.4f}", f"{graph:.4f}",
                     f"{(events / graph - 1) * 100:+.1f}%"])
    print(f"{torch.cuda.get_device_name()}, {args.dtype}, events and graph at {args.size}³")
    print(tabulate(rows, ["launch", "host µs/call (128³)", "events ms", "graph ms", "events vs graph"],
                   disable_numparse=True))


if __name__ == "__main__":
    main()
