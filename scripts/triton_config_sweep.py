"""Time v11's Triton kernel over a wide grid of configs at one size, beside cuBLAS (GPU only).

The autotuner searches a short list; this checks the list is not what holds Triton back. Each config
is checked against float64 before it is timed; configs that fail to compile are listed as such.

    python scripts/triton_config_sweep.py --size 4096 --top 25
"""

import argparse
import sys
from pathlib import Path

import torch
from triton.testing import do_bench

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from implementations import v11_autotuned as v11  # noqa: E402
from implementations.core.env import set_fp32_matmul  # noqa: E402

TILES = [(64, 128), (128, 64), (64, 64), (128, 128), (64, 256), (32, 128), (128, 32), (32, 256)]
SMEM_LIMIT = 200_000  # bytes of pipelined buffers Triton may allocate (H100: 227 KB per block)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=4096, help="N for N³ fp32 (default 4096)")
    p.add_argument("--top", type=int, default=25, help="how many of the fastest configs to print")
    args = p.parse_args()
    set_fp32_matmul(tf32=False)
    n = args.size
    a, b, c = (torch.randn(n, n, device="cuda") for _ in range(3))
    ref = a.double() @ b.double()
    cublas_ms = do_bench(lambda: torch.matmul(a, b, out=c), rep=100)
    space = [(bm, bn, bk, w, s) for bm, bn in TILES for bk in (16, 32, 64) for w in (2, 4, 8) for s in (2, 3, 4, 5)
             if bm * bn // (w * 32) in (16, 32, 64, 128) and (bm * bk + bk * bn) * 4 * (s - 1) <= SMEM_LIMIT]
    print(f"{n}³ fp32, {torch.cuda.get_device_name()}: cuBLAS (TF32 off) {cublas_ms:.3f} ms; {len(space)} configs",
          flush=True)
    results = []
    for bm, bn, bk, warps, stages in space:
        config = v11._config(bm, bn, bk, warps, stages)
        try:
            run = v11.launch_config(a, b, c, config)
            run()
            error = ((c.double() - ref).norm() / ref.norm()).item()
            ms = do_bench(run, warmup=10, rep=40)
        except Exception as exc:  # a config Triton cannot compile (resources): list it, go on
            print(f"{v11.describe(config)}: {type(exc).__name__}", flush=True)
            continue
        results.append((ms, error, config))
    for ms, error, config in sorted(results, key=lambda r: r[0])[:args.top]:
        print(f"{ms:.3f} ms  {100 * cublas_ms / ms:5.1f}% of cuBLAS  error {error:.1e}  {v11.describe(config)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
