"""Where v15 Triton's time goes at small sizes: its knobs and its autotuner, one at a time.

    python scripts/triton_launch_probe.py [--sizes 256,512,1024] [--dtype bf16]

Under compare.py's per-call event timing (an L2 flush before each call) v15 Triton is several times
slower than its kernel below 2048³, while CUDA-graph timing shows the kernel itself is fast. For each
size this times, beside cuBLAS: v15 Triton as compare.py launches it (autotuned), its chosen config
launched directly, and v14's kernel with the same block shape and each of v15's two knobs (FLATTEN,
C_BY_TMA) off and on. Per launch: host µs per call (calls back to back at that size, one synchronize),
do_bench event ms, do_bench_cudagraph ms.
"""

import argparse

import torch
from launch_overhead import host_us
from tabulate import tabulate
from triton.testing import do_bench, do_bench_cudagraph

from implementations.core import bench
from implementations import v14_wgmma_tma as v14
from implementations import v15_warp_specialized as v15
from implementations.core.check import PRECISIONS, make_inputs


def launches(a, b, c):
    yield "cuBLAS", bench.cublas_prepare(a, b).run
    tuned = v15.warp_specialized_triton(a, b, c)
    tuned()  # the search, outside the timing
    best = v15.tuned_kernel.best_config
    yield f"v15 Triton autotuned ({v15.describe(best)})", tuned
    yield "v15 Triton, that config launched directly", v15.launch_config(a, b, c, best)
    shape = {k: best.kwargs[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}
    box = [shape["BLOCK_M"], shape["BLOCK_N"] // 2]
    for flatten in (False, True):
        for by_tma in (False, True):
            c_args = v15.c_descriptor(c, box) if by_tma else {"c_desc": None, "C_BY_TMA": False}
            yield (f"v14 kernel, that shape, FLATTEN={flatten} C_BY_TMA={by_tma}",
                   v14.launch_tma_persistent(a, b, c, **shape, num_warps=best.num_warps, num_stages=best.num_stages,
                                             FLATTEN=flatten, **c_args))
    yield "v14 Triton as v14 launches it", v14.wgmma_tma_triton(a, b, c)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="256,512,1024")
    parser.add_argument("--dtype", default="bf16")
    args = parser.parse_args()
    for n in map(int, args.sizes.split(",")):
        a, b = make_inputs(n, n, n, PRECISIONS[args.dtype], "cuda", seed=1)
        c = torch.empty(n, n, device="cuda", dtype=a.dtype)
        rows = []
        for label, run in launches(a, b, c):
            rows.append([label, f"{host_us(run):.1f}", f"{do_bench(run, warmup=25, rep=200):.4f}",
                         f"{do_bench_cudagraph(run, rep=200):.4f}"])
        print(f"\n{torch.cuda.get_device_name()}, {args.dtype}, {n}³")
        print(tabulate(rows, ["launch", "host µs/call", "events ms", "graph ms"], disable_numparse=True), flush=True)


if __name__ == "__main__":
    main()
