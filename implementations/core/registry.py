"""The ladder's registry: one `Variant` per rung module, discovered from the file names.

A rung is `implementations/vNN_name.py` plus `kernels_cuda/vNN_name.cu`. The module ends with one
`VARIANT = Variant(__name__, ...)`; its number and name come from the file name, so they cannot drift
apart, and nothing else lists the rungs: adding a rung is adding two files.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, NamedTuple

import torch

from . import relayout
from .check import EPILOGUES, LAYOUTS, PRECISIONS, output_dtype, parse_epilogue
from .cuda_c import CudaSource
from .search import Search
from .validate import batch_of, check_bias, check_groups, check_operands, check_scales

RUNG_MODULE = re.compile(r"v(\d{2})_([a-z][a-z0-9_]*)")
RUNGS_PACKAGE = __package__.rpartition(".")[0]  # "implementations": the rung modules live at its top
LANGS = ("cuda", "triton")

# A launcher takes validated, contiguous operands a (M×K), b (K×N), the output c (M×N) and the rung's
# config, checks the config, binds everything a launch needs, and returns a zero-argument `run` that
# only launches (what the timer times) and returns the compiled kernel (CuPy RawKernel, Triton
# CompiledKernel, or None under the interpreter) so that the shared layer can report its resources.
# With an epilogue other than "none" it is also given `epilogue=` (a name of check.EPILOGUES) and `bias=`; for a
# grouped product (a 2-D A of every group's rows, a 3-D B of one matrix per group) `offsets=` (check_groups); fp8
# operands come with `scales=` (s_A, s_B: check.make_scales).
Launcher = Callable[..., Callable[[], Any]]


class Prepared(NamedTuple):
    """A launch with everything allocated: `run()` computes `out` and returns the compiled kernel.

    `operands`: the tensors `run` reads A and B from when they are not the ones it was prepared with
    (copies), so that the check can write fresh inputs into them and run it again; `bias` and `scales` likewise."""

    run: Callable[[], Any]
    out: torch.Tensor
    operands: tuple[torch.Tensor, torch.Tensor] | None = None
    note: str = ""  # what the run does besides the rung's kernel (copies of operands, a launch per matrix)
    bias: torch.Tensor | None = None  # the bias `run` reads, when it is not the one it was prepared with
    product_rounded: bool = False  # A @ B rounded to C's dtype before the epilogue (an unfused sequence)
    host_sync: str = ""  # why `run` cannot be captured in a CUDA graph (it reads device values on the host)
    scales: tuple[torch.Tensor, torch.Tensor] | None = None  # where `run` reads s_A and s_B, when not from the
    # scales it was prepared with


@dataclass(frozen=True)
class Variant:
    module: str  # the rung module's __name__ ("implementations.v03_smem_tiling")
    title: str
    dtypes: tuple[str, ...]
    cuda: Launcher | None
    triton: Launcher | None
    cuda_source: CudaSource | None
    configs: tuple[Mapping[str, int], ...] = ({},)
    expect_wrong: str = ""  # non-empty for a rung broken on purpose: why it is wrong
    min_cc: tuple[int, int] = (7, 0)
    # The BM×BN tile of C one block computes, when no config says it (configs with BM/BN or TILE do,
    # autotuned runs report theirs): the roofline's traffic model (traffic.py). (1, 1): no reuse.
    tile: tuple[int, int] | None = None
    searches: tuple[Search, ...] = ()  # a tuned rung's searches (core/search.py), one per language it tunes
    # The layouts (check.LAYOUTS) each language's kernel reads in place, by language; absent: row-major
    # ("nn") only. Any other layout is copied to one it reads, inside the timed call, by a transposing copy in
    # the same language (core/relayout.py), and the result says so (fp8's wgmma reads both operands K-major
    # only: its rung reads nt alone).
    layouts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # The languages whose kernel computes a whole batch in one launch; the others launch once per matrix
    # (inside the timed call, and the result says so).
    batched: tuple[str, ...] = ()
    # The epilogues (check.EPILOGUES) both languages apply before the store; the others are skipped, with the reason.
    epilogues: tuple[str, ...] = ("none",)
    # The languages whose kernel computes a grouped product (mixture-of-experts: offsets into A's rows, a B per
    # group) in one launch; the others are skipped for grouped problems, with the reason.
    grouped: tuple[str, ...] = ()

    def __post_init__(self):
        match = RUNG_MODULE.fullmatch(self.stem)
        if match is None:
            raise ValueError(f"{self.module}: rung modules are named vNN_name.py")
        unknown = set(self.dtypes) - set(PRECISIONS)
        if unknown:
            raise ValueError(f"{self.module}: unknown dtypes {sorted(unknown)}; known: {sorted(PRECISIONS)}")
        if not self.configs:
            raise ValueError(f"{self.module}: configs needs at least one entry (use ({{}},) for none)")
        unknown = set(self.epilogues) - set(EPILOGUES)
        if unknown:
            raise ValueError(f"{self.module}: unknown epilogues {sorted(unknown)}; known: {', '.join(EPILOGUES)}")
        for lang, layouts in self.layouts.items():
            if lang not in LANGS or not layouts or set(layouts) - set(LAYOUTS):
                raise ValueError(f"{self.module}: layouts maps a language ({', '.join(LANGS)}) to some of the layouts "
                                 f"{', '.join(LAYOUTS)}; got {lang!r}: {layouts!r}")

    @property
    def stem(self) -> str:
        return self.module.rpartition(".")[2]

    @property
    def number(self) -> int:
        return int(self.stem[1:3])

    @property
    def name(self) -> str:
        return self.stem[4:]

    @property
    def tag(self) -> str:
        return self.stem[:3]

    @property
    def doc(self) -> str:
        return sys.modules[self.module].__doc__ or ""

    def launcher(self, lang: str) -> Launcher:
        if lang not in LANGS:
            raise ValueError(f"unknown implementation language {lang!r}; choose from {LANGS}")
        launcher = getattr(self, lang)
        if launcher is None:
            raise ValueError(f"{self.stem} has no {lang} implementation")
        return launcher

    def prepare(self, lang: str, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None,
                epilogue: str = "none", bias: torch.Tensor | None = None, offsets: torch.Tensor | None = None,
                scales: torch.Tensor | None = None, **config: int) -> Prepared:
        """Validate, allocate and bind once; the returned `run` only launches (and does what the kernel
        cannot: the copies of a layout it does not read, a launch per matrix of a batch without a batched
        kernel; both inside the timed call, and named in `Prepared.note`).

        a, b: matrices (M×K, K×N) or batches of them (3-D; one may stay 2-D, shared by the batch), each
        row-major or a transposed view of a row-major tensor. `out`: a row-major C to write into (a rank's
        rows of a gathered C) instead of a new one. `epilogue`: C = act(A @ B + bias) (check.EPILOGUES), one the
        rung declares, with `bias` (N elements of the operands' dtype) where it adds one. `offsets`: a grouped
        product (C[rows of g] = A[rows of g] @ B[g]; validate.check_groups), in a language the rung declares grouped.
        `scales`: fp8 operands' (s_A, s_B), C = s_A·s_B·(A @ B) in bf16, or a scale per row of A and column of B
        (validate.check_scales).
        """
        launcher = self.launcher(lang)
        M, N, K = check_operands(
            a, b, dtypes=[PRECISIONS[d].dtype for d in self.dtypes], lang=lang,
            triton_on_cpu=self.triton_interpreted)
        if parse_epilogue(epilogue).name not in self.epilogues:
            raise ValueError(f"{self.stem} fuses no {epilogue} epilogue; it applies {', '.join(self.epilogues)}")
        check_bias(bias, a, N, EPILOGUES[epilogue].bias)
        fused = {} if epilogue == "none" else {"epilogue": epilogue, "bias": bias.detach()}
        check_scales(scales, a, b, a.dtype == PRECISIONS["fp8"].dtype)
        if scales is not None:
            fused["scales"] = scales
        if offsets is not None:
            check_groups(a, b, offsets)
            if lang not in self.grouped:
                raise ValueError(f"{self.stem} {lang} has no grouped kernel")
            fused["offsets"] = offsets
        batch = batch_of(a, b)
        batched = max(a.dim(), b.dim()) == 3 and offsets is None
        a, b = a.detach(), b.detach()
        shape, c_dtype = (batch, M, N) if batched else (M, N), output_dtype(a.dtype)
        if out is None:
            c = torch.empty(shape, dtype=c_dtype, device=a.device)
        elif out.shape != shape or out.dtype != c_dtype or out.device != a.device or not out.is_contiguous():
            raise ValueError(f"out must be a contiguous {'×'.join(map(str, shape))} {c_dtype} tensor on {a.device}, "
                             f"got {tuple(out.shape)} {out.dtype} on {out.device}"
                             + ("" if out.is_contiguous() else ", not contiguous"))
        else:
            c = out
        if M == 0 or N == 0 or (batched and batch == 0):  # nothing to compute (no rows: no group has any either)
            return Prepared(lambda: None, c, (a, b))
        layout, copied = self.read_layout(lang, a, b)
        operands = tuple(stored_as(t, layout[i]) if name in copied else t for i, (name, t) in enumerate((("A", a), ("B", b))))
        notes = [f"copies {' and '.join(copy_text(name, layout[i]) for i, name in enumerate('AB') if name in copied)} "
                 f"inside the timed call ({self.stem} {lang} reads {', '.join(self.layouts.get(lang, ('nn',)))} in "
                 f"place; this is {layout_of(a) + layout_of(b)})"] if copied else []
        if not batched or lang in self.batched:
            launches = [launcher(*operands, c, **fused, **config)]
        else:
            pick = [(lambda i, t=t: t[i]) if t.dim() == 3 else (lambda i, t=t: t) for t in operands]
            launches = [launcher(pick[0](i), pick[1](i), c[i], **fused, **config) for i in range(batch)]
            notes.append(f"one launch per matrix of the batch of {batch} ({self.stem} {lang} has no batched kernel)")
        copies = [relayout.bind(lang, dst, src) for dst, src in zip(operands, (a, b)) if dst is not src]
        if len(launches) == 1 and not copies:
            return Prepared(launches[0], c, (a, b))

        def run():
            for copy in copies:
                copy()
            for launch in launches:
                kernel = launch()
            return kernel

        return Prepared(run, c, (a, b), "; ".join(notes))

    def read_layout(self, lang: str, a: torch.Tensor, b: torch.Tensor) -> tuple[str, list[str]]:
        """The layout the kernel will read and the operands ("A", "B") to copy for it (stored_as): none when it
        reads this layout in place, else one copy where one suffices (the smaller operand; at equal sizes, the
        layout declared first, the rung's fastest), else both (its first layout)."""
        native = self.layouts.get(lang, ("nn",))
        for layout in native:
            if all(reads_as(t, want) for t, want in zip((a, b), layout)):
                return layout, []
        single = [(t.numel(), i, layout, [name]) for i, layout in enumerate(native)
                  for name, t, other, want in (("A", a, b, layout[1]), ("B", b, a, layout[0])) if reads_as(other, want)]
        if single:
            return min(single, key=lambda option: option[:2])[2:]
        return native[0], ["A", "B"]

    @property
    def triton_interpreted(self) -> bool:
        """Whether this rung's Triton kernels run in the interpreter (decided when they were defined)."""
        from triton.runtime.interpreter import InterpretedFunction

        return any(isinstance(obj, InterpretedFunction) for home in self.homes for obj in vars(home).values())

    @property
    def homes(self) -> list:
        """The modules where this rung's kernels may live: its own, and those of the earlier rungs whose
        launch helpers it imports (v05-v09 launch v03's kernel through `launch_smem_tiling`)."""
        module = sys.modules[self.module]
        found = {module} | {sys.modules[obj.__module__] for obj in vars(module).values()
                            if callable(obj) and getattr(obj, "__module__", "").startswith(RUNGS_PACKAGE + ".v")}
        return sorted(found, key=lambda m: m.__name__)

    def matmul(self, lang: str, a: torch.Tensor, b: torch.Tensor, epilogue: str = "none",
               bias: torch.Tensor | None = None, offsets: torch.Tensor | None = None,
               scales: torch.Tensor | None = None, **config: int) -> torch.Tensor:
        """C = act(A @ B + bias) with this rung's `lang` kernel (C = A @ B without an epilogue; with `offsets`, the
        grouped product; fp8: C = s_A·s_B·(A @ B))."""
        prepared = self.prepare(lang, a, b, epilogue=epilogue, bias=bias, offsets=offsets, scales=scales, **config)
        prepared.run()
        return prepared.out


def stored_as(t: torch.Tensor, op: str) -> torch.Tensor:
    """An empty operand of t's shape to copy t into: row-major (op "n") or a transposed view of a row-major
    matrix (op "t": K-major for B)."""
    if op == "n":
        return torch.empty(t.shape, dtype=t.dtype, device=t.device)
    return torch.empty(t.mT.shape, dtype=t.dtype, device=t.device).mT


def copy_text(name: str, op: str) -> str:
    return f"{name} to row-major" if op == "n" else f"{name} to a transposed view (its rows of K contiguous)"


def layout_of(t: torch.Tensor) -> str:
    """"n" for a row-major matrix (or batch of them), "t" for a transposed view of one, "" for other strides (a
    matrix of one row or column is both: "n")."""
    return "n" if reads_as(t, "n") else "t" if reads_as(t, "t") else ""


def reads_as(t: torch.Tensor, op: str) -> bool:
    """Whether a kernel can read t as op: "n" row-major (or a batch of such matrices), "t" a transposed view of
    one."""
    matrix = relayout.matrix(t)
    return (matrix if op == "n" else matrix.mT).is_contiguous()


@cache
def all_variants() -> tuple[Variant, ...]:
    """Every rung module in this package, in ladder order."""
    package = importlib.import_module(RUNGS_PACKAGE)
    found = []
    for info in pkgutil.iter_modules(package.__path__):
        if RUNG_MODULE.fullmatch(info.name) is None:
            continue
        module = importlib.import_module(f"{RUNGS_PACKAGE}.{info.name}")
        variant = getattr(module, "VARIANT", None)
        if not isinstance(variant, Variant) or variant.module != module.__name__:
            raise TypeError(f"{module.__name__} must define VARIANT = Variant(__name__, ...)")
        found.append(variant)
    found.sort(key=lambda v: v.number)
    numbers = [v.number for v in found]
    if len(set(numbers)) != len(numbers):
        raise ValueError(f"two rung modules share a number: {[v.stem for v in found]}")
    return tuple(found)


def _rung_number(token: str, variants: tuple[Variant, ...]) -> int | None:
    token = token.strip().lower()
    for v in variants:
        if token in (v.stem, v.name, v.tag):
            return v.number
    digits = token[1:] if token.startswith("v") else token
    return int(digits) if digits.isdigit() else None


def select(spec: str | None = None) -> list[Variant]:
    """Rungs by number, tag, name or range: "3", "v03", "smem_tiling", "1-3", "1,3-4". None: all."""
    variants = all_variants()
    if not spec:
        return list(variants)
    chosen: set[int] = set()
    for part in spec.split(","):
        first, dash, last = part.partition("-")
        lo = _rung_number(first, variants)
        hi = _rung_number(last, variants) if dash else lo
        matched = {v.number for v in variants if lo is not None and hi is not None and lo <= v.number <= hi}
        if not matched:
            known = ", ".join(f"{v.number} ({v.name})" for v in variants)
            raise ValueError(f"no rung matches {part.strip()!r}; rungs: {known}")
        chosen |= matched
    return [v for v in variants if v.number in chosen]


def config_label(config: Mapping[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items())
