"""Check, then time: one method for every implementation, cuBLAS included.

`measure` draws fresh random inputs, poisons the output with NaN, runs the implementation once and
checks it against the float64 reference; only a result that passed is timed. Timing uses Triton's
`do_bench` (CUDA events around each call, the L2 flushed before each call by zeroing a 256 MB
buffer, warm-up first) or `do_bench_cudagraph` (many calls captured in one CUDA graph, for sizes
where launch overhead would dominate), and keeps every sample so the median comes with its spread.
The zeroing leaves the L2 full of dirty lines, and the timed call writes them back as it evicts them;
with a clean flush (`events_ms`) a read of a second buffer follows, so the call pays for its own traffic.
The CPU baseline (torch on the host) is timed with the wall clock, one call after another.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from .check import (EPILOGUES, PRECISIONS, Precision, check, make_bias, make_inputs, make_offsets, make_scales,
                    output_dtype, poison, rowwise, split_scales)
from .registry import Prepared
from .search import TunedRun
from .traffic import predicted_bytes
from .validate import Refused, batch_of, check_bias, check_groups, check_scales

STATUS_OK = "ok"
STATUS_WRONG = "WRONG"
STATUS_EXPECTED_WRONG = "WRONG (expected)"
STATUS_RACE_HID = "ok (expected WRONG: did not show)"
STATUS_ERROR = "error"
STATUS_REFUSED = "refused"  # a launch shape or config the rung cannot take, with the stated limit
STATUS_SKIPPED = "skipped"
STATUS_FAULT = "fault"  # a CUDA error that left the process's context unusable (core/isolation.py)
STATUS_TIMEOUT = "timeout"  # no result within the time limit; its process was ended
FAILED = (STATUS_WRONG, STATUS_ERROR, STATUS_FAULT, STATUS_TIMEOUT)  # what makes compare.py exit 1


GRAPH_REPLAYS = 10  # how many times do_bench_cudagraph replays its graph: the samples of one measurement
FLUSHES = ("zero", "clean")  # events timing's L2 flush (compare.py --flush)


@dataclass
class TimingOptions:
    mode: str = "events"  # "events" (do_bench) or "graph" (do_bench_cudagraph)
    # events: warm-up, then at least min_runs calls, each timed alone after an L2 flush.
    # graph: one graph of at least min_runs calls, replayed GRAPH_REPLAYS times; each sample is a replay's
    # mean per call, and the L2 is not flushed between the calls of a graph.
    warmup_ms: float = 25.0
    rep_ms: float = 200.0  # timed per measurement, in either mode (in a graph: all its replays together)
    min_runs: int = 10  # slow kernels still get this many timed runs
    flush: str = "zero"  # events: how the L2 is emptied before each call (FLUSHES, events_ms)

    @property
    def label(self) -> str:
        """The timing a result records: "events", "graph" or "events, clean flush"."""
        return self.mode if self.mode == "graph" or self.flush == "zero" else f"{self.mode}, {self.flush} flush"


def size_label(shape: tuple[int, int, int], layout: str = "nn", batch: int = 0, epilogue: str = "none",
               groups: tuple[int, ...] = (), shared: str = "") -> str:
    """"4096x4096x4096"; with a batch, a layout other than nn and an epilogue: "64×(512x512x512) tn bias+gelu",
    and with one operand shared by the batch: "64×(512x512x512) B shared"; with groups, their rows:
    "1024x512x256 G=3 (0,512,512)" (beyond eight groups, their range)."""
    size = "x".join(map(str, shape))
    size = f"{batch}×({size})" if batch else size
    size += f" {shared.upper()} shared" if shared else ""
    if groups:
        rows = ",".join(map(str, groups)) if len(groups) <= 8 else f"{min(groups)}-{max(groups)} rows"
        size += f" G={len(groups)} ({rows})"
    return " ".join(part for part in (size, layout if layout != "nn" else "", epilogue if epilogue != "none" else "")
                    if part)


def groups_text(groups: tuple[int, ...]) -> str:
    """The groups as a result records them: "128,0,512" ("" for no groups)."""
    return ",".join(map(str, groups))


def groups_of(text: str) -> tuple[int, ...]:
    return tuple(int(rows) for rows in text.split(",")) if text else ()


@dataclass
class Result:
    rung: str  # "v03", or "cuBLAS"
    name: str
    config: str
    impl: str  # "cuda", "triton", or a baseline: "cublas", "unfused", "cpu"
    dtype: str
    M: int
    N: int
    K: int
    status: str = STATUS_SKIPPED
    note: str = ""
    seed: int | None = None
    inputs: str = "normal"  # the input kind (check.INPUTS)
    error: float | None = None
    bound: float | None = None
    unwritten: int | None = None  # NaN elements of C after a run over a NaN-poisoned C
    outside: int | None = None  # elements beyond their componentwise limit
    worst: str = ""  # the element furthest outside (or closest to) its limit
    ms: float | None = None  # median
    ms_p20: float | None = None
    ms_p80: float | None = None
    runs: int | None = None  # samples: timed calls (events) or graph replays (graph)
    timing: str = ""
    tflops: float | None = None
    pct_cublas: float | None = None
    speedup_cpu: float | None = None  # the CPU baseline's time over this one's
    speedup_unfused: float | None = None  # the unfused torch sequence's time over this one's (with an epilogue)
    speedup_grouped_mm: float | None = None  # torch._grouped_mm's time over this one's (with groups)
    speedup_loop_graph: float | None = None  # the loop of torch.matmul in a CUDA graph: its time over this one's
    tile: str = ""  # BMxBN: the block tile behind traffic_bytes
    traffic_bytes: int | None = None  # global traffic the tile implies (traffic.py)
    registers: int | None = None
    smem_bytes: int | None = None
    local_bytes: int | None = None
    compile_s: float | None = None
    layout: str = "nn"  # op(A) op(B) (check.LAYOUTS)
    batch: int = 0  # products in the batch; 0: one product of two matrices
    epilogue: str = "none"  # C = act(A @ B + bias) (check.EPILOGUES)
    groups: str = ""  # rows per group, "128,0,512" (groups_text); "": not grouped
    shared: str = ""  # "a" or "b": that operand is one matrix shared by the batch
    samples: list[float] = field(default_factory=list, repr=False)  # every timed sample (ms); not written out

    @property
    def size(self) -> str:
        return size_label((self.M, self.N, self.K), self.layout, self.batch, self.epilogue, groups_of(self.groups),
                          self.shared)

    @property
    def flops(self) -> float:
        return 2.0 * max(self.batch, 1) * self.M * self.N * self.K

    def record(self) -> dict:
        record = asdict(self)
        del record["samples"]
        return {**record, "size": self.size}


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


def time_ms(fn: Callable[[], object], options: TimingOptions, device: torch.device) -> list[float]:
    """Every timed sample of fn in ms: CUDA events on a GPU, the wall clock for the CPU baseline."""
    if device.type != "cuda":
        return time_cpu_ms(fn, options)
    from triton.testing import do_bench_cudagraph

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    call = start.elapsed_time(end)
    if options.mode == "graph":  # do_bench_cudagraph's rep is one replay's length
        rep = max(options.rep_ms / GRAPH_REPLAYS, options.min_runs * call)
        return list(do_bench_cudagraph(fn, rep=rep, return_mode="all"))
    return list(events_ms(fn, warmup=options.warmup_ms, rep=max(options.rep_ms, options.min_runs * call),
                          flush=options.flush, return_mode="all"))


def events_ms(fn: Callable[[], object], warmup: float, rep: float, flush: str = "zero", return_mode: str = "mean"):
    """do_bench with this L2 flush before each call (FLUSHES). zero (do_bench's own): the call starts with the L2 full
    of the flush's dirty lines and shares their write-back, as after a kernel that wrote that much. clean: a
    read of a second buffer of the same size follows the zeroing, which writes those lines back before the
    call and leaves clean ones, as Nsight Compute's cache control does: the call pays for its own traffic."""
    from triton import runtime
    from triton.testing import do_bench

    if flush not in FLUSHES:
        raise ValueError(f"unknown L2 flush {flush!r}; known: {', '.join(FLUSHES)}")
    if flush == "zero":
        return do_bench(fn, warmup=warmup, rep=rep, return_mode=return_mode)
    driver = runtime.driver.active
    if not hasattr(driver, "clear_cache"):
        raise RuntimeError("a clean L2 flush: this Triton's do_bench has no clear_cache to extend")
    zero = driver.clear_cache

    def zero_then_read(cache):
        zero(cache)
        _clean_buffer(cache).sum()

    driver.clear_cache = zero_then_read
    try:
        return do_bench(fn, warmup=warmup, rep=rep, return_mode=return_mode)
    finally:
        driver.clear_cache = zero


_CLEAN_BUFFERS: dict[torch.device, torch.Tensor] = {}


def _clean_buffer(like: torch.Tensor) -> torch.Tensor:
    """A buffer as large as do_bench's flush buffer, on its device, allocated once."""
    if like.device not in _CLEAN_BUFFERS:
        _CLEAN_BUFFERS[like.device] = torch.ones(like.numel(), dtype=like.dtype, device=like.device)
    return _CLEAN_BUFFERS[like.device]


def time_cpu_ms(fn: Callable[[], object], options: TimingOptions) -> list[float]:
    """Wall-clock samples of fn, one call after another, after one warm-up call: at least min_runs of
    them and at least rep_ms in all. No cache flush: torch's CPU matmul is compute-bound at these sizes."""
    fn()
    samples: list[float] = []
    while len(samples) < options.min_runs or sum(samples) < options.rep_ms:
        start = time.perf_counter()
        fn()
        samples.append(1e3 * (time.perf_counter() - start))
    return samples


def l2_flush(device: torch.device, flush: str = "zero") -> str:
    """What do_bench does before each timed call to empty the L2, checked to evict it: it zeroes a buffer,
    which must be at least twice the L2 (the device's reported size)."""
    from triton import runtime

    buffer = runtime.driver.active.get_empty_cache_for_benchmark()
    size = buffer.numel() * buffer.element_size()
    l2 = torch.cuda.get_device_properties(device).L2_cache_size
    if size < 2 * l2:
        raise RuntimeError(f"do_bench's L2 flush writes {size / 2**20:.0f} MiB, less than twice this GPU's "
                           f"{l2 / 2**20:.0f} MiB L2: timed calls could find their operands cached")
    read = f", then another {size / 2**20:.0f} MiB read," if flush == "clean" else ""
    return (f"{size / 2**20:.0f} MiB zeroed{read} before each timed call ({size / l2:.1f}× the "
            f"{l2 / 2**20:.0f} MiB L2)")


def copy_bandwidth(device: torch.device, nbytes: int = 2**30) -> float:
    """Device-memory bandwidth in GB/s (bytes read + bytes written) of a large tensor copy: the
    roofline's memory ceiling, measured with the same timer as the kernels."""
    from triton.testing import do_bench

    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device).normal_()
    dst = torch.empty_like(src)
    ms = do_bench(lambda: dst.copy_(src), warmup=25, rep=200, return_mode="median")
    return 2 * nbytes / (ms * 1e-3) / 1e9


