"""Triton helpers shared by the rungs: launch checks and what a compiled kernel reports."""

from __future__ import annotations

import functools
import inspect
import types

import triton

from . import prebuild
from .validate import Refused, check_tile


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
    time. The knob behind Triton's vector loads (scripts/triton_knobs.py, tests/rungs/test_v07.py)."""
    params = [name for name, p in inspect.signature(kernel.fn).parameters.items()
              if p.annotation is inspect.Parameter.empty]
    return triton.jit(kernel.fn, do_not_specialize=params)


def python_function(obj):
    """The plain Python function behind a Triton kernel (an autotuner wraps a JITFunction, or an
    interpreted one, which wraps the function) or behind any other object that keeps it in `.fn`."""
    while not isinstance(obj, types.FunctionType) and hasattr(obj, "fn"):
        obj = obj.fn
    return obj


def describe_config(config: triton.Config) -> str:
    """A `triton.Config` in one line, as the searches report it."""
    knobs = " ".join(f"{k}={v}" for k, v in config.kwargs.items())
    return f"{knobs} num_warps={config.num_warps} num_stages={config.num_stages}"


def block_of(config: triton.Config) -> tuple[int, int]:
    """The BLOCK_M×BLOCK_N tile of C a config's program computes."""
    return config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"]


def prebound(kernel, grid, *args, **kwargs):
    """`kernel[grid](*args, **kwargs)` as a launch to repeat on the same arguments, as CuPy's launches are bound
    (core/cuda_c.bind). Each call through `kernel[grid]` binds and specializes every argument again and looks
    the kernel up by the result: work a repeat launch on the same tensors does not need. The first call goes
    that way (it compiles); later calls hand the arguments, bound once, straight to the compiled kernel's
    launcher, which still encodes each TMA descriptor and reads the current stream at every launch (a CUDA
    graph captures it). Under the interpreter every call goes through `kernel[grid]`. `launch.jit` is the
    same launch through `kernel[grid]` every time (scripts/launch_cost.py times the two)."""
    signature = inspect.signature(python_function(kernel))
    bound = signature.bind(*args, **{name: value for name, value in kwargs.items() if name in signature.parameters})
    bound.apply_defaults()
    direct = []

    def launch():
        if direct:
            return direct[0]()
        compiled = kernel[grid](*args, **kwargs)
        if hasattr(compiled, "packed_metadata"):  # a CompiledKernel: on a GPU, not in the interpreter
            shape = grid(bound.arguments) if callable(grid) else grid
            direct.append(functools.partial(compiled[tuple(shape) + (1,) * (3 - len(shape))],
                                            *bound.arguments.values()))
        return compiled

    launch.jit = lambda: kernel[grid](*args, **kwargs)
    prebuild.add(id(launch), lambda pool: kernel.warmup(*args, grid=grid, **kwargs))  # a search's (core/prebuild)
    return launch
