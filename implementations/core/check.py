"""Correctness: inputs that do not flatter, a float64 reference, and two bounds derived from how each
precision rounds. A result passes only if it is within both, and every element was written.

Normwise: ||C - C_ref||_F / ||C_ref||_F with C_ref = A @ B in float64 from the same inputs, against
4·(u_in + u_out) + 4·sqrt(K)·u_acc (a K-term sum of random-signed terms drifts like sqrt(K)·u_acc; the
factor 4 leaves about ten times what random inputs give). It measures average quality: an all-zero
output fails it (error 1), but a few spoiled elements can hide in it.

Componentwise, for every element, with M = |A|·|B| (the sum of the absolute products, in float64):
    |C - C_ref|_ij <= c·((4·u_in + γ_K)·M_ij + u_out·|C_ref|_ij),   γ_K = K·u_acc / (1 - K·u_acc)
- each operand is rounded to what the matrix unit uses with relative error u_in (tf32: 2^-11; a unit
  that truncates instead makes it 2·u_in), so a product is off by at most (1 + 2·u_in)² - 1 ≈ 4·u_in;
  16-bit and tf32 products are exact in fp32, and an FMA rounds once;
- K such terms summed in fp32 in any order (split-K, stream-K and tensor-core trees included) are off
  by at most γ_K times the sum of their absolute values (Higham, Accuracy and Stability, eq. 3.5);
- rounding the sum to the output dtype adds u_out·|C| (round to nearest), and below the dtype's normal
  range half its subnormal spacing;
- c = 2 covers adders that align to the largest term and truncate (as measured on NVIDIA tensor cores)
  and the float64 reference's own rounding, which is 2^-29 times smaller than u_acc.
This is a worst case, not a tuned tolerance: a wrong element of any size that matters breaks it, and the
report names the worst element (index, value, reference, limit).

An epilogue C = act(A @ B + bias) (EPILOGUES) keeps both bounds: the bias is one more term of the
sum (A @ B + bias = [A 1] @ [B; bias]: K + 1 terms, |bias| joins |A|·|B|), an activation with slope at
most L multiplies the error of its argument by at most L (ReLU 1, GELU 1.13), and GELU evaluated in
fp32 as x·sigmoid(2t), t = √(2/π)·(x + 0.044715·x³) (torch's tanh form, rewritten), is off by at
most (12·|t| + 10)·u_acc relative: exp's argument carries about 6 roundings, each growing by |2t| through
exp, and the add and the division a few more. With integer inputs, ReLU's outputs are exact too.

Inputs (a seed per case, recorded with every result, replays it):
- normal: standard normal, the usual case;
- positive: uniform on [0, 1): no cancellation for an error to hide behind;
- wide: normal times 2^e, e uniform over a dtype-safe range of exponents: a wide dynamic range;
- integers: small integers, whose exact product every precision represents: the output must equal the
  float64 product rounded to the output dtype, bit for bit.
The bias (make_bias) is drawn as a row of B is, times the power of two nearest sqrt(K), so that it is as
large as a typical element of A @ B: a kernel that dropped it would fail.

fp8 (e4m3 operands, each with a per-tensor fp32 scale, bf16 output): C = s_A·s_B·(A @ B); fp8-rowwise: one
scale per row of A and one per column of B, C_ij = s_A[i]·s_B[j]·(A @ B)_ij. The reference is taken from the
stored e4m3 values, so the operands are exact (a product of two e4m3 values is exact in fp32) and u_in is
the fp32 multiplies by the scales. The accumulation is not fp32's: Hopper's fp8 tensor cores keep
about 14 bits when a wgmma adds its k32 block of products to the accumulator (DeepSeek-V3's report,
section 3.3.2; what cuBLASLt calls fast accumulation, and Triton's default on sm_90). A truncation to 14
bits errs by 2^-13, K/32 times: u_acc = 2^-13 / 32 per term of the sum. The scales (make_scales) are
random, not powers of two, except with integer inputs, where powers of two keep the output exact. They
travel as one fp32 tensor: (s_A, s_B), or s_A's M values then s_B's N (split_scales).

Groups (mixture-of-experts, `groups`: rows per group): A holds every group's rows, one after another,
and B one matrix per group; C[rows of g] = A[rows of g] @ B[g]. Each element is still one K-term sum,
so both bounds stand as they are; the reference and |A|·|B| are taken group by group.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

FP32_UNIT_ROUNDOFF = 2.0**-24
SAFETY = 2.0  # c above
INPUTS = ("normal", "positive", "wide", "integers")
# 2^±e: fp16's C stays below 65504, fp8's operands below e4m3's 448
WIDE_EXPONENTS = {"fp16": 4, "bf16": 8, "fp32": 8, "tf32": 8, "fp8": 4, "fp8-rowwise": 4}
INTEGER_RANGE = 4  # integers in [-4, 4]: products <= 16, sums exact in fp32 up to K = 2^20


@dataclass(frozen=True)
class Precision:
    name: str
    dtype: torch.dtype  # the operands' dtype
    u_in: float  # rounding of each operand inside the matrix unit (0: used exactly)
    u_out: float  # rounding of C to its dtype
    description: str
    u_acc: float = FP32_UNIT_ROUNDOFF  # fp32 accumulation (fp8: see above)
    out_dtype: torch.dtype | None = None  # C's dtype, when it is not the operands'
    scaled: str = ""  # "tensor": C = s_A·s_B·(A @ B); "rowwise": a scale per row of A and column of B (make_scales)

    @property
    def c_dtype(self) -> torch.dtype:
        return self.out_dtype or self.dtype

    def bound(self, K: int) -> float:
        """The normwise bound."""
        return 4 * (self.u_in + self.u_out) + 4 * math.sqrt(max(K, 1)) * self.u_acc

    def limits(self, K: int, magnitude: torch.Tensor, ref: torch.Tensor, slope: float = 1.0,
               evaluation: torch.Tensor | float = 0.0) -> torch.Tensor:
        """The componentwise bound on |C - C_ref|, element by element (magnitude = |A|·|B|); with an epilogue,
        `slope` is its activation's largest slope and `evaluation` its fp32 evaluation's relative error."""
        gamma = K * self.u_acc / (1 - K * self.u_acc)
        return SAFETY * (slope * (4 * self.u_in + gamma) * magnitude + (self.u_out + evaluation) * ref.abs()
                         + self.underflow)

    @property
    def underflow(self) -> float:
        """Half the spacing of the output dtype's subnormals: rounding a result below its normal range (GELU far
        below zero) errs by this much at most, not by u_out relative."""
        info = torch.finfo(self.c_dtype)
        return info.smallest_normal * info.eps / 2


PRECISIONS = {
    p.name: p
    for p in (
        Precision("fp32", torch.float32, 0.0, FP32_UNIT_ROUNDOFF, "IEEE fp32 on CUDA cores (TF32 off)"),
        Precision("tf32", torch.float32, 2.0**-11, FP32_UNIT_ROUNDOFF, "fp32 operands rounded to tf32 in tensor cores"),
        Precision("fp16", torch.float16, 0.0, 2.0**-11, "fp16 operands, fp32 accumulation, fp16 output"),
        Precision("bf16", torch.bfloat16, 0.0, 2.0**-8, "bf16 operands, fp32 accumulation, bf16 output"),
        Precision("fp8", torch.float8_e4m3fn, FP32_UNIT_ROUNDOFF, 2.0**-8,
                  "e4m3 operands with per-tensor scales, fast accumulation, bf16 output", u_acc=2.0**-13 / 32,
                  out_dtype=torch.bfloat16, scaled="tensor"),
        Precision("fp8-rowwise", torch.float8_e4m3fn, FP32_UNIT_ROUNDOFF, 2.0**-8,
                  "e4m3 operands with a scale per row of A and column of B, fast accumulation, bf16 output",
                  u_acc=2.0**-13 / 32, out_dtype=torch.bfloat16, scaled="rowwise"),
    )
}


def scales_argument(precision: Precision, device, seed: int, M: int, N: int, kind: str = "normal") -> dict:
    """{"scales": make_scales(...)} for a scaled precision (the keyword a launch of fp8 operands takes), else {}."""
    scales = make_scales(precision, device, seed, M, N, kind)
    return {} if scales is None else {"scales": scales}


def output_dtype(dtype: torch.dtype) -> torch.dtype:
    """C's dtype for operands of this dtype: bf16 for fp8 (as torch._scaled_mm writes it), else the same."""
    return torch.bfloat16 if dtype == PRECISIONS["fp8"].dtype else dtype