def _one_line(exc: Exception) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0] if text else type(exc).__name__


def measure(
    *, rung: str, name: str, config: str, impl: str, precision: Precision, shape: tuple[int, int, int],
    device: torch.device, seed: int, prepare: Callable[[torch.Tensor, torch.Tensor], Prepared],
    expect_wrong: str = "", timing: TimingOptions | None = None, cublas_ms: float | None = None,
    cpu_ms: float | None = None, tile_of: Callable[[Callable], tuple[int, int] | None] | None = None,
    inputs: str = "normal", layout: str = "nn", batch: int = 0, epilogue: str = "none", unfused_ms: float | None = None,
    groups: tuple[int, ...] = (), grouped_mm_ms: float | None = None, loop_graph_ms: float | None = None,
    shared: str = "",
) -> Result:
    """Check one implementation on fresh inputs and, if it passed, time it, then check it again.

    The second check runs after the timed calls (after one more call when nothing is timed), on new
    inputs written into the operands the run reads: a kernel that is right once and wrong later (state
    not reset between calls, a race that shows under load) or that returns a cached output fails it.
    `tile_of(run)`: the block tile the prepared run computes with (asked after the first call, when an
    autotuned run has chosen), for the traffic model. With an epilogue (C = act(A @ B + bias)), `prepare` is
    also given `epilogue=` and a fresh `bias=`; with `groups` (rows per group: a grouped product of M rows in
    all), `offsets=` (check.make_offsets); `shared` ("a" or "b"): that operand is one matrix for the batch; with
    scaled operands (fp8), `scales=` (check.make_scales).
    """
    M, N, K = shape
    result = Result(rung, name, config, impl, precision.name, M, N, K, seed=seed, inputs=inputs, layout=layout,
                    batch=batch, epilogue=epilogue, groups=groups_text(groups), shared=shared)
    exact = inputs == "integers"
    try:
        a, b = make_inputs(M, N, K, precision, device, seed, inputs, layout, batch, groups, shared)
        bias = make_bias(N, K, precision, device, seed, inputs) if EPILOGUES[epilogue].bias else None
        if precision.scaled == "rowwise" and batch:
            raise Refused("per-row scales scale single products, as torch._scaled_mm does (no batch)")
        scales = make_scales(precision, device, seed, M, N, inputs)
        problem = {} if epilogue == "none" else {"epilogue": epilogue, "bias": bias}
        if groups:
            problem["offsets"] = make_offsets(groups, device)
        if scales is not None:
            problem["scales"] = scales
        prepared = prepare(a, b, **problem)
        poison(prepared.out)
        kernel, first_s = _wall(prepared.run, device)
        outcome = check(prepared.out.to(a.device), a, b, precision, exact, epilogue, bias, prepared.product_rounded,
                        groups, scales)
        if device.type == "cuda":  # the first call compiled (or loaded from disk cache) and ran; this one only runs
            _, second_s = _wall(prepared.run, device)
            result.compile_s = max(first_s - second_s, 0.0)
        tile = tile_of(prepared.run) if tile_of else None
    except Refused as exc:  # the rung's stated limit (threads per block, block sides, grid): not a failure
        result.status, result.note = STATUS_REFUSED, _one_line(exc)
        return result
    except Exception as exc:  # bad input, a compile or CUDA error: record it, go on
        result.status, result.note = STATUS_ERROR, _one_line(exc)
        return result
    if tile:
        result.tile = f"{tile[0]}x{tile[1]}"
        result.traffic_bytes = sum(predicted_bytes(rows, N, K, tile, a.element_size(), prepared.out.element_size())
                                   for rows in groups or [M] * max(batch, 1))
    record_check(result, outcome)
    for key, value in kernel_resources(kernel).items():
        setattr(result, key, value)
    notes = [prepared.note] if prepared.note else []
    if isinstance(prepared.run, TunedRun):
        notes.append(f"autotuned: {prepared.run.chosen()}")
    result.note = "; ".join(notes)
    if expect_wrong:
        result.status = STATUS_RACE_HID if outcome.ok else STATUS_EXPECTED_WRONG
        result.note = f"broken on purpose: {expect_wrong}; never timed"
        if outcome.ok and device.type != "cuda":
            result.note += " (the interpreter runs one program at a time, so a race between programs cannot show)"
        return result
    if not outcome.ok:
        result.status, result.note = STATUS_WRONG, outcome.why()
        return result
    if timing is not None and timing.mode == "graph" and prepared.host_sync:
        result.status, result.note = STATUS_REFUSED, f"checked ok; not timed in a CUDA graph: {prepared.host_sync}"
        return result
    result.status = STATUS_OK
    if timing is not None:
        try:
            result.samples = list(time_ms(prepared.run, timing, prepared.out.device))
        except Exception as exc:
            result.status, result.note = STATUS_ERROR, f"checked ok, then timing failed: {_one_line(exc)}"
            return result
        result.timing = timing.label
        summarize(result, cublas_ms, cpu_ms, unfused_ms, grouped_mm_ms, loop_graph_ms)
    else:
        prepared.run()
    try:
        again = recheck(prepared, (a, b), precision, device, seed, inputs, epilogue, bias, groups, scales)
    except Exception as exc:
        result.status, result.note = STATUS_ERROR, f"checked ok, then failed on new inputs: {_one_line(exc)}"
        return result
    if not again.ok:
        record_check(result, again)
        result.status, result.note = STATUS_WRONG, f"changed between calls: {again.why()}"
    return result


