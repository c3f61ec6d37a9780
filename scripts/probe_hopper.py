"""Hopper probe (issue 4): every candidate of v15's and v16's searches timed beside cuBLAS, with errors.

    python scripts/probe_hopper.py [--sizes 4096] [--extra] [--no-tf32]

For each size: cuBLAS bf16, each v15 CUDA candidate (the cluster ones included) and Triton config;
cuBLAS TF32, each v16 CUDA candidate and Triton config, and what Triton makes of a plain `tl.dot` on
N-major fp32 B (v14's kernel on fp32 operands) and what transposing B with torch costs. --extra adds
Triton configs outside v16's search. Times are do_bench medians in ms; % is of cuBLAS in this run.
"""

import argparse

import torch
import triton
from triton.testing import do_bench

from implementations import v15_warp_specialized as v15
from implementations import v16_wgmma_tf32 as v16
from implementations.core.check import PRECISIONS, compare, make_inputs, reference
from implementations.core.env import set_fp32_matmul
from implementations.v11_autotuned import describe
from implementations.v14_wgmma_tma import launch_tma_persistent

EXTRA_TF32 = [v15.tma_config(256, 128, 32, 8, 4, group_m=16), v15.tma_config(256, 128, 16, 8, 4),
              v15.tma_config(256, 64, 32, 4, 4), v15.tma_config(256, 128, 64, 8, 2)]


def line(label, run, out, ref, base_ms):
    out.fill_(float("nan"))
    try:
        run()
        torch.cuda.synchronize()
        error = compare(out, ref, 1.0).error
        ms = do_bench(run, warmup=25, rep=200)
        print(f"  {label:58} {ms:8.4f} ms {base_ms / ms:7.1%}  err {error:.2e}", flush=True)
    except Exception as exc:  # a candidate that fails is reported, and the survey goes on
        print(f"  {label:58} failed: {type(exc).__name__}: {str(exc)[:200]}", flush=True)


def probe(n: int, extra: bool, tf32: bool) -> None:
    a, b = make_inputs(n, n, n, PRECISIONS["bf16"], "cuda", seed=3)
    ref = reference(a, b)
    c = torch.empty(n, n, device="cuda", dtype=a.dtype)
    base = do_bench(lambda: a @ b, warmup=25, rep=200)
    print(f"{n}³ bf16: cuBLAS {base:.4f} ms", flush=True)
    for tile in v15.CUDA_CANDIDATES:
        line(f"v15 cuda {tile}", v15.launch_tile(a, b, c, tile), c, ref, base)
    for config in v15.TRITON_CONFIGS:
        line(f"v15 triton {describe(config)}", v15.launch_config(a, b, c, config), c, ref, base)
    if not tf32:
        return

    set_fp32_matmul(tf32=True)
    a, b = make_inputs(n, n, n, PRECISIONS["tf32"], "cuda", seed=3)
    ref = reference(a, b)
    c = torch.empty(n, n, device="cuda")
    base = do_bench(lambda: a @ b, warmup=25, rep=200)
    print(f"{n}³ tf32: cuBLAS {base:.4f} ms; torch transpose of B {do_bench(lambda: b.t().contiguous()):.4f} ms")
    line("cuBLAS TF32", lambda: torch.matmul(a, b, out=c), c, ref, base)
    for tile in v16.CUDA_CANDIDATES:
        line(f"v16 cuda {tile}", v16.launch_tile(a, b, c, tile), c, ref, base)
    for config in [*v16.TRITON_CONFIGS, *(EXTRA_TF32 if extra else [])]:
        line(f"v16 triton {describe(config)}", v16.launch_config(a, b, c, config), c, ref, base)
    for bm, bn, bk in ((128, 256, 32), (128, 128, 32)):
        run = launch_tma_persistent(a, b, c, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_warps=8, num_stages=3)
        line(f"v14 triton kernel on fp32, N-major B, {bm}x{bn}x{bk}", run, c, ref, base)
    set_fp32_matmul(tf32=False)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="4096")
    parser.add_argument("--extra", action="store_true")
    parser.add_argument("--no-tf32", action="store_true", help="bf16 only: leave out v16 and cuBLAS TF32")
    args = parser.parse_args()
    print(torch.cuda.get_device_name(), "triton", triton.__version__, flush=True)
    for n in map(int, args.sizes.split(",")):
        probe(n, args.extra, not args.no_tf32)


if __name__ == "__main__":
    main()
