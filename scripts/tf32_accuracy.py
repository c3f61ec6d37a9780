"""tf32 beside tf32x3 and IEEE fp32: the error each leaves and what it costs, on one GPU, one shape.

    python scripts/tf32_accuracy.py [--size 4096]

Rows: cuBLAS with TF32 off (IEEE) and on; v13's CUDA mma.sync tf32 kernel (operands rounded with
cvt.rna); v13's Triton kernel with input_precision "tf32", "tf32x3" (three tf32 products that recover
fp32-level accuracy) and "ieee" (FMA on CUDA cores); v16 (wgmma, Bᵀ rounded to nearest, A truncated
by the tensor core) in both languages. Error: normwise, against float64, on N(0, 1) data.
"""

import argparse

import torch
from tabulate import tabulate
from triton.testing import do_bench

from implementations.core.check import PRECISIONS, compare, make_inputs, reference
from implementations.core.env import set_cublas_math
from implementations.v12_wmma import launch_dot
from implementations.v13_mma_sync import VARIANT as V13
from implementations.v16_wgmma_tf32 import VARIANT as V16


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=4096)
    n = parser.parse_args().size
    a, b = make_inputs(n, n, n, PRECISIONS["tf32"], "cuda", seed=13)
    ref = reference(a, b)
    c = torch.empty(n, n, device="cuda")

    def cublas(tf32):
        def run():
            torch.matmul(a, b, out=c)
        return lambda: (set_cublas_math(tf32=tf32), run)[1]

    def triton(precision):
        return lambda: launch_dot(a, b, c, BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8,
                                  INPUT_PRECISION=precision, num_warps=8, num_stages=3)

    rows = []
    for label, make in [("cuBLAS, TF32 off (IEEE fp32)", cublas(False)), ("cuBLAS, TF32 on", cublas(True)),
                        ("v13 CUDA mma.sync tf32", lambda: V13.prepare("cuda", a, b)),
                        ("v13 Triton tf32", triton("tf32")), ("v13 Triton tf32x3", triton("tf32x3")),
                        ("v13 Triton ieee", triton("ieee")),
                        ("v16 CUDA wgmma tf32", lambda: V16.prepare("cuda", a, b)),
                        ("v16 Triton wgmma tf32", lambda: V16.prepare("triton", a, b))]:
        made = make()
        run, out = (made.run, made.out) if hasattr(made, "out") else (made, c)
        out.fill_(float("nan"))
        run()
        torch.cuda.synchronize()
        ms = do_bench(run, warmup=25, rep=200, return_mode="median")
        rows.append([label, f"{compare(out, ref, 1.0).error:.2e}", f"{ms:.3f}", f"{2 * n**3 / ms / 1e9:.0f}"])
    set_cublas_math(tf32=False)
    print(f"{n}³ fp32 operands, {torch.cuda.get_device_name()}")
    print(tabulate(rows, ["", "normwise error", "ms", "TFLOP/s"], disable_numparse=True))


if __name__ == "__main__":
    main()
