"""Compiling a search's candidates side by side, before the search times them.

A search binds every candidate first (core/cuda_c.bind, core/triton_util.prebound) and launches each
later; left alone, each compiles at its first launch, one after another, and a cold first call costs the
sum of a dozen compiles. Inside `collecting()`, each bind also leaves a compile step here, and `build`
runs those steps on a thread pool: NVRTC (CUDA C) and Triton's passes and ptxas run outside the GIL, so
a cold search costs about as long as its slowest compiles, not all of them. Triton's own asynchronous
mode (`AsyncCompileMode`) hands its compiles to the pool and puts the results in each kernel's cache.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor

Step = tuple[Hashable, Callable[[Executor], object]]  # (what it compiles, a call that starts compiling it)
_OPEN: list[list[Step]] = []  # open `collecting()` blocks, innermost last


@contextlib.contextmanager
def collecting() -> Iterator[list[Step]]:
    """Collect the compile step of every launch bound inside the block."""
    steps: list[Step] = []
    _OPEN.append(steps)
    try:
        yield steps
    finally:
        _OPEN.pop()


def collecting_now() -> bool:
    """Whether a `collecting()` block is open: a launcher may then leave its compiles to the search."""
    return bool(_OPEN)


def add(key: Hashable, start: Callable[[Executor], object]) -> None:
    """A bound launch's compile step, kept where a `collecting()` block is open. `start(pool)` compiles on
    the pool, or returns at once where there is nothing left to compile."""
    if _OPEN:
        _OPEN[-1].append((key, start))


def build(steps: list[Step]) -> None:
    """Run these compile steps (one per distinct key) side by side. A compile that fails is left to fail
    again at its launch, where the search reports it for its candidate (its error is not read here)."""
    unique = list(dict(steps).values())
    if len(unique) < 2:
        return
    from triton.runtime._async_compile import AsyncCompileMode

    with (ThreadPoolExecutor(max_workers=min(len(unique), os.cpu_count() or 1)) as pool,
          AsyncCompileMode(pool, ignore_errors=True)):
        for start in unique:
            with contextlib.suppress(Exception):
                start(pool)
