"""Every v15 Triton configuration the search could be given at the few-tile shapes (the persistent ones and
split-K over tile sizes, slice counts and ring depths), and the CUDA C candidates at a ragged and an aligned
large shape with each L2 promotion of their tensor maps, all timed in CUDA graphs against cuBLAS; each
output checked. What chose v15's SPLIT_K_CONFIGS, and what ruled out L2 promotion as the cause of the
Triton kernel's loss at ragged shapes (docs/notes/v15.md). Needs an H100 or H200; about three minutes.

    python scripts/small_probe.py --json out/small_probe.json
"""

import argparse
import itertools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from triton.testing import do_bench_cudagraph  # noqa: E402

from implementations import v15_warp_specialized as v15  # noqa: E402
from implementations.core.check import PRECISIONS, check, make_inputs  # noqa: E402

PRECISION = PRECISIONS["bf16"]
FEW_TILES = [(16, 4096, 4096), (128, 8192, 8192), (1024, 1024, 1024), (512, 512, 512), (256, 256, 256),
             (64, 8192, 8192), (16, 14336, 4096)]
LARGE = [(3000, 5000, 7000), (3072, 5120, 7168)]


def split_k_configs():
    """Split-K over 64- and 128-row tiles of 64 to 256 columns, 2 to 8 slices, 4 or 6 stages (those that fit)."""
    return [v15.tma_config(bm, bn, 64, 4 if bm * bn <= 64 * 128 else 8, stages, SPLIT_K=split)
            for bm, bn, split, stages in itertools.product((64, 128), (64, 128, 256), (2, 3, 4, 6, 8), (4, 6))
            if not (bm == 128 and bn == 256 and (stages == 6 or split > 4))]


def probe(label, shape, prepare, out):
    """Time and check every run `prepare(a, b, c)` binds, print the fastest twelve, keep all in `out`."""
    a, b = make_inputs(*shape, PRECISION, "cuda", 1)
    c = torch.empty(shape[0], shape[1], device="cuda", dtype=a.dtype)
    refresh, runs = prepare(a, b, c)
    results = {}
    for cand, run in runs.items():
        def call(run=run):
            refresh()
            run()
        try:
            call()
            right = check(c, a, b, PRECISION).ok
            results[str(cand)] = (1000 * do_bench_cudagraph(call, rep=30), right)
        except Exception as exc:  # a configuration that does not fit (shared memory) is reported, not fatal
            results[str(cand)] = (None, str(exc).splitlines()[0][:100])
    cublas = 1000 * do_bench_cudagraph(lambda: torch.matmul(a, b), rep=30)
    print(f"== {label} {shape}: cuBLAS {cublas:.2f} µs", flush=True)
    ranked = sorted((r for r in results.items() if r[1][0]), key=lambda r: r[1][0])
    for cand, (us, right) in ranked[:12]:
        print(f"   {us:8.2f} µs {100 * cublas / us:5.1f}% {'ok' if right is True else 'WRONG'}  {cand}", flush=True)
    out[f"{label} {shape}"] = {"cublas_us": cublas, "runs": results}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", type=Path, help="write every time and check here")
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("small_probe.py needs a CUDA device (sm_90): it times Hopper kernels", file=sys.stderr)
        return 2
    out = {}
    configs = v15.TRITON_CONFIGS + tuple(split_k_configs())
    for shape in FEW_TILES:
        probe("triton", shape, lambda a, b, c: v15.prepare_triton(a, b, c, configs), out)
    for shape in LARGE:
        for promotion in (256, 128, 0):
            probe(f"cuda promotion {promotion}", shape,
                  lambda a, b, c, p=promotion: v15.prepare_cuda(a, b, c, v15.CUDA_CANDIDATES[:5], l2_promotion=p), out)
        probe("triton", shape, lambda a, b, c: v15.prepare_triton(a, b, c, v15.TRITON_CONFIGS), out)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