def record_check(result: Result, outcome) -> None:
    result.error, result.bound, result.unwritten = outcome.error, outcome.bound, outcome.unwritten
    result.outside = outcome.outside
    result.worst = str(outcome.worst) if outcome.worst is not None else ""


def recheck(prepared: Prepared, given: tuple[torch.Tensor, torch.Tensor], precision: Precision,
            device: torch.device, seed: int, inputs: str, epilogue: str = "none", given_bias: torch.Tensor | None = None,
            groups: tuple[int, ...] = (), given_scales: torch.Tensor | None = None):
    """New inputs written into the operands the run reads (`given`, the ones it was prepared with, unless
    it says otherwise) and into the bias and scales it reads, the output poisoned, one more call, checked (the
    groups stay)."""
    (M, K), N = given[0].shape[-2:], given[1].shape[-1]
    batch = 0 if groups else batch_of(*given)
    a, b = make_inputs(M, N, K, precision, device, seed + RECHECK_SEED, inputs, batch=batch, groups=groups)
    a, b = (new if old.dim() == new.dim() else new[0] for old, new in zip(given, (a, b)))  # a shared 2-D operand
    for old, new in zip(prepared.operands or given, (a, b)):
        old.copy_(new)  # into the strides the run reads (a transposed view stays one)
    bias = None
    if given_bias is not None:
        bias = make_bias(N, K, precision, device, seed + RECHECK_SEED, inputs)
        (prepared.bias if prepared.bias is not None else given_bias).copy_(bias)
    scales = None
    if given_scales is not None:
        scales = make_scales(precision, device, seed + RECHECK_SEED, M, N, inputs)
        for held, new in zip(prepared.scales or (given_scales,), split_scales(scales, M) if prepared.scales
                             else (scales,)):
            held.copy_(new)
    poison(prepared.out)
    prepared.run()
    return check(prepared.out.to(a.device), a, b, precision, inputs == "integers", epilogue, bias,
                 prepared.product_rounded, groups, scales)


