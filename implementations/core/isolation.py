"""A faulting or hanging kernel costs one result, not the run.

A CUDA error such as an illegal address leaves the process's CUDA context unusable: every later launch
in that process fails too, the innocent ones included. So compare.py runs its tasks in a worker process
(spawned, one at a time, reused while it is healthy) and waits for each result at most `timeout_s`:
- after a call, the worker asks whether its context is still usable (a sticky CUDA error in the result,
  or a tiny launch that fails); if not, it returns the result marked `fault` and exits, and the next
  call starts a fresh worker;
- a call with no result within the limit is marked `timeout` and its worker is killed (a kernel that
  never finishes cannot be stopped any other way);
- a worker that dies (a crash in a library) is reported as such for the call it was running.
Workers leave with os._exit: no library destructor runs over a dead context, so none prints a traceback.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# CUDA errors after which the context is lost (the driver's wording, as torch, CuPy and Triton report it)
STICKY_ERRORS = ("illegal memory access", "misaligned address", "unspecified launch failure",
                 "illegal instruction", "device-side assert", "uncorrectable ECC", "hardware stack error",
                 "an exception occurred on the device", "launch timed out")


STARTUP_LIMIT_S = 300  # a fresh worker imports torch, Triton and the package before its first call


def sticky_error(text: str) -> bool:
    return any(e in text for e in STICKY_ERRORS)


def context_lost() -> str:
    """Why this process's CUDA context can no longer be used ("" when it can, or CUDA was never used)."""
    import torch

    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return ""
    try:
        torch.cuda.synchronize()
        torch.ones(1, device="cuda").add_(1).item()
    except Exception as exc:  # torch.AcceleratorError and its relatives
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    return ""


@dataclass
class Outcome:
    kind: str  # "ok", "fault" (the call's value, then the worker ended), "timeout", "died", "raised"
    value: Any = None  # the call's return value ("ok", "fault"), or a one-line reason
    detail: str = ""  # fault: why the context is lost


def _serve(conn, preload: tuple[str, ...]) -> None:
    """The worker's loop: one call at a time until told to stop (None) or its context is lost."""
    for name in preload:
        importlib.import_module(name)
    conn.send("ready")
    while True:
        try:
            message = conn.recv()
        except (EOFError, KeyboardInterrupt):
            break
        if message is None:
            break
        fn, args, is_fault = message
        try:
            value = fn(*args)
        except BaseException as exc:  # the call itself failed: report it and go on (or end, if CUDA is lost)
            reason = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()[0]
            lost = context_lost()
            conn.send(Outcome("fault" if lost else "raised", reason, lost))
            if lost or isinstance(exc, KeyboardInterrupt):
                break
            continue
        lost = context_lost() or (is_fault(value) if is_fault else "")
        conn.send(Outcome("fault" if lost else "ok", value, lost))
        if lost:
            break
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


class Worker:
    """Calls `fn(*args)` in a worker process: `call` returns an Outcome, never raises for the call's sake.

    `fn` and `is_fault` must be importable by name (module-level functions): the worker is spawned.
    `is_fault(value)`: a reason if the returned value reports a lost context ("" otherwise).
    """

    def __init__(self, timeout_s: float, is_fault: Callable[[Any], str] | None = None, preload: tuple[str, ...] = ()):
        self.timeout_s = timeout_s
        self.is_fault = is_fault
        self.preload = preload  # modules the worker imports before it takes a call (outside the time limit)
        self._proc = None
        self._conn = None

    def _start(self) -> None:
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        self._proc = context.Process(target=_serve, args=(child, self.preload), daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent
        if not parent.poll(STARTUP_LIMIT_S) or parent.recv() != "ready":
            self._kill()
            raise RuntimeError(f"the worker process did not start within {STARTUP_LIMIT_S} s")

    def call(self, fn: Callable, *args) -> Outcome:
        if self._proc is None or not self._proc.is_alive():
            self._start()
        self._conn.send((fn, args, self.is_fault))
        if not self._conn.poll(self.timeout_s):
            self._kill()
            return Outcome("timeout", f"no result within {self.timeout_s:g} s")
        try:
            outcome = self._conn.recv()
        except (EOFError, OSError):
            code = self._kill()
            return Outcome("died", f"its process ended (exit code {code}) before returning a result")
        if outcome.kind == "fault":
            self._kill()
        return outcome

    def _kill(self) -> int | None:
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        proc.kill()
        proc.join(10)
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        return proc.exitcode

    def close(self) -> None:
        """Tell the worker to stop; kill it if it does not."""
        if self._proc is not None and self._proc.is_alive():
            try:
                self._conn.send(None)
                self._proc.join(10)
            except (OSError, BrokenPipeError):
                pass
        self._kill()
