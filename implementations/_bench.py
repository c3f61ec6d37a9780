"""Check, then time: one method for every implementation, cuBLAS included.

`measure` draws fresh random inputs, poisons the output with NaN, runs the implementation once and
checks it against the float64 reference; only a result that passed is timed. Timing uses Triton's
`do_bench` (CUDA events around each call, the L2 flushed before each call by zeroing a 256 MB
buffer, warm-up first) or `do_bench_cudagraph` (many calls captured in one CUDA graph, for sizes
where launch overhead would dominate), and keeps every sample so the median comes with its spread.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import torch

from ._check import Precision, compare, make_inputs, poison, reference
from ._registry import Prepared, TunedRun

STATUS_OK = "ok"
STATUS_WRONG = "WRONG"
STATUS_EXPECTED_WRONG = "WRONG (expected)"
STATUS_RACE_HID = "ok (expected WRONG: did not show)"
STATUS_ERROR = "error"
STATUS_SKIPPED = "skipped"


@dataclass
class TimingOptions:
    mode: str = "events"  # "events" (do_bench) or "graph" (do_bench_cudagraph)
    # events: warm-up, then at least min_runs calls, each timed alone after an L2 flush.
    # graph: one graph of at least min_runs calls, replayed 10 times; each sample is a replay's mean
    # per call, and the L2 is not flushed between the calls of a graph.
    warmup_ms: float = 25.0
    rep_ms: float = 200.0
    min_runs: int = 10  # slow kernels still get this many timed runs


@dataclass
class Result:
    rung: str  # "v03", or "cuBLAS"
    name: str
    config: str
    impl: str  # "cuda", "triton", "cublas"
    dtype: str
    M: int
    N: int
    K: int
    status: str = STATUS_SKIPPED
    note: str = ""
    seed: int | None = None
    error: float | None = None
    bound: float | None = None
    unwritten: int | None = None  # NaN elements of C after a run over a NaN-poisoned C
    ms: float | None = None  # median
    ms_p20: float | None = None
    ms_p80: float | None = None
    runs: int | None = None  # samples: timed calls (events) or graph replays (graph)
    timing: str = ""
    tflops: float | None = None
    pct_cublas: float | None = None
    registers: int | None = None
    smem_bytes: int | None = None
    local_bytes: int | None = None
    compile_s: float | None = None

    @property
    def size(self) -> str:
        return f"{self.M}x{self.N}x{self.K}"

    def record(self) -> dict:
        return {**asdict(self), "size": self.size}


def kernel_resources(kernel) -> dict[str, int]:
    """Registers, static shared memory and local (spill) bytes of a compiled CuPy or Triton kernel."""
    if kernel is None:
        return {}
    if hasattr(kernel, "num_regs"):  # cupy.RawKernel
        return {"registers": kernel.num_regs, "smem_bytes": kernel.shared_size_bytes,
                "local_bytes": kernel.local_size_bytes}
    if hasattr(kernel, "metadata"):  # triton CompiledKernel; n_spills is the driver's local size / 4
        return {"registers": kernel.n_regs, "smem_bytes": kernel.metadata.shared, "local_bytes": 4 * kernel.n_spills}
    return {}


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _wall(fn: Callable[[], object], device: torch.device) -> tuple[object, float]:
    _synchronize(device)
    start = time.perf_counter()
    out = fn()
    _synchronize(device)
    return out, time.perf_counter() - start


def time_ms(fn: Callable[[], object], options: TimingOptions) -> list[float]:
    """Every timed sample of fn in ms (GPU only)."""
    from triton.testing import do_bench, do_bench_cudagraph

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    rep = max(options.rep_ms, options.min_runs * start.elapsed_time(end))
    if options.mode == "graph":
        return list(do_bench_cudagraph(fn, rep=rep, return_mode="all"))
    return list(do_bench(fn, warmup=options.warmup_ms, rep=rep, return_mode="all"))


def _one_line(exc: Exception) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0] if text else type(exc).__name__


def measure(
    *, rung: str, name: str, config: str, impl: str, precision: Precision, shape: tuple[int, int, int],
    device: torch.device, seed: int, prepare: Callable[[torch.Tensor, torch.Tensor], Prepared],
    expect_wrong: str = "", timing: TimingOptions | None = None, cublas_ms: float | None = None,
) -> Result:
    """Check one implementation on fresh inputs and, if it passed, time it."""
    M, N, K = shape
    result = Result(rung, name, config, impl, precision.name, M, N, K, seed=seed)
    try:
        a, b = make_inputs(M, N, K, precision, device, seed)
        prepared = prepare(a, b)
        poison(prepared.out)
        kernel, first_s = _wall(prepared.run, device)
        outcome = compare(prepared.out, reference(a, b), precision.bound(K))
        if device.type == "cuda":  # the first call compiled (or loaded from disk cache) and ran; this one only runs
            _, second_s = _wall(prepared.run, device)
            result.compile_s = max(first_s - second_s, 0.0)
    except Exception as exc:  # bad input, a refused launch, a compile or CUDA error: record it, go on
        result.status, result.note = STATUS_ERROR, _one_line(exc)
        return result
    result.error, result.bound, result.unwritten = outcome.error, outcome.bound, outcome.unwritten
    for key, value in kernel_resources(kernel).items():
        setattr(result, key, value)
    if isinstance(prepared.run, TunedRun):
        result.note = f"autotuned: {prepared.run.chosen()}"
    if expect_wrong:
        result.status = STATUS_RACE_HID if outcome.ok else STATUS_EXPECTED_WRONG
        result.note = f"broken on purpose: {expect_wrong}; never timed"
        if outcome.ok and device.type != "cuda":
            result.note += " (the interpreter runs one program at a time, so a race between programs cannot show)"
        return result
    if not outcome.ok:
        result.status = STATUS_WRONG
        result.note = (f"{outcome.unwritten} NaN elements (unwritten, or NaN computed)" if outcome.unwritten
                       else "error above bound")
        return result
    result.status = STATUS_OK
    if timing is not None:
        try:
            samples = np.asarray(time_ms(prepared.run, timing))
        except Exception as exc:
            result.status, result.note = STATUS_ERROR, f"checked ok, then timing failed: {_one_line(exc)}"
            return result
        result.ms = float(np.median(samples))
        result.ms_p20, result.ms_p80 = (float(q) for q in np.percentile(samples, [20, 80]))
        result.runs, result.timing = len(samples), timing.mode
        result.tflops = 2.0 * M * N * K / (result.ms * 1e-3) / 1e12 if result.ms > 0 else math.inf
        if cublas_ms:
            result.pct_cublas = 100.0 * cublas_ms / result.ms
    return result


def cublas_prepare(a: torch.Tensor, b: torch.Tensor) -> Prepared:
    """The baseline: torch.matmul into a preallocated output (cuBLAS on a GPU)."""
    c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)

    def run():
        torch.matmul(a, b, out=c)

    return Prepared(run, c)