RECHECK_SEED = 1_000_003  # the second check's inputs: the case's seed plus this


def summarize(result: Result, cublas_ms: float | None, cpu_ms: float | None, unfused_ms: float | None = None,
              grouped_mm_ms: float | None = None, loop_graph_ms: float | None = None) -> None:
    """The figures of result.samples: median, 20-80 percentile spread, TFLOP/s, ratios to the baselines."""
    samples = np.asarray(result.samples)
    result.ms = float(np.median(samples))
    result.ms_p20, result.ms_p80 = (float(q) for q in np.percentile(samples, [20, 80]))
    result.runs = len(samples)
    result.tflops = result.flops / (result.ms * 1e-3) / 1e12 if result.ms > 0 else math.inf
    result.pct_cublas = 100.0 * cublas_ms / result.ms if cublas_ms else None
    result.speedup_cpu = cpu_ms / result.ms if cpu_ms else None
    result.speedup_unfused = unfused_ms / result.ms if unfused_ms else None
    result.speedup_grouped_mm = grouped_mm_ms / result.ms if grouped_mm_ms else None
    result.speedup_loop_graph = loop_graph_ms / result.ms if loop_graph_ms else None


def clear_figures(result: Result) -> None:
    """No timed figures: a result that failed in some round, or whose worker faulted."""
    result.samples = []
    result.ms = result.ms_p20 = result.ms_p80 = result.runs = result.tflops = result.pct_cublas = None
    result.speedup_cpu = result.speedup_unfused = result.speedup_grouped_mm = result.speedup_loop_graph = None


