"""Correctness: random inputs, a float64 reference, the normwise error and its bound per precision.

Error = ||C - C_ref||_F / ||C_ref||_F with C_ref = A @ B computed in float64 from the same inputs.
Normwise error makes an all-zero output fail (error 1), and every checked run starts from an output
poisoned with NaN, so an element a kernel never wrote is counted as `unwritten` instead of passing.

The bound comes from how each precision rounds, not from tuning until things pass:
- inputs rounded by the matrix unit (tf32 keeps 10 mantissa bits): about u_in per product;
- products summed in fp32: a K-term sum drifts like sqrt(K)·u_acc for random-signed data;
- the result rounded to the output dtype: u_out.
The bound is 4·(u_in + u_out) + 4·sqrt(K)·u_acc: about ten times what random inputs give (fp32 at
K=4096 lands near 1.5e-6; the bound there is 1.6e-5), while one wrong element in a few thousand, a
race, or a missing tail moves the error by orders of magnitude more.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

FP32_UNIT_ROUNDOFF = 2.0**-24


@dataclass(frozen=True)
class Precision:
    name: str
    dtype: torch.dtype  # the operands' dtype
    u_in: float  # rounding of each operand inside the matrix unit (0: used exactly)
    u_out: float  # rounding of C to its dtype
    description: str
    u_acc: float = FP32_UNIT_ROUNDOFF  # every rung accumulates in fp32

    def bound(self, K: int) -> float:
        return 4 * (self.u_in + self.u_out) + 4 * math.sqrt(max(K, 1)) * self.u_acc


PRECISIONS = {
    p.name: p
    for p in (
        Precision("fp32", torch.float32, 0.0, FP32_UNIT_ROUNDOFF, "IEEE fp32 on CUDA cores (TF32 off)"),
        Precision("tf32", torch.float32, 2.0**-11, FP32_UNIT_ROUNDOFF, "fp32 operands rounded to tf32 in tensor cores"),
        Precision("fp16", torch.float16, 0.0, 2.0**-11, "fp16 operands, fp32 accumulation, fp16 output"),
        Precision("bf16", torch.bfloat16, 0.0, 2.0**-8, "bf16 operands, fp32 accumulation, bf16 output"),
    )
}


def make_inputs(M: int, N: int, K: int, precision: Precision, device, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Fresh standard-normal A (M×K) and B (K×N); the seed is recorded so a failure can be replayed."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    a = torch.randn((M, K), generator=gen, dtype=torch.float32)
    b = torch.randn((K, N), generator=gen, dtype=torch.float32)
    return a.to(device=device, dtype=precision.dtype), b.to(device=device, dtype=precision.dtype)


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """A @ B in float64 on the operands' device."""
    return a.double() @ b.double()


def poison(c: torch.Tensor) -> None:
    """Fill the output with NaN so that an element no kernel wrote cannot look right."""
    c.fill_(float("nan"))


@dataclass(frozen=True)
class CheckOutcome:
    error: float  # normwise relative error (nan if any element is NaN)
    bound: float
    unwritten: int  # NaN elements where the reference is finite

    @property
    def ok(self) -> bool:
        return self.unwritten == 0 and self.error <= self.bound


def compare(c: torch.Tensor, ref: torch.Tensor, bound: float) -> CheckOutcome:
    diff = c.double() - ref
    ref_norm = torch.linalg.vector_norm(ref).item()
    diff_norm = torch.linalg.vector_norm(diff).item()
    if ref_norm > 0:
        error = diff_norm / ref_norm
    else:  # an all-zero reference (K = 0): only an exact zero output is right
        error = 0.0 if diff_norm == 0 else math.inf
    unwritten = int((torch.isnan(c) & torch.isfinite(ref)).sum().item())
    return CheckOutcome(error, bound, unwritten)
