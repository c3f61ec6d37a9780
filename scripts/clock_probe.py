"""SM clock and board power while a grouped product runs the two ways compare.py times it: one call at a
time after an L2 flush (events) and back to back in a CUDA graph (graph), for v18 in both languages and
torch._grouped_mm. A kernel whose graph figure falls below its events figure while the others' do not may be
clocking down under sustained load; the clocks say whether it is. Needs a GPU and pynvml (nvidia-ml-py).

    python scripts/clock_probe.py --groups mixtral --json out/clocks.json
"""

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pynvml  # noqa: E402
import torch  # noqa: E402
from tabulate import tabulate  # noqa: E402
from triton.testing import do_bench, do_bench_cudagraph  # noqa: E402

from implementations.core.bench import grouped_mm_prepare  # noqa: E402
from implementations.core.check import PRECISIONS, ROUTINGS, make_inputs, make_offsets  # noqa: E402
from implementations.v18_grouped import VARIANT  # noqa: E402


def sampled(fn, timer, handle):
    """(ms, median SM clock MHz, median board power W) of `timer(fn)`, NVML read every 5 ms meanwhile."""
    samples, stop = [], threading.Event()

    def sample():
        while not stop.is_set():
            samples.append((pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
                            pynvml.nvmlDeviceGetPowerUsage(handle) / 1000))
            time.sleep(0.005)

    thread = threading.Thread(target=sample)
    thread.start()
    ms = timer(fn)
    stop.set()
    thread.join()
    return ms, statistics.median(c for c, _ in samples), statistics.median(p for _, p in samples)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--groups", choices=sorted(ROUTINGS), default="mixtral")
    p.add_argument("--rep", type=float, default=2000.0, help="ms of each measurement (default 2000)")
    p.add_argument("--json", type=Path, help="write the rows here")
    args = p.parse_args()
    device = torch.device("cuda")
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
    routing = ROUTINGS[args.groups]
    M, N, K = sum(routing.groups), routing.N, routing.K
    a, b = make_inputs(M, N, K, PRECISIONS["bf16"], device, 1, groups=routing.groups)
    offsets = make_offsets(routing.groups, device)
    kernels = {f"v18 {lang}": VARIANT.prepare(lang, a, b, offsets=offsets).run for lang in ("cuda", "triton")}
    kernels["torch._grouped_mm"] = grouped_mm_prepare(a, b, offsets).run
    timers = {"events": lambda fn: do_bench(fn, warmup=100, rep=args.rep, return_mode="median"),
              "graph": lambda fn: do_bench_cudagraph(fn, rep=args.rep, return_mode="median")}
    rows = []
    for name, fn in kernels.items():
        fn()  # compiles and searches
        for timing, timer in timers.items():
            ms, clock, power = sampled(fn, timer, handle)
            rows.append({"kernel": name, "timing": timing, "ms": round(ms, 4),
                         "TFLOP/s": round(2 * M * N * K / ms / 1e9, 1), "SM clock MHz": clock, "power W": round(power)})
            print(rows[-1], flush=True)
    print(tabulate([r.values() for r in rows], list(rows[0]), disable_numparse=True))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"device": torch.cuda.get_device_name(device), "groups": args.groups,
                                         "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
