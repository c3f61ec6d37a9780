"""Check every tensor-core rung (v12 on) in both languages and every dtype it claims, on awkward and
large shapes, each CUDA candidate and Triton config of v15's and v16's searches included; print one
line per run and a summary.

    python scripts/tensor_core_check.py [--rungs 12-16] [--large 4096]

A quick GPU-side survey for a lent machine (the pytest GPU suite checks the same and more).
"""

import argparse
import sys
import time

import torch

from implementations import select
from implementations.core import bench
from implementations.core.check import PRECISIONS
from implementations.core.env import set_fp32_matmul
from tests.helpers import candidate

SHAPES = [(1, 1, 1), (17, 33, 5), (97, 61, 130), (33, 128, 47), (1000, 1531, 777), (2048, 384, 4100), (300, 520, 64)]


def report(label, shape, r, start):
    error = "n/a" if r.error is None else f"{r.error:.2e} (bound {r.bound:.1e})"
    print(f"{label} {'x'.join(map(str, shape)):>16} {r.status:5} err {error} {time.perf_counter() - start:5.1f} s "
          f"{r.note}", flush=True)


def check_searched_candidates(large: int) -> int:
    """Every CUDA candidate and Triton config of v15's and v16's searches, not only the ones picked."""
    from implementations import v15_warp_specialized as v15
    from implementations import v16_wgmma_tf32 as v16
    from implementations.v11_autotuned import describe

    failures = 0
    for rung, dtypes in ((v15, ("bf16", "fp16")), (v16, ("tf32",))):
        runs = [(f"cuda {tile}", lambda a, b, c, rung=rung, tile=tile: rung.launch_tile(a, b, c, tile))
                for tile in rung.CUDA_CANDIDATES]
        runs += [(f"triton {describe(config)}",
                  lambda a, b, c, rung=rung, config=config: rung.launch_config(a, b, c, config))
                 for config in rung.TRITON_CONFIGS]
        for dtype in dtypes:
            for shape in [(1000, 1531, 777), (300, 520, 64), (large,) * 3]:
                for label, launch in runs:
                    def prepare(a, b, launch=launch):
                        return candidate(a, b, lambda c: launch(a, b, c))

                    start = time.perf_counter()
                    r = bench.measure(rung=rung.VARIANT.tag, name=label, config="", impl=label.split()[0],
                                       precision=PRECISIONS[dtype], shape=shape, device=torch.device("cuda"), seed=8,
                                       prepare=prepare)
                    failures += r.status != bench.STATUS_OK
                    report(f"{rung.VARIANT.tag} {label} {dtype}", shape, r, start)
    return failures


def probe_warp_specialize():
    """Does this Triton accept tl.range(..., warp_specialize=True) on this GPU?"""
    import triton
    import triton.language as tl

    @triton.jit
    def kernel(x_ptr, n, BLOCK: tl.constexpr):
        acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
        for i in tl.range(0, n, warp_specialize=True):
            x = tl.load(x_ptr + i * BLOCK * BLOCK + tl.arange(0, BLOCK)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :])
            acc = tl.dot(x, x, acc)
        tl.store(x_ptr + tl.arange(0, BLOCK)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :], acc.to(tl.float16))

    x = torch.randn(4 * 64 * 64, device="cuda", dtype=torch.float16)
    try:
        kernel[(1,)](x, 4, BLOCK=64, num_warps=4)
        torch.cuda.synchronize()
        print(f"triton {triton.__version__}: warp_specialize=True compiled and ran on this GPU")
    except Exception as exc:
        print(f"triton {triton.__version__}: warp_specialize=True failed: {type(exc).__name__}: {str(exc)[:300]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rungs", default="12-16")
    parser.add_argument("--large", type=int, default=4096, help="one square size added to the shapes")
    args = parser.parse_args()
    set_fp32_matmul(tf32=True)
    failures = 0
    for v in select(args.rungs):
        for dtype in v.dtypes:
            for lang in ("cuda", "triton"):
                for shape in [*SHAPES, (args.large,) * 3]:
                    start = time.perf_counter()
                    r = bench.measure(
                        rung=v.tag, name=v.name, config="", impl=lang, precision=PRECISIONS[dtype], shape=shape,
                        device=torch.device("cuda"), seed=7,
                        prepare=lambda a, b, v=v, lang=lang: v.prepare(lang, a, b, **v.configs[0]))
                    failures += r.status != bench.STATUS_OK
                    report(f"{v.tag} {lang:6} {dtype}", shape, r, start)
    failures += check_searched_candidates(args.large)
    probe_warp_specialize()
    print(f"\n{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
