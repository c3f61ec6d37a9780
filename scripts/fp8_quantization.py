"""What storing operands in e4m3 costs in accuracy, beside bf16, before any kernel runs: standard-normal A and B
(float64) rounded to each format (e4m3 with a per-tensor scale, amax / 448, as v19's operands would be stored),
and the normwise relative error of the rounded operands and of their exact product against the float64 one.
Runs on the CPU in seconds.

    python scripts/fp8_quantization.py
"""

import torch
from tabulate import tabulate

E4M3_MAX = torch.finfo(torch.float8_e4m3fn).max


def stored(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """x as the format holds it, back in float64 (e4m3: divided by its scale first, multiplied back after)."""
    scale = x.abs().max() / E4M3_MAX if dtype == torch.float8_e4m3fn else 1.0
    return (x / scale).to(dtype).double() * scale


def main() -> None:
    gen = torch.Generator().manual_seed(0)
    rows = []
    for K in (1024, 4096):
        a = torch.randn(512, K, generator=gen, dtype=torch.float64)
        b = torch.randn(K, 512, generator=gen, dtype=torch.float64)
        exact = a @ b
        for name, dtype in (("e4m3, per-tensor scale", torch.float8_e4m3fn), ("bf16", torch.bfloat16)):
            qa, qb = stored(a, dtype), stored(b, dtype)
            rows.append([name, f"512x512x{K}", f"{((qa - a).norm() / a.norm()).item():.2e}",
                         f"{((qa @ qb - exact).norm() / exact.norm()).item():.2e}"])
    print(tabulate(rows, ["format", "product", "operand error", "product error (exact arithmetic)"],
                   disable_numparse=True))


if __name__ == "__main__":
    main()
