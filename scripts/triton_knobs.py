"""What Triton does by itself in the fp32 ladder, measured: each knob off and on (GPU only).

For the rungs whose Triton side is v03's kernel with another knob, time the kernel with the knob
off and on at one size and show the compiler evidence:
- v07 vector loads: argument specialization on / off (`do_not_specialize`), 16-byte loads in the PTX;
- v09 software pipelining: num_stages 1 / 3, shared-memory bytes and cp.async in the PTX;
- v10 warp tiling: num_warps 4 / 8, and the accumulator's layout (sizePerThread, warpsPerCTA);
- v08 swizzled shared memory: the shared-memory layouts in the TTGIR (no knob to turn).
cuBLAS (TF32 off) is timed in the same run for the % column.

    python scripts/triton_knobs.py --size 4096 --out knobs.md
"""

import argparse
import re
import sys
from pathlib import Path

import torch
import triton
from tabulate import tabulate
from triton.testing import do_bench

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from implementations.core.env import set_cublas_math  # noqa: E402
from implementations.core.triton_util import unspecialized  # noqa: E402
from implementations.v03_smem_tiling import smem_tiling_kernel  # noqa: E402
from implementations.v10_warptiling import warptiling_kernel  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=4096, help="N for N³ fp32 (default 4096)")
    p.add_argument("--out", type=Path, help="also write the tables as Markdown here")
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("needs a CUDA device", file=sys.stderr)
        return 2
    set_cublas_math(tf32=False)
    n = args.size
    a, b, c = (torch.randn(n, n, device="cuda") for _ in range(3))
    ms_cublas = do_bench(lambda: torch.matmul(a, b, out=c), rep=200)
    strides = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    tile = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32)

    def run(kernel, grid, **knobs):
        compiled = kernel[grid](a, b, c, n, n, n, *strides, **tile, **knobs)
        ref = a.double() @ b.double()
        error = ((c.double() - ref).norm() / ref.norm()).item()
        ms = do_bench(lambda: kernel[grid](a, b, c, n, n, n, *strides, **tile, **knobs), rep=200)
        return compiled, ms, error

    grid = (triton.cdiv(n, 128), triton.cdiv(n, 128))
    rows = []
    for knob, kernel, knobs in (
        ("v07 specialization on (vector loads)", smem_tiling_kernel, dict(num_warps=8, num_stages=1)),
        ("v07 specialization off", unspecialized(smem_tiling_kernel), dict(num_warps=8, num_stages=1)),
        ("v09 num_stages=1 (v08's launch)", smem_tiling_kernel, dict(num_warps=8, num_stages=1)),
        ("v09 num_stages=3", smem_tiling_kernel, dict(num_warps=8, num_stages=3)),
        ("v10 num_warps=4", warptiling_kernel, dict(num_warps=4, num_stages=3)),
        ("v10 num_warps=8", warptiling_kernel, dict(num_warps=8, num_stages=3)),
    ):
        compiled, ms, error = run(kernel, grid, **knobs)
        ptx, ttgir = compiled.asm["ptx"], compiled.asm["ttgir"]
        rows.append([knob, f"{ms:.3f}", f"{100 * ms_cublas / ms:.1f}", f"{error:.1e}", compiled.metadata.shared,
                     compiled.n_regs, len(re.findall(r"ld\.global(\.\w+)*\.v4", ptx)),
                     _cp_async(ptx, 16), _cp_async(ptx, 4),
                     _layout(ttgir)])
    header = ["Triton knob", "ms", "% cuBLAS", "error", "smem B", "regs", "ld.global.v4", "cp.async 16 B",
              "cp.async 4 B", "accumulator layout"]
    title = (f"{n}³ fp32, {torch.cuda.get_device_name()}, BLOCK 128×128×32; cuBLAS (TF32 off) {ms_cublas:.3f} ms "
             f"in the same run")
    shared = sorted(set(re.findall(r"#ttg\.\w*shared<\{[^}]*\}>", compiled.asm["ttgir"])))
    print(title)
    print(tabulate(rows, header, disable_numparse=True))
    print("\nshared-memory layouts in the TTGIR of v10's kernel:\n" + "\n".join(shared or ["(none found)"]))
    if args.out:
        args.out.write_text(f"{title}\n\n{tabulate(rows, header, tablefmt='github', disable_numparse=True)}\n\n"
                            "shared-memory layouts (TTGIR):\n\n" + "\n".join(f"    {s}" for s in shared) + "\n")
    return 0


def _cp_async(ptx: str, size: int) -> int:
    """cp.async instructions in the PTX that copy `size` bytes (written 16 or 0x10)."""
    sizes = re.findall(r"cp\.async\.(?:ca|cg)\.shared\.global\S* \[[^]]*\], \[[^]]*\], (\w+)", ptx)
    return sum(int(s, 0) == size for s in sizes)


def _layout(ttgir: str) -> str:
    """The blocked layout of the accumulator: the one the dot's result uses."""
    match = re.search(r"tt\.dot .* -> tensor<\d+x\d+xf32, (#\w+)>", ttgir)
    if not match:
        return ""
    definition = re.search(rf"^{re.escape(match.group(1))} = (.*)$", ttgir, re.MULTILINE)
    if not definition:
        return match.group(1)
    fields = re.findall(r"(sizePerThread|threadsPerWarp|warpsPerCTA) = (\[[^]]*\])", definition.group(1))
    return " ".join(f"{k}={v}" for k, v in fields)


if __name__ == "__main__":
    sys.exit(main())
