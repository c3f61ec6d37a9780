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
from dataclasses import dataclass
from functools import cache
from typing import Any, NamedTuple

import torch

from .check import PRECISIONS
from .cuda_c import CudaSource
from .search import Search
from .validate import check_operands

RUNG_MODULE = re.compile(r"v(\d{2})_([a-z][a-z0-9_]*)")
RUNGS_PACKAGE = __package__.rpartition(".")[0]  # "implementations": the rung modules live at its top
LANGS = ("cuda", "triton")

# A launcher takes validated, contiguous operands a (M×K), b (K×N), the output c (M×N) and the rung's
# config, checks the config, binds everything a launch needs, and returns a zero-argument `run` that
# only launches (what the timer times) and returns the compiled kernel (CuPy RawKernel, Triton
# CompiledKernel, or None under the interpreter) so that the shared layer can report its resources.
Launcher = Callable[..., Callable[[], Any]]


class Prepared(NamedTuple):
    """A launch with everything allocated: `run()` computes `out` and returns the compiled kernel.

    `operands`: the tensors `run` reads A and B from when they are not the ones it was prepared with
    (copies), so that the check can write fresh inputs into them and run it again."""

    run: Callable[[], Any]
    out: torch.Tensor
    operands: tuple[torch.Tensor, torch.Tensor] | None = None


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

    def __post_init__(self):
        match = RUNG_MODULE.fullmatch(self.stem)
        if match is None:
            raise ValueError(f"{self.module}: rung modules are named vNN_name.py")
        unknown = set(self.dtypes) - set(PRECISIONS)
        if unknown:
            raise ValueError(f"{self.module}: unknown dtypes {sorted(unknown)}; known: {sorted(PRECISIONS)}")
        if not self.configs:
            raise ValueError(f"{self.module}: configs needs at least one entry (use ({{}},) for none)")

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
                **config: int) -> Prepared:
        """Validate, allocate and bind once; the returned `run` only launches.

        Non-contiguous or transposed operands are copied to row-major here, for both languages:
        the CUDA kernels index row-major memory, and the Triton side gets the same operands so
        that the two read the same bytes. `out`: a row-major M×N tensor to write C into (a rank's
        rows of a gathered C) instead of a new one.
        """
        launcher = self.launcher(lang)
        M, N, K = check_operands(
            a, b, dtypes=[PRECISIONS[d].dtype for d in self.dtypes], lang=lang,
            triton_on_cpu=self.triton_interpreted)
        a, b = a.detach().contiguous(), b.detach().contiguous()
        if out is None:
            c = torch.empty((M, N), dtype=a.dtype, device=a.device)
        elif out.shape != (M, N) or out.dtype != a.dtype or out.device != a.device or not out.is_contiguous():
            raise ValueError(f"out must be a contiguous {M}×{N} {a.dtype} tensor on {a.device}, got "
                             f"{tuple(out.shape)} {out.dtype} on {out.device}"
                             + ("" if out.is_contiguous() else ", not contiguous"))
        else:
            c = out
        if M == 0 or N == 0:  # nothing to compute, and CUDA refuses an empty grid
            return Prepared(lambda: None, c, (a, b))
        return Prepared(launcher(a, b, c, **config), c, (a, b))

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

    def matmul(self, lang: str, a: torch.Tensor, b: torch.Tensor, **config: int) -> torch.Tensor:
        """C = A @ B with this rung's `lang` kernel."""
        prepared = self.prepare(lang, a, b, **config)
        prepared.run()
        return prepared.out


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