SCALES_SEED = 15_485_863  # the scales' seed: the case's seed plus this


def make_scales(precision: Precision, device, seed: int, M: int, N: int, kind: str = "normal") -> torch.Tensor | None:
    """The scales of a scaled precision (fp8) for an M×N product, as one contiguous fp32 tensor: (s_A, s_B) per
    tensor, or s_A's M values then s_B's N (rowwise); None for the others. Uniform on [0.25, 4), or (integer
    inputs) powers of two in that range, which keep C exact."""
    if not precision.scaled:
        return None
    gen = torch.Generator(device="cpu").manual_seed(seed + SCALES_SEED)
    count = M + N if precision.scaled == "rowwise" else 2
    if kind == "integers":
        scales = torch.randint(-2, 2, (count,), generator=gen).float().exp2()
    else:
        scales = (torch.rand(count, generator=gen) * 4 - 2).exp2()
    return scales.to(device)


def rowwise(scales: torch.Tensor) -> bool:
    """Whether the scales are per row of A and column of B (M + N of them) rather than per tensor (two; where
    M = N = 1 the two readings are the same)."""
    return scales.numel() != 2


def split_scales(scales: torch.Tensor, M: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(s_A, s_B) as views: one value each, or (rowwise) A's M rows' and B's columns'."""
    first = M if rowwise(scales) else 1
    return scales[:first], scales[first:]


LAYOUTS = ("nn", "nt", "tn", "tt")  # op(A) then op(B): n as stored, t the transpose of what is stored


def parse_layout(layout: str) -> str:
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; choose from {', '.join(LAYOUTS)} (op(A) then op(B), "
                         "n: row-major as given, t: a transposed view of a row-major matrix)")
    return layout


def draw(shape: tuple[int, ...], kind: str, precision: Precision, gen: torch.Generator) -> torch.Tensor:
    """float32 values of one input kind (see above), on the CPU."""
    if kind == "normal":
        return torch.randn(shape, generator=gen)
    if kind == "positive":
        return torch.rand(shape, generator=gen)
    if kind == "wide":
        e = WIDE_EXPONENTS[precision.name]
        scale = torch.randint(-e, e + 1, shape, generator=gen).float().exp2()
        return torch.randn(shape, generator=gen) * scale
    if kind == "integers":
        return torch.randint(-INTEGER_RANGE, INTEGER_RANGE + 1, shape, generator=gen).float()
    raise ValueError(f"unknown input kind {kind!r}; choose from {', '.join(INPUTS)}")


def make_inputs(M: int, N: int, K: int, precision: Precision, device, seed: int, kind: str = "normal",
                layout: str = "nn", batch: int = 0, groups: tuple[int, ...] = (),
                shared: str = "") -> tuple[torch.Tensor, torch.Tensor]:
    """Fresh A (M×K) and B (K×N) of one input kind (see above), `batch` of each when batch > 0 (but one
    matrix of the operand `shared` names, "a" or "b", broadcast over the batch), or with `groups` (rows per
    group, summing to M) one A and a B per group (G×K×N); the seed is recorded so a failure can be replayed.

    layout: "t" for an operand makes it a transposed view (C = A @ B with A = Sᵀ for a row-major S): the
    kernel sees the strides a column-major operand has. The values do not depend on the layout.
    """
    gen = torch.Generator(device="cpu").manual_seed(seed)
    lead = (batch,) if batch else ()
    if groups:
        if batch or shared or sum(groups) != M:
            raise ValueError("groups and a batch (or a shared operand) do not combine: give one or the other"
                             if batch or shared else f"the groups hold {sum(groups)} rows, but M = {M}")
        parse_layout(layout)
        a = placed_operand(draw((M, K), kind, precision, gen), layout[0], precision, device)
        return a, placed_operand(draw((len(groups), K, N), kind, precision, gen), layout[1], precision, device)

    parse_layout(layout)
    if shared not in ("", "a", "b") or (shared and not batch):
        raise ValueError(f"a shared operand is a or b of a batch, not {shared!r}" if shared not in ("", "a", "b")
                         else "a shared operand needs a batch (--batch B) to be shared by")
    return (placed_operand(draw((*(() if shared == "a" else lead), M, K), kind, precision, gen), layout[0],
                           precision, device),
            placed_operand(draw((*(() if shared == "b" else lead), K, N), kind, precision, gen), layout[1],
                           precision, device))


def placed_operand(t: torch.Tensor, op: str, precision: Precision, device) -> torch.Tensor:
    """Drawn values in the operand's dtype, on the device, as stored (n) or as a transposed view (t)."""
    t = t.to(device=device, dtype=precision.dtype)
    return t.mT.contiguous().mT if op == "t" else t


# Named routings of tokens to experts (`compare.py --groups NAME`): the rows each group receives, and the N and K
# of the experts' weights, the size run when --sizes is not given.
@dataclass(frozen=True)
class Routing:
    name: str
    groups: tuple[int, ...]
    N: int
    K: int
    description: str

    @property
    def shape(self) -> tuple[int, int, int]:
        return sum(self.groups), self.N, self.K


ROUTINGS = {
    r.name: r
    for r in (
        Routing("ramp", (128, 256, 512, 768, 1024, 1536, 2048, 2560), 2048, 4096,
                "8 experts receiving 128 to 2560 rows (8832 in all), N = 2048, K = 4096: every group a multiple of "
                "128 rows, from one tile to twenty"),
        Routing("mixtral", (682, 1391, 978, 1207, 843, 1130, 912, 1049), 14336, 4096,
                "Mixtral-8x7B's expert w1 (K = hidden_size 4096, N = intermediate_size 14336) over 4096 tokens routed "
                "to 2 of 8 experts each (8192 rows), unevenly: a routing chosen for the suite, no group a multiple "
                "of a tile"),
    )
}


def even_groups(M: int, count: int) -> tuple[int, ...]:
    """M rows split into `count` groups as evenly as they go (the first M % count one row more)."""
    return tuple(M // count + (g < M % count) for g in range(count))


@dataclass(frozen=True)
class GroupSpec:
    """How `compare.py --groups` splits each size's M rows: into `count` even groups, into these `rows`, or as
    a named routing (ROUTINGS) does."""

    count: int = 0
    rows: tuple[int, ...] = ()
    routing: str = ""

    def split(self, M: int) -> tuple[int, ...]:
        """The groups of an M-row A, or ValueError saying why these groups cannot hold M rows."""
        if self.count:
            return even_groups(M, self.count)
        rows = ROUTINGS[self.routing].groups if self.routing else self.rows
        if sum(rows) != M:
            given = f"routing {self.routing}" if self.routing else "--groups"
            raise ValueError(f"{given} holds {sum(rows)} rows, but a size has M = {M}: give sizes of "
                             f"{sum(rows)}xNxK")
        return rows


def parse_groups(text: str) -> GroupSpec:
    """"8": eight even groups of each size's rows; "128,0,512": the rows of each group (0: an empty group);
    a routing's name: its rows (ROUTINGS)."""
    text = text.strip().lower()
    if text in ROUTINGS:
        return GroupSpec(routing=text)
    parts = [p.strip() for p in text.split(",")]
    if not all(p.isdigit() for p in parts):
        raise ValueError(f"--groups {text!r}: give a group count (8), the rows of each group (128,0,512) or a "
                         f"routing ({', '.join(ROUTINGS)})")
    if len(parts) == 1:
        if int(parts[0]) == 0:
            raise ValueError("--groups 0: a problem needs at least one group")
        return GroupSpec(count=int(parts[0]))
    return GroupSpec(rows=tuple(int(p) for p in parts))


def make_offsets(groups: tuple[int, ...], device) -> torch.Tensor:
    """torch._grouped_mm's offsets of these groups: int32, each group's end row (group g is rows
    offsets[g - 1]:offsets[g], offsets[-1] = 0 implied)."""
    ends = [0]
    for rows in groups:
        ends.append(ends[-1] + rows)
    return torch.tensor(ends[1:], dtype=torch.int32, device=device)


def by_group(product, a: torch.Tensor, b: torch.Tensor, groups: tuple[int, ...]) -> torch.Tensor:
    """product(A's rows of g, B[g]) for every group, stacked into one float64 M×N tensor."""
    out = torch.empty((a.shape[0], b.shape[-1]), dtype=torch.float64, device=a.device)
    start = 0
    for g, rows in enumerate(groups):
        out[start:start + rows] = product(a[start:start + rows], b[g])
        start += rows
    return out


BIAS_SEED = 7_919  # the bias's seed: the case's seed plus this


def make_bias(N: int, K: int, precision: Precision, device, seed: int, kind: str = "normal") -> torch.Tensor:
    """A fresh bias for C's N columns, in the operands' dtype: one input kind's values (see above) times the
    power of two nearest sqrt(K), as large as a typical element of A @ B (and as exact as the operands)."""
    gen = torch.Generator(device="cpu").manual_seed(seed + BIAS_SEED)
    scale = 2.0 ** round(math.log2(math.sqrt(max(K, 1))))
    return (draw((N,), kind, precision, gen) * scale).to(device=device, dtype=precision.dtype)


@dataclass(frozen=True)
class Epilogue:
    """What a kernel applies to A @ B in registers before it stores C: a bias (a row vector) and an activation."""

    name: str
    bias: bool
    activation: str = ""  # "", "relu" or "gelu" (torch's tanh form)
    slope: float = 1.0  # the activation's largest slope (check above)
    exact: bool = True  # integer inputs give outputs exact to the last bit

    def apply(self, x: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        """act(x + bias) in x's dtype."""
        return self.activate(x + bias.to(x.dtype) if self.bias else x)

    def activate(self, x: torch.Tensor) -> torch.Tensor:
        if self.activation == "relu":
            return F.relu(x)
        if self.activation == "gelu":
            return F.gelu(x, approximate="tanh")
        return x

    def evaluation(self, pre: torch.Tensor) -> torch.Tensor | float:
        """The relative error of the activation evaluated in fp32 at `pre` = A @ B + bias (check above)."""
        if self.activation != "gelu":
            return 0.0
        t = math.sqrt(2 / math.pi) * (pre + 0.044715 * pre**3)
        return (12 * t.abs() + 10) * FP32_UNIT_ROUNDOFF


EPILOGUES = {
    e.name: e
    for e in (
        Epilogue("none", bias=False),
        Epilogue("bias", bias=True),
        Epilogue("bias+relu", bias=True, activation="relu"),
        Epilogue("bias+gelu", bias=True, activation="gelu", slope=1.13, exact=False),
    )
}


def parse_epilogue(name: str) -> Epilogue:
    if name not in EPILOGUES:
        raise ValueError(f"unknown epilogue {name!r}; choose from {', '.join(EPILOGUES)} (C = act(A @ B + bias), "
                         "gelu in torch's tanh form)")
    return EPILOGUES[name]


def scale_factor(scales: torch.Tensor, M: int) -> torch.Tensor:
    """What the product is multiplied by, in float64: s_A·s_B (one element), or the M×N matrix s_A[i]·s_B[j]."""
    s_a, s_b = (s.double() for s in split_scales(scales, M))
    return s_a[:, None] * s_b[None, :] if rowwise(scales) else s_a * s_b


def reference(a: torch.Tensor, b: torch.Tensor, epilogue: str = "none", bias: torch.Tensor | None = None,
              groups: tuple[int, ...] = (), scales: torch.Tensor | None = None) -> torch.Tensor:
    """act(s_A·s_B·(A @ B) + bias) in float64 on the operands' device (a batch of products for 3-D operands; with
    `groups`, A's rows of each group times that group's B; without scales, s_A·s_B = 1; rowwise, s_A[i]·s_B[j])."""
    if groups:
        product = by_group(lambda x, y: x.double() @ y.double(), a, b, groups)
    else:
        product = a.double() @ b.double()
    if scales is not None:
        product *= scale_factor(scales, a.shape[-2])
    return EPILOGUES[epilogue].apply(product, bias)


def magnitude(a: torch.Tensor, b: torch.Tensor, groups: tuple[int, ...] = (),
              scales: torch.Tensor | None = None) -> torch.Tensor:
    """s_A·s_B·(|A| @ |B|) in float64: the sum of the absolute products behind each element (group by group)."""
    if groups:
        size = by_group(lambda x, y: x.double().abs() @ y.double().abs(), a, b, groups)
    else:
        size = a.double().abs() @ b.double().abs()
    if scales is not None:
        size *= scale_factor(scales, a.shape[-2]).abs()
    return size


def poison(c: torch.Tensor) -> None:
    """Fill the output with NaN so that an element no kernel wrote cannot look right."""
    c.fill_(float("nan"))


@dataclass(frozen=True)
class Worst:
    """The element furthest outside (or closest to) its componentwise limit."""

    index: tuple[int, ...]  # (i, j), or (matrix, i, j) in a batch
    value: float
    reference: float
    limit: float

    @property
    def ratio(self) -> float:
        return abs(self.value - self.reference) / self.limit if self.limit > 0 else math.inf

    def __str__(self) -> str:
        where = ", ".join(map(str, self.index))
        return f"C[{where}] = {self.value:.6g}, expected {self.reference:.6g} (limit ±{self.limit:.3g})"


@dataclass(frozen=True)
class CheckOutcome:
    error: float  # normwise relative error (nan if any element is NaN)
    bound: float
    unwritten: int  # NaN elements where the reference is finite
    outside: int = 0  # elements beyond their componentwise limit (or, with exact inputs, not exact)
    worst: Worst | None = None

    @property
    def ok(self) -> bool:
        return self.unwritten == 0 and self.error <= self.bound and self.outside == 0

    def why(self) -> str:
        """Why it failed, in one line ("" when it passed)."""
        if self.unwritten:
            return f"{self.unwritten} NaN elements (unwritten, or NaN computed)"
        if self.outside:
            return f"{self.outside} elements outside their limit; worst {self.worst}"
        if not self.error <= self.bound:
            return f"normwise error {self.error:.2e} above its bound {self.bound:.2e}"
        return ""


def compare(c: torch.Tensor, ref: torch.Tensor, bound: float) -> CheckOutcome:
    """The normwise check alone (and the unwritten count)."""
    diff = c.double() - ref
    ref_norm = torch.linalg.vector_norm(ref).item()
    diff_norm = torch.linalg.vector_norm(diff).item()
    if ref_norm > 0:
        error = diff_norm / ref_norm
    else:  # an all-zero reference (K = 0): only an exact zero output is right
        error = 0.0 if diff_norm == 0 else math.inf
    unwritten = int((torch.isnan(c) & torch.isfinite(ref)).sum().item())
    return CheckOutcome(error, bound, unwritten)


def check(c: torch.Tensor, a: torch.Tensor, b: torch.Tensor, precision: Precision, exact: bool = False,
          epilogue: str = "none", bias: torch.Tensor | None = None, product_rounded: bool = False,
          groups: tuple[int, ...] = (), scales: torch.Tensor | None = None) -> CheckOutcome:
    """C against act(s_A·s_B·(A @ B) + bias): normwise and componentwise (exact: C must be the float64 result rounded to
    C's dtype, where the epilogue keeps integer inputs exact). product_rounded: C was computed as act(fl(A @ B) +
    bias), A @ B rounded to C's dtype first (an unfused sequence): one more rounding, never exact. `groups`: rows
    per group (see above); `scales`: those of a scaled precision (fp8: make_scales)."""
    epi = EPILOGUES[epilogue]
    pre = reference(a, b, "bias" if epi.bias else "none", bias, groups, scales)
    ref = epi.activate(pre)
    K = a.shape[-1] + epi.bias  # the bias is one more term of the sum
    normwise = compare(c, ref, precision.bound(K))
    if c.numel() == 0:
        return normwise
    got = c.double()
    rounded_twice = product_rounded and epi.bias
    if exact and epi.exact and not rounded_twice:
        limit = torch.zeros_like(ref)
        outside = got != ref.to(c.dtype).double()
    else:
        size = magnitude(a, b, groups, scales)
        if epi.bias:
            size += bias.double().abs()  # in place: the check's float64 M×N tensors are what limits the size
        limit = precision.limits(K, size, ref, epi.slope, epi.evaluation(pre))
        if rounded_twice:
            # fl(A @ B) errs by u_out·|A @ B| more, ≤ u_out·size, through the activation's slope; and a GELU
            # applied to the rounded fl(fl(A @ B) + bias) adds that rounding's u_out·|pre| ≤ u_out·size (rounding
            # commutes with ReLU, so there the final rounding is the one the bound already has)
            roundings = 2 if epi.activation == "gelu" else 1
            limit += SAFETY * roundings * epi.slope * precision.u_out * size
        outside = ~((got - ref).abs() <= limit)  # NaN counts as outside
    ratio = torch.where(torch.isnan(got), torch.inf, (got - ref).abs() / limit.clamp_min(torch.finfo(torch.float64).tiny))
    index = tuple(int(i) for i in torch.unravel_index(torch.argmax(ratio), c.shape))
    worst = Worst(index, got[index].item(), ref[index].item(), limit[index].item())
    return CheckOutcome(normwise.error, normwise.bound, normwise.unwritten, int(outside.sum().item()), worst)
