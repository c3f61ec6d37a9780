"""Triton helpers shared by the rungs: launch checks and what a compiled kernel reports."""

from __future__ import annotations

import functools
import inspect

import triton

from ._validate import Refused, check_tile


def check_blocks(**sides: int) -> None:
    """`tl.dot` takes power-of-two blocks with every side at least 16: check each named side."""
    for name, value in sides.items():
        check_tile(value)
        if value < 16 or value & (value - 1):
            raise Refused(f"{name}={value}: Triton's tl.dot needs power-of-two block sides of at least 16")


def warps_for(threads: int) -> int:
    """num_warps for a program that should have as many threads as the CUDA block it stands beside."""
    warps, rest = divmod(threads, 32)
    if rest or warps < 1 or warps > 32 or warps & (warps - 1):
        raise ValueError(f"{threads} threads is not a power-of-two number of warps between 1 and 32")
    return warps


def unspecialized(kernel):
    """`kernel` jitted again with Triton's argument specialization off (`do_not_specialize` on every
    runtime argument): it can no longer prove alignment or unit strides, so it loads one element at a
    time. The knob behind Triton's vector loads (scripts/triton_knobs.py, tests/test_gpu.py)."""
    params = [name for name, p in inspect.signature(kernel.fn).parameters.items()
              if p.annotation is inspect.Parameter.empty]
    return triton.jit(kernel.fn, do_not_specialize=params)


def settled(tuned, grid, args: tuple):
    """(run, chosen) for `tuned`, a `triton.autotune`d kernel, on fixed arguments.

    The first call goes through the autotuner, which searches. Later calls launch the config it chose
    directly, because the autotuner does work on every call: it re-derives its cache key, rebuilds the
    argument dict and runs the config's pre_hook. At small sizes that is most of a call. v15's Triton
    side took 30 µs at 256³-1024³, where v14's (the same kernel, launched directly) took 8-13 µs.
    `chosen()` is the config picked, or None before the first call.
    """
    picked: list = []

    def run():
        if picked:
            return picked[1]()
        out = tuned[grid](*args)
        best = tuned.best_config
        if best.pre_hook is not None:  # leave the arguments as the chosen config wants them (TMA boxes)
            best.pre_hook({**dict(zip(tuned.arg_names, args)), **best.all_kwargs()})
        picked[:] = [best, functools.partial(tuned.fn[grid], *args, **best.all_kwargs())]
        return out

    return run, lambda: picked[0] if picked else None
