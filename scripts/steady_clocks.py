"""Steady-state clocks and power: how much of a gap to cuBLAS is cycles, and how much is clock.

    python scripts/steady_clocks.py [--sizes 4096,8192] [--dtype bf16] [--rungs 15] [--seconds 3]

Under a long matrix load an H100 reaches its power limit and lowers its SM clock, so a kernel that spends
more energy per multiply (more cache traffic, say) runs its cycles at a lower clock. For cuBLAS and each
rung's CUDA C and Triton launch, called back to back for --seconds (no L2 flush), nvidia-smi samples the
SM clock and the board power every 100 ms (the first half second of each window is left out). Printed
per launch: ms per call, TFLOP/s, mean SM clock, mean power, GFLOP per joule, and megacycles per call
(ms × clock, the clock-free figure, as Nsight Compute's elapsed cycles are); the time and the cycles
also as % of cuBLAS's.
Two passes, the second in reverse order, averaged.
"""

import argparse
import datetime
import subprocess
import time

import numpy as np
import torch
from launch_overhead import runs
from tabulate import tabulate

from implementations.core.check import PRECISIONS, make_inputs
from implementations.core.env import set_fp32_matmul

QUERY = "timestamp,clocks.sm,power.draw"


def loop(run, seconds: float) -> tuple[float, float, float]:
    """(start, end, ms per call) of calling run back to back for about `seconds`."""
    run()
    torch.cuda.synchronize()
    calls, start = 0, time.time()
    while time.time() - start < seconds:
        for _ in range(20):
            run()
        torch.cuda.synchronize()
        calls += 20
    end = time.time()
    return start, end, (end - start) / calls * 1e3


def samples(text: str) -> list[tuple[float, float, float]]:
    """(unix time, SM MHz, W) rows of nvidia-smi's CSV."""
    rows = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 3:
            continue
        try:
            stamp = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            rows.append((stamp, float(parts[1]), float(parts[2])))
        except ValueError:  # a header or an [N/A]
            continue
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="4096,8192")
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--rungs", default="15")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--smi-index", default="0", help="the GPU as nvidia-smi numbers it (default 0)")
    args = parser.parse_args()
    set_fp32_matmul(tf32=args.dtype == "tf32")
    smi = subprocess.Popen(["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits", "-lms", "100",
                            "-i", args.smi_index], stdout=subprocess.PIPE, text=True)
    windows = []  # (size, label, start, end, ms per call)
    try:
        for n in map(int, args.sizes.split(",")):
            a, b = make_inputs(n, n, n, PRECISIONS[args.dtype], "cuda", seed=1)
            launches = list(runs(a, b, args.rungs))
            for _, run in launches:
                run()  # the autotuned rungs search here, outside the windows
            for order in (launches, launches[::-1]):
                for label, run in order:
                    windows.append((n, label, *loop(run, args.seconds)))
            del a, b, launches
    finally:
        smi.terminate()
    rows_smi = samples(smi.communicate()[0])
    print(f"{torch.cuda.get_device_name()}, {args.dtype}, back to back, {args.seconds} s per launch and pass")
    for n in map(int, args.sizes.split(",")):
        figures = {}
        for size, label, start, end, ms in windows:
            if size != n:
                continue
            inside = [(mhz, w) for t, mhz, w in rows_smi if start + 0.5 <= t <= end]
            mhz, watts = np.mean(inside, axis=0) if inside else (float("nan"), float("nan"))
            figures.setdefault(label, []).append((ms, mhz, watts))
        base_ms, base_mhz, _ = np.mean(figures["cuBLAS"], axis=0)
        table = []
        for label, passes in figures.items():
            ms, mhz, watts = np.mean(passes, axis=0)
            tflops = 2 * n**3 / (ms * 1e-3) / 1e12
            cycles = ms * mhz / 1e3
            table.append([label, f"{ms:.4f}", f"{base_ms / ms:.1%}", f"{tflops:.0f}", f"{mhz:.0f}", f"{watts:.0f}",
                          f"{tflops * 1e3 / watts:.0f}", f"{cycles:.3f}", f"{base_ms * base_mhz / 1e3 / cycles:.1%}"])
        print(f"\n{n}³")
        print(tabulate(table, ["launch", "ms/call", "time % cuBLAS", "TFLOP/s", "SM MHz", "W", "GFLOP/J",
                               "Mcycles/call", "cycles % cuBLAS"], disable_numparse=True))


if __name__ == "__main__":
    main()