def pool(first: Result, later: Result) -> None:
    """Fold a later round's result of the same task into the first one (summarize it afterwards): its
    samples join the first's, and a failure in any round makes the whole result that failure."""
    if later.status == STATUS_OK:
        first.samples += later.samples
        first.error = max(first.error, later.error)
        return
    first.status, first.note, first.seed = later.status, later.note, later.seed
    first.error, first.bound, first.unwritten = later.error, later.bound, later.unwritten
    clear_figures(first)


# What the cuBLAS baseline calls for each epilogue: the bias and the activation handed to cuBLASLt's fused
# epilogue (torch._addmm_activation: GELU in the tanh form on CUDA), one product at a time.
CUBLAS_CALLS = {"none": "torch.matmul", "bias": "torch.addmm", "bias+relu": "torch._addmm_activation",
                "bias+gelu": "torch._addmm_activation(use_gelu=True)"}
GROUPS_LOOP = "torch.matmul per group"  # the cuBLAS baseline of a grouped product


def _output(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return torch.empty((*batch, a.shape[-2], b.shape[-1]), dtype=output_dtype(a.dtype), device=a.device)


SCALED_MM = "torch._scaled_mm(use_fast_accum=True)"  # the cuBLAS baseline of fp8 operands


def cublas_prepare(a: torch.Tensor, b: torch.Tensor, epilogue: str = "none", bias: torch.Tensor | None = None,
                   offsets: torch.Tensor | None = None, scales: torch.Tensor | None = None) -> Prepared:
    """The baseline: cuBLAS through torch into a preallocated output (CUBLAS_CALLS): transposed views are
    read in place, a batch through the batched GEMM; with an epilogue, one call with it fused (2-D only); a
    grouped product (offsets) as the loop torch code writes, one torch.matmul per non-empty group; fp8 operands
    (scales) through cuBLASLt's fp8 GEMM (scaled_mm_prepare)."""
    epi = EPILOGUES[epilogue]
    if a.dtype == PRECISIONS["fp8"].dtype:
        return scaled_mm_prepare(a, b, epilogue, scales)
    if offsets is not None:
        return _group_loop(a, b, offsets)
    c = _output(a, b)
    check_bias(bias, a, c.shape[-1], epi.bias)
    if epilogue == "none":
        def run():
            torch.matmul(a, b, out=c)
    elif c.dim() == 3:
        raise Refused(f"{CUBLAS_CALLS[epilogue]} fuses an epilogue into one product (2-D operands), not a batch; "
                      "the unfused row runs the batch")
    elif not epi.activation:
        def run():
            torch.addmm(bias, a, b, out=c)
    else:
        def run():
            torch._addmm_activation(bias, a, b, use_gelu=epi.activation == "gelu", out=c)

    return Prepared(run, c, (a, b))


def scaled_mm_prepare(a: torch.Tensor, b: torch.Tensor, epilogue: str, scales: torch.Tensor | None) -> Prepared:
    """fp8: torch._scaled_mm, cuBLASLt's fp8 GEMM (per-row scales: torch's CUTLASS kernel), with the tensor cores'
    own accumulation (use_fast_accum, what the rungs do too) and bf16 output. It reads A row-major and B K-major
    (a transposed view, nt) only: other layouts are copied to those inside the timed call, and the result says so."""
    check_scales(scales, a, b, True)
    if a.dim() != 2 or b.dim() != 2 or epilogue != "none":
        raise Refused(f"{SCALED_MM} multiplies two matrices without an epilogue here (no batch, no bias)")
    if a.device.type != "cuda":
        raise Refused("torch._scaled_mm needs a CUDA device")
    c = _output(a, b)
    a_in = a if a.is_contiguous() else torch.empty(a.shape, dtype=a.dtype, device=a.device)
    b_in = b if b.mT.is_contiguous() else torch.empty(b.mT.shape, dtype=b.dtype, device=b.device).mT
    copies = [(dst, src) for dst, src in ((a_in, a), (b_in, b)) if dst is not src]
    # each scale through a pointer of its own, 16-byte aligned (a view into one tensor need not be): s_A as a
    # column (M×1) and s_B as a row (1×N) when they are per row and column
    s_a, s_b = split_scales(scales, a.shape[0])
    scale_a, scale_b = s_a.clone().reshape(-1, 1), s_b.clone().reshape(1, -1)
    if not rowwise(scales):
        scale_a, scale_b = scale_a.reshape(1), scale_b.reshape(1)

    def run():
        for dst, src in copies:
            dst.copy_(src)
        torch._scaled_mm(a_in, b_in, scale_a, scale_b, out_dtype=c.dtype, use_fast_accum=True, out=c)

    note = ("copies " + " and ".join(("A to row-major", "B to a transposed view")[i]
                                     for i, (dst, src) in enumerate(((a_in, a), (b_in, b))) if dst is not src)
            + " inside the timed call (cuBLASLt's fp8 GEMM reads nt only)") if copies else ""
    return Prepared(run, c, (a, b), note, scales=(scale_a.view(-1), scale_b.view(-1)))


def _group_loop(a: torch.Tensor, b: torch.Tensor, offsets: torch.Tensor) -> Prepared:
    """C[rows of g] = A[rows of g] @ B[g], one torch.matmul per non-empty group into views of one C; the
    group bounds are read on the host here, not in the run (torch code that loops over experts reads them
    in every call)."""
    groups = check_groups(a, b, offsets)
    c = torch.empty((a.shape[0], b.shape[-1]), dtype=a.dtype, device=a.device)
    starts = [sum(groups[:g]) for g in range(len(groups))]
    parts = [(a[s:s + rows], b[g], c[s:s + rows]) for g, (s, rows) in enumerate(zip(starts, groups)) if rows]

    def run():
        for x, w, out in parts:
            torch.matmul(x, w, out=out)

    return Prepared(run, c, (a, b))


def grouped_mm_prepare(a: torch.Tensor, b: torch.Tensor, offsets: torch.Tensor | None = None) -> Prepared:
    """torch._grouped_mm, the library's grouped GEMM (on Hopper and Blackwell, bf16: a CUTLASS kernel; other
    dtypes and GPUs: torch's fallback, a loop over the groups that reads the offsets on the host, so it cannot
    be captured in a CUDA graph). It returns a new C, which the preallocated one adopts without a copy."""
    if offsets is None:
        raise Refused("torch._grouped_mm is a baseline of grouped products only (--groups)")
    if not hasattr(torch, "_grouped_mm"):
        raise Refused(f"this torch ({torch.__version__}) has no torch._grouped_mm")
    check_groups(a, b, offsets)
    c = torch.empty((a.shape[0], b.shape[-1]), dtype=a.dtype, device=a.device)
    cutlass = (a.device.type == "cuda" and a.dtype == torch.bfloat16
               and torch.cuda.get_device_capability(a.device) in ((9, 0), (10, 0)))

    def run():
        c.set_(torch._grouped_mm(a, b, offs=offsets))

    return Prepared(run, c, (a, b), host_sync="" if cutlass else
                    f"torch._grouped_mm's fallback for {a.dtype} on this device reads the offsets on the host")


def loop_graph_prepare(a: torch.Tensor, b: torch.Tensor, offsets: torch.Tensor | None = None) -> Prepared:
    """The loop of torch.matmul over the groups (cublas_prepare's) captured once in a CUDA graph and replayed:
    the loop without the cost of launching its kernels one by one from Python."""
    if offsets is None:
        raise Refused("the graphed loop is a baseline of grouped products only (--groups)")
    if a.device.type != "cuda":
        raise Refused("a CUDA graph needs a CUDA device")
    loop = _group_loop(a, b, offsets)
    side = torch.cuda.Stream(a.device)
    side.wait_stream(torch.cuda.current_stream(a.device))
    with torch.cuda.stream(side):  # the first calls (cuBLAS's workspaces, heuristics) outside the capture
        loop.run()
    torch.cuda.current_stream(a.device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        loop.run()
    return Prepared(graph.replay, loop.out, (a, b))


def unfused_prepare(a: torch.Tensor, b: torch.Tensor, epilogue: str = "none", bias: torch.Tensor | None = None
                    ) -> Prepared:
    """The epilogue as torch code writes it, F.gelu(a @ b + bias, approximate="tanh"): C = A @ B (cuBLAS), then
    C += bias and C = act(C), in place: each pass after the product reads C and writes it once more."""
    epi = EPILOGUES[epilogue]
    c = _output(a, b)
    check_bias(bias, a, c.shape[-1], epi.bias)

    def run():
        torch.matmul(a, b, out=c)
        if epi.bias:
            c.add_(bias)
        if epi.activation == "relu":
            c.relu_()
        elif epi.activation == "gelu":
            torch.ops.aten.gelu_(c, approximate="tanh")

    return Prepared(run, c, (a, b), product_rounded=True)


def cpu_prepare(a: torch.Tensor, b: torch.Tensor, epilogue: str = "none", bias: torch.Tensor | None = None,
                offsets: torch.Tensor | None = None, scales: torch.Tensor | None = None) -> Prepared:
    """The CPU baseline: torch on host copies of the operands (copied here, not in the timed call), the
    epilogue unfused (torch._addmm_activation on the CPU computes GELU in its erf form), a grouped product
    as the loop over its groups."""
    if scales is not None:
        raise Refused("torch has no fp8 matmul on the CPU")
    if offsets is not None:
        return _group_loop(a.cpu(), b.cpu(), offsets.cpu())
    host_bias = None if bias is None else bias.cpu()
    return unfused_prepare(a.cpu(), b.cpu(), epilogue, host_bias)._replace(bias=host_bias)


def cpu_seconds_estimate(M: int, N: int, K: int, precision: Precision, probe: int = 512) -> float:
    """How long one CPU matmul of this size would take, from a timed probe at probe³ (cached per dtype)."""
    if precision.name not in _cpu_flops:
        a, b = make_inputs(probe, probe, probe, precision, "cpu", 0)
        torch.matmul(a, b)
        start = time.perf_counter()
        torch.matmul(a, b)
        _cpu_flops[precision.name] = 2.0 * probe**3 / max(time.perf_counter() - start, 1e-9)
    return 2.0 * M * N * K / _cpu_flops[precision.name]


_cpu_flops: dict[str, float] = {}
