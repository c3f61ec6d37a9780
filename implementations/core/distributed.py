"""More than one GPU: the seed's row partition and an overlapped all-gather, through torch.distributed.

One process per GPU, NCCL between GPUs (gloo between CPU processes where there is no GPU), started by
torchrun (`torchrun --nproc-per-node=N compare.py --distributed ...`) or by compare.py itself
(`--nproc N` starts the same processes with the environment torchrun gives them). Each rank runs a rung
of either language, or torch.matmul, on its share of the rows of A; B is replicated; every rank ends
with all of C. Nothing here depends on the number of GPUs.

The strategies for C = A @ B (M×K times K×N) on W ranks:
- single: the whole product on one GPU (rank 0's): T1, what the others are measured against.
- rows (the seed's): A cut into W blocks of ceil(M/W) rows (the last ones shorter, or empty when M < W);
  rank r computes block r, then one all-gather assembles C.
- overlap: A cut into W·chunks blocks dealt round-robin: at step j rank r computes block j·W + r, and
  step j's all-gather runs on NCCL's own stream while step j+1 computes on the default stream.
- push: the blocks of overlap, but each rank copies its finished block straight into the other ranks' C
  (symmetric memory: every rank's C is mapped into its peers' address space) with the copy engines, on a
  side stream. NCCL's kernels need SMs, and a persistent GEMM holding every SM leaves them none until it
  ends; a copy engine needs no SM, so the copies run under the next block's GEMM. A barrier between the
  ranks before the first copy (no rank writes into a C its owner still reads) and after the last (every
  peer's rows have landed) brackets the step. GPUs only.
Every rank writes its blocks straight into their rows of one padded C buffer, so each all-gather (or push)
moves only what the gather must and C is the buffer's first M rows.

Measured per strategy (CUDA events around the step, started together after a host barrier, the L2
flushed before): the whole step, the compute alone and the all-gathers alone, each as the slowest rank
of every step, median over steps; TFLOP/s per GPU and the scaling efficiency T1 / (W·T_W) against the
same kernel's single-GPU run. Without a GPU nothing is timed: the ranks check the product.

Failures: an error while a rank prepares (bad input, a refused config, a compile error) is shared with
every rank, and all of them stop with a message naming it. A fault inside the step ends that rank; its
launcher (torchrun, or --nproc) then ends the others. A collective that waits longer than --dist-timeout
raises on the rank that waits, with a message that says so. Rank 0 writes every result as it arrives, so
nothing measured before a failure is lost. NVLink multicast stays off (NVLS_OFF) unless the caller's
environment says otherwise.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist
from tabulate import tabulate

from . import IMPORT_ROOT, report, search, shapes
from .bench import (STATUS_ERROR, STATUS_OK, STATUS_SKIPPED, STATUS_WRONG, FAILED, Result, TimingOptions,
                    _one_line, record_check, time_ms)
from .check import PRECISIONS, check, make_inputs, poison
from .env import environment, set_cublas_math
from .registry import Variant, all_variants, config_label

NVLS_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
STRATEGIES = ("rows", "overlap", "push")
CHUNKED = ("overlap", "push")  # the strategies in --chunks steps
DEFAULT_CHUNKS = 4
DEFAULT_TIMEOUT_S = 300.0
GATHER_MIB = (1, 16, 64, 256)  # one rank's share of an all-gather: the sizes of the bandwidth ceiling
TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
# The gather into one tensor: torch 2.13 renamed it (and deprecates the old name), torch 2.11 has the old one.
all_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor


@dataclass
class DistResult(Result):
    """One kernel and strategy: the check of the whole product, and the step's figures (slowest rank)."""

    strategy: str = ""  # "single", or one of STRATEGIES
    world: int = 1
    chunks: int = 1
    compute_ms: float | None = None  # the rank's kernels alone
    comm_ms: float | None = None  # the all-gathers alone
    single_ms: float | None = None  # T1: the same kernel on the whole product on one GPU
    tflops_per_gpu: float | None = None
    efficiency: float | None = None  # T1 / (world · ms)


DIST_COLUMNS = [f.name for f in dataclasses.fields(DistResult) if f.name != "samples"] + ["size"]


class RankFailed(RuntimeError):
    """An error on one or more ranks, known to every rank."""


def default_rungs(dtype: str) -> list[Variant]:
    """The highest correct rung that takes this dtype and computes the plain product (the grouped and
    fused-epilogue rungs exist for other problems): the per-rank kernel worth scaling."""
    usable = [v for v in all_variants()
              if dtype in v.dtypes and not v.expect_wrong and not v.grouped and v.epilogues == ("none",)]
    return usable[-1:]


def block_rows(M: int, world: int, chunks: int) -> int:
    """The rows of every block: ceil(M / (world·chunks))."""
    return -(-M // (world * chunks))


def blocks(M: int, world: int, chunks: int, rank: int) -> list[tuple[int, int]]:
    """(first row, rows) of the block `rank` computes at each step: block j·world + rank, clipped to M."""
    size = block_rows(M, world, chunks)
    firsts = ((j * world + rank) * size for j in range(chunks))
    return [(first, max(0, min(size, M - first))) for first in firsts]


@dataclass
class Step:
    """One rank's part of the distributed product: per step, a launch (None: no rows here) and the
    in-place all-gather of that step's blocks."""

    launches: list[Callable[[], object] | None]
    gathers: list[tuple[torch.Tensor, torch.Tensor]]  # (this rank's block, the step's rows of C)
    overlap: bool

    def __call__(self) -> None:
        works = []
        for launch, (block, rows) in zip(self.launches, self.gathers):
            if launch is not None:
                launch()
            work = all_gather(rows, block, async_op=self.overlap)
            if self.overlap:
                works.append(work)
        for work in works:
            work.wait()

    def compute(self) -> None:
        for launch in self.launches:
            if launch is not None:
                launch()

    def communicate(self) -> None:
        for work in [all_gather(rows, block, async_op=True) for block, rows in self.gathers]:
            work.wait()


@dataclass
class PushStep:
    """The push strategy's part on one rank: per step a launch (None: no rows here) and the copies of its block
    into each peer's C, each peer's on its own stream (its own copy engine), between two barriers."""

    launches: list[Callable[[], object] | None]
    pushes: list[list[tuple[torch.Tensor, torch.Tensor]]]  # per step: (this rank's block, a peer's same rows)
    handle: object  # the symmetric memory of C: the barriers
    streams: list[torch.cuda.Stream]  # one per peer

    def _push(self, copies: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        for stream, (block, peer) in zip(self.streams, copies):
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                peer.copy_(block)  # contiguous, same dtype: a device-to-device memcpy over NVLink, no SM

    def _join(self) -> None:
        for stream in self.streams:
            torch.cuda.current_stream().wait_stream(stream)

    def __call__(self) -> None:
        self.handle.barrier(channel=0)  # no rank writes into a C its owner still reads
        for launch, copies in zip(self.launches, self.pushes):
            if launch is not None:
                launch()
            self._push(copies)
        self._join()
        self.handle.barrier(channel=0)  # every peer's rows have landed here

    def compute(self) -> None:
        for launch in self.launches:
            if launch is not None:
                launch()

    def communicate(self) -> None:
        self.handle.barrier(channel=0)
        for copies in self.pushes:
            self._push(copies)
        self._join()
        self.handle.barrier(channel=0)


def peer_views(handle, out: torch.Tensor, world: int, rank: int) -> dict[int, torch.Tensor]:
    """Each peer's C buffer, mapped here. get_buffer addresses a peer's allocation from its start, so C
    must begin its allocation (symmetric memory's own pool does not split blocks)."""
    if handle.buffer_ptrs[rank] != out.data_ptr():
        raise RuntimeError("symmetric memory: C does not start its allocation, so its peers' views would be "
                           "misplaced")
    return {peer: handle.get_buffer(peer, tuple(out.shape), out.dtype) for peer in range(world) if peer != rank}


def c_buffer(shape: tuple[int, int], dtype: torch.dtype, device: torch.device, strategy: str) -> torch.Tensor:
    """The padded C buffer a strategy gathers into: in symmetric memory for push."""
    if strategy == "push":
        from torch.distributed import _symmetric_memory as symm_mem

        return symm_mem.empty(shape, dtype=dtype, device=device)
    return torch.empty(shape, dtype=dtype, device=device)


def kernel(variant: Variant | None, impl: str, config: dict, a: torch.Tensor, b: torch.Tensor,
           c: torch.Tensor) -> Callable[[], object] | None:
    """A launch computing c = a @ b with the rung's `impl` kernel, or torch.matmul (variant None)."""
    if a.shape[0] == 0:
        return None
    if variant is None:
        return lambda: torch.matmul(a, b, out=c)
    return variant.prepare(impl, a, b, out=c, **config).run


def build_step(variant, impl, config, a, b, out, world: int, rank: int, chunks: int, strategy: str,
               handle=None):
    """This rank's step into `out`, the padded C buffer (c_buffer; C is its first M rows); `handle`: out's
    symmetric memory, for push."""
    M = a.shape[0]
    size = block_rows(M, world, chunks)
    peers = peer_views(handle, out, world, rank) if strategy == "push" else {}
    launches, gathers, pushes = [], [], []
    for j, (first, rows) in enumerate(blocks(M, world, chunks, rank)):
        launches.append(kernel(variant, impl, config, a[first:first + rows], b, out[first:first + rows]))
        start = j * world * size
        mine = slice(start + rank * size, start + (rank + 1) * size)
        gathers.append((out[mine], out[start:start + world * size]))
        pushes.append([(out[mine], view[mine]) for view in peers.values()])
    if strategy == "push":
        return PushStep(launches, pushes, handle, [torch.cuda.Stream(a.device) for _ in peers])
    return Step(launches, gathers, strategy == "overlap")


@dataclass
class Rank:
    rank: int
    world: int
    device: torch.device


def init(timeout_s: float) -> Rank:
    """Join the process group torchrun (or --nproc) described in the environment."""
    missing = [v for v in TORCHRUN_VARIABLES if v not in os.environ]
    if missing:
        raise SystemExit(f"--distributed runs as one of the processes torchrun starts ({', '.join(missing)} not set): "
                         "run `torchrun --nproc-per-node=N compare.py --distributed ...`, or `compare.py --nproc N`")
    for name, value in NVLS_OFF.items():
        os.environ.setdefault(name, value)
    rank, world, local = (int(os.environ[v]) for v in ("RANK", "WORLD_SIZE", "LOCAL_RANK"))
    timeout = datetime.timedelta(seconds=timeout_s)
    if torch.cuda.is_available():
        if local >= torch.cuda.device_count():
            raise SystemExit(f"rank {rank}: local rank {local} but this machine has {torch.cuda.device_count()} "
                             "GPU(s): start at most one process per GPU")
        device = torch.device("cuda", local)
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", timeout=timeout, device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo", timeout=timeout)
    return Rank(rank, world, device)


def agree(error: str, world: int) -> list[str]:
    """Every rank's error, named by rank ([] when none had one): all ranks then decide alike."""
    errors = [None] * world
    dist.all_gather_object(errors, error)
    return [f"rank {r}: {e}" for r, e in enumerate(errors) if e]


def slowest(samples: list[float], device: torch.device, world: int) -> list[float]:
    """Per timed step, the slowest rank's time (every rank times the same number of steps)."""
    mine = torch.tensor(samples, dtype=torch.float64, device=device)
    every = torch.empty((world, len(samples)), dtype=torch.float64, device=device)
    all_gather(every, mine)
    return every.max(dim=0).values.tolist()


def time_steps(fn: Callable[[], None], options: TimingOptions, device: torch.device, world: int) -> list[float]:
    """The slowest rank's time of each of n steps; every rank starts each step after a host barrier and an
    L2 flush. n comes from a first timed step, the slowest rank's, so that every rank runs the same n."""
    from triton import runtime

    flush = runtime.driver.active.get_empty_cache_for_benchmark()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def step() -> float:  # every rank starts together
        torch.cuda.synchronize(device)
        dist.barrier()
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    step()  # compiles and searches
    estimate = max(slowest([step()], device, world)[0], 1e-3)
    for _ in range(min(math.ceil(options.warmup_ms / estimate), 1000)):
        fn()
    samples = []
    for _ in range(max(options.min_runs, min(math.ceil(options.rep_ms / estimate), 1000))):
        flush.zero_()
        samples.append(step())
    return slowest(samples, device, world)


def _median(samples: list[float]) -> float:
    return float(np.median(samples))


def gather_record(via: str, mib: int, world: int, ms: float | None, failed: str = "") -> dict:
    """nccl-tests' conventions: algorithm bandwidth is the gathered bytes over the time; bus bandwidth,
    algbw·(W-1)/W, is what each GPU's links carried, comparable across rank counts. `failed`: why there is
    no time."""
    if ms is None:
        return {"via": via, "MiB per rank": mib, "ranks": world, "ms": f"failed: {failed}", "algbw GB/s": "",
                "busbw GB/s": ""}
    algbw = mib * 2**20 * world / (ms * 1e-3) / 1e9
    return {"via": via, "MiB per rank": mib, "ranks": world, "ms": round(ms, 4), "algbw GB/s": round(algbw, 1),
            "busbw GB/s": round(algbw * (world - 1) / world, 1)}


def gather_bandwidth(rank: Rank, timing: TimingOptions, push: bool) -> list[dict]:
    """The gather alone at a few sizes, timed as the strategies' steps are: NCCL's all-gather (rows,
    overlap) and, with `push`, the copy engines' pushes between barriers. The ceiling for the strategies'
    communication. A way that fails on any rank gets a row that says why, on every rank."""
    records = []
    for mib in GATHER_MIB:
        rows = mib * 2**20 // 2
        for via in ("NCCL all-gather", "copy engines") if push else ("NCCL all-gather",):
            strategy = "push" if via == "copy engines" else "overlap"
            error, gathered = "", None
            try:
                gathered = c_buffer((rank.world * rows, 1), torch.bfloat16, rank.device, strategy)
            except Exception as exc:
                error = _one_line(exc)
            failed = agree(error, rank.world)
            if failed:
                records.append(gather_record(via, mib, rank.world, None, "; ".join(failed)))
                continue
            block = gathered[rank.rank * rows:(rank.rank + 1) * rows]
            block.fill_(1)
            if strategy == "push":
                from torch.distributed import _symmetric_memory as symm_mem

                handle = symm_mem.rendezvous(gathered, dist.group.WORLD)
                fn = PushStep([None], [[(block, view[rank.rank * rows:(rank.rank + 1) * rows])
                                        for view in peer_views(handle, gathered, rank.world, rank.rank).values()]],
                              handle, [torch.cuda.Stream(rank.device) for _ in range(rank.world - 1)]).communicate
            else:
                def fn(gathered=gathered, block=block):  # in place: the block is this rank's share
                    all_gather(gathered, block)
            records.append(gather_record(via, mib, rank.world, _median(time_steps(fn, timing, rank.device,
                                                                                   rank.world))))
    return records


def topology() -> str:
    """How the host's GPUs are linked, from `nvidia-smi topo -m`: the link between each pair (NV18: 18
    NVLinks), every GPU of the host, whichever the ranks use."""
    try:
        text = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unknown ({_one_line(exc)})"
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line).rstrip() for line in text.splitlines()]
    header = next((line.split("\t") for line in lines if line.lstrip().startswith("GPU0")), None)
    if header is None:
        return "unknown (nvidia-smi topo -m printed no GPU matrix)"
    columns = {i: name.strip() for i, name in enumerate(header) if re.fullmatch(r"GPU\d+", name.strip())}
    links = []
    for line in lines:
        cells = line.split("\t")
        row = cells[0].strip()
        if re.fullmatch(r"GPU\d+", row):
            links += [f"{row}-{name} {cells[i].strip()}" for i, name in columns.items()
                      if i < len(cells) and int(name[3:]) > int(row[3:])]
    return ", ".join(links) or "one GPU"


def new_result(variant: Variant | None, impl: str, config: dict, strategy: str, shape, dtype: str, rank: Rank,
               chunks: int, seed: int, inputs: str) -> DistResult:
    rung, name = ("cuBLAS", "torch.matmul") if variant is None else (variant.tag, variant.name)
    return DistResult(rung, name, config_label(config), impl, dtype, *shape, seed=seed, inputs=inputs,
                      strategy=strategy, world=1 if strategy == "single" else rank.world,
                      chunks=chunks if strategy in CHUNKED else 1)


def differs_from_rank0(C: torch.Tensor, rank: int) -> str:
    """Every rank ends with all of C, assembled by its own gather (or by its peers' pushes): each must hold
    exactly rank 0's, which the float64 check judged ("" when it does; NaN, unwritten, differs)."""
    theirs = C.clone() if rank == 0 else torch.empty_like(C)
    dist.broadcast(theirs, src=0)
    differ = int((C != theirs).sum())  # NaN differs from everything, itself included
    return f"its C differs from rank 0's in {differ} of {C.numel()} elements" if differ else ""


def run_case(result: DistResult, variant, config, a, b, rank: Rank, timing: TimingOptions | None,
             baselines: dict) -> None:
    """Check and time one kernel under one strategy; every rank calls it, rank 0 fills `result`."""
    precision = PRECISIONS[result.dtype]
    exact = result.inputs == "integers"
    single = result.strategy == "single"
    def prepared(make):  # every rank's error, known to all: they stop together, none waits in a collective
        error, made = "", None
        try:
            made = make()
        except Exception as exc:
            error = _one_line(exc)
        failed = agree(error, rank.world)
        if failed:
            result.status, result.note = STATUS_ERROR, "; ".join(failed)
            raise RankFailed(result.note)
        return made

    if single:
        out = prepared(lambda: torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device))
        launch = prepared(lambda: kernel(variant, result.impl, config, a, b, out) if rank.rank == 0 else None)
        step = launch or (lambda: None)
    else:
        rows = rank.world * result.chunks * block_rows(a.shape[0], rank.world, result.chunks)
        out = prepared(lambda: c_buffer((rows, b.shape[1]), a.dtype, a.device, result.strategy))
        handle = None
        if result.strategy == "push":
            from torch.distributed import _symmetric_memory as symm_mem

            handle = symm_mem.rendezvous(out, dist.group.WORLD)  # collective: every rank has its buffer
        step = prepared(lambda: build_step(variant, result.impl, config, a, b, out, rank.world, rank.rank,
                                           result.chunks, result.strategy, handle))
    C = out[:a.shape[0]]

    def checked() -> str:
        poison(out)
        step()
        verdict = [""]
        if rank.rank == 0:
            outcome = check(C, a, b, precision, exact)
            record_check(result, outcome)
            verdict = [outcome.why() or STATUS_OK]
        dist.broadcast_object_list(verdict, src=0)
        others = [] if single else agree(differs_from_rank0(C, rank.rank), rank.world)
        return verdict[0] if verdict[0] != STATUS_OK or not others else "; ".join(others)

    verdict = checked()
    if verdict != STATUS_OK:
        result.status, result.note = STATUS_WRONG, verdict
        return
    if timing is not None and not single:
        result.samples = time_steps(step, timing, rank.device, rank.world)
        result.compute_ms = _median(time_steps(step.compute, timing, rank.device, rank.world))
        result.comm_ms = _median(time_steps(step.communicate, timing, rank.device, rank.world))
    elif timing is not None and rank.rank == 0:
        result.samples = time_ms(step, timing, rank.device)
        result.compute_ms = _median(result.samples)
    dist.barrier()
    verdict = checked()  # once more after the timed steps: a kernel right once and wrong later fails here
    if verdict != STATUS_OK:
        result.status, result.note = STATUS_WRONG, f"changed between calls: {verdict}"
        return
    result.status = STATUS_OK
    if result.samples:
        summarize(result, baselines)


def summarize(result: DistResult, baselines: dict) -> None:
    """Median and spread of the step, TFLOP/s per GPU, efficiency against T1, % of cuBLAS's same strategy."""
    from .bench import summarize as figures

    cublas = baselines.get(("cublas", "cuBLAS", "", result.strategy))
    figures(result, cublas if result.impl != "cublas" else None, None)
    result.tflops_per_gpu = result.tflops / result.world
    if result.strategy == "single":
        result.timing = "events (do_bench), one GPU"
        return
    result.timing = "events, slowest rank per step"
    result.single_ms = baselines.get((result.impl, result.rung, result.config, "single"))
    if result.single_ms:
        result.efficiency = result.single_ms / (result.world * result.ms)


def cases(variants: list[Variant], impls, strategies: tuple[str, ...]):
    """Per size: torch.matmul first (the others' % of cuBLAS), then each rung and language; each kernel
    single first (T1), then the chosen strategies."""
    kernels = [(None, "cublas", {})] if "cublas" in impls else []
    kernels += [(v, impl, dict(c)) for v in variants for c in v.configs for impl in ("cuda", "triton")
                if impl in impls]
    for variant, impl, config in kernels:
        for strategy in ("single", *strategies):
            yield variant, impl, config, strategy


def skip(variant: Variant | None, impl: str, dtype: str, device: torch.device, strategy: str) -> str:
    if strategy == "push" and device.type != "cuda":
        return "push copies between GPUs' memories (symmetric memory): GPUs only"
    if variant is None:
        return ""
    if getattr(variant, impl) is None:
        return f"no {impl} implementation"
    if dtype not in variant.dtypes:
        return f"supports {', '.join(variant.dtypes)} only"
    if device.type != "cuda" and impl == "cuda":
        return "CUDA C needs a GPU"
    if device.type == "cuda" and torch.cuda.get_device_capability(device) < variant.min_cc:
        return f"needs compute capability {variant.min_cc[0]}.{variant.min_cc[1]}"
    return ""


def strategy_label(strategy: str, chunks: int) -> str:
    """"push ×4": a strategy in steps with its number of steps; "rows", "single" as they are."""
    return f"{strategy} ×{chunks}" if strategy in CHUNKED else strategy


def dist_table(results: list[DistResult], fmt: str = "simple") -> str:
    """One row per kernel and strategy: the step (slowest rank), per-GPU speed, efficiency and where the time went."""
    header = ["kernel", "strategy", "ranks", "ms", "TFLOP/s per GPU", "efficiency %", "compute ms", "comm ms",
              "%cuBLAS", "check"]
    body = []
    for r in results:
        kernel_name = "torch.matmul" if r.impl == "cublas" else f"{r.rung} {r.name} {r.impl}"
        strategy = strategy_label(r.strategy, r.chunks)
        body.append([kernel_name + (f" {r.config}" if r.config else ""), strategy, r.world, report._ms(r),
                     report._num(r.tflops_per_gpu, ".1f"), report._num(r.efficiency and 100 * r.efficiency, ".1f"),
                     report._num(r.compute_ms, ".3f"), report._num(r.comm_ms, ".3f"),
                     report._num(r.pct_cublas, ".1f"), report._check(r)])
    header, body = report._drop_empty_columns(header, [[str(x) for x in row] for row in body])
    return tabulate(body, header, tablefmt=fmt, disable_numparse=True)


def gather_table(records: list[dict], fmt: str = "simple") -> str:
    return tabulate([list(r.values()) for r in records], list(records[0]), tablefmt=fmt, disable_numparse=True)


def tables(group: list[DistResult]) -> list[str]:
    return [dist_table(group, "github"), report.notes_table(group, "github")]


def main(args, variants: list[Variant], sizes, seed: int) -> int:
    """compare.py --distributed: this process is one rank; rank 0 prints and writes the results."""
    if args.timing != "events":
        raise SystemExit("--distributed times with CUDA events (a step's collectives are not captured in a graph)")
    if args.retune:
        os.environ[search.MODE_VARIABLE] = "retune"
    rank = init(args.dist_timeout)
    lead = rank.rank == 0
    chosen = [seed]
    dist.broadcast_object_list(chosen, src=0)  # every rank draws the same inputs: rank 0's seed
    seed = chosen[0]
    refused = agree(shapes.check_memory(sizes, PRECISIONS[args.dtype].dtype, rank.device), rank.world)
    if refused:  # every rank holds all of A, B and C, and rank 0 the float64 check: a refusal before allocating
        if lead:
            print("; ".join(refused), file=sys.stderr)
        dist.destroy_process_group()
        return 2
    gpu = rank.device.type == "cuda"
    if gpu:
        set_cublas_math(tf32=args.dtype == "tf32")
    timing = TimingOptions("events", args.warmup, args.rep, args.min_runs) if gpu else None
    log = None
    if lead:
        env = environment(rank.device)
        env.update({"distributed": f"{rank.world} rank(s), {dist.get_backend()}, "
                                   + ", ".join(f"{k}={os.environ.get(k, '')}" for k in NVLS_OFF),
                    "dtype": args.dtype, "inputs": args.inputs, "seed": str(seed),
                    "timing": ("events around each step after a host barrier and an L2 flush; the slowest rank "
                               f"per step, median of >= {args.min_runs} steps and >= {args.rep} ms") if gpu
                    else "none (no GPU: the ranks check the product, nothing is timed)"})
        if gpu:
            env["GPU links"] = topology()
        print(report.env_table(env))
        log = report.ResultLog(env, csv_path=args.csv, json_path=args.json, markdown_path=args.markdown,
                               columns=DIST_COLUMNS, tables=tables)
    if gpu and rank.world > 1:
        gathers = gather_bandwidth(rank, timing, "push" in args.strategies)
        if lead:
            log.add_records("all-gather", gathers)
            log.add_section("The gather alone", gather_table(gathers, "github"))
            print("\nThe gather alone (the ceiling for the strategies' communication)\n" + gather_table(gathers))
    impls = args.impl if gpu else tuple(i for i in args.impl if i != "cuda")
    plan = list(cases(variants, impls, args.strategies))
    status = 0
    try:
        for i, shape in enumerate(sizes):
            a, b = make_inputs(*shape, PRECISIONS[args.dtype], rank.device, seed + i, args.inputs)
            baselines: dict = {}
            for variant, impl, config, strategy in plan:
                result = new_result(variant, impl, config, strategy, shape, args.dtype, rank, args.chunks,
                                    seed + i, args.inputs)
                result.note = skip(variant, impl, args.dtype, rank.device, strategy)
                if not result.note:
                    try:
                        run_case(result, variant, config, a, b, rank, timing, baselines)
                    finally:
                        if lead and result.status != STATUS_SKIPPED:
                            log.add(result)
                if result.ms is not None:
                    baselines[(impl, result.rung, result.config, strategy)] = result.ms
                if lead:
                    if result.status == STATUS_SKIPPED:
                        log.add(result)
                    timed = f" {result.ms:.3f} ms" if result.ms is not None else ""
                    print(f"[{len(log.results)}/{len(plan) * len(sizes)}] {result.size} {result.rung} {impl} "
                          f"{strategy}: {result.status}{timed}", file=sys.stderr, flush=True)
    except RankFailed as exc:
        if lead:
            print(f"\nthe distributed run stopped: {exc}", file=sys.stderr)
        status = 1
    except Exception as exc:
        why = _one_line(exc)
        if "timed out" in why.lower() or "timeout" in why.lower():
            why = (f"a collective waited longer than --dist-timeout {args.dist_timeout:g} s (another rank stopped "
                   f"answering): {why}")
        print(f"\nrank {rank.rank}: {why}", file=sys.stderr, flush=True)
        if log is not None:
            log.close()
        os._exit(1)  # the other ranks may be waiting in a collective: the launcher ends them
    if lead:
        log.close()
        for (size, dtype), group in report.by_shape(log.results).items():
            print(f"\n{size} {dtype}, {rank.world} rank(s)" + ("" if gpu else " (checked, not timed)"))
            print(dist_table(group))
            notes = report.notes_table(group)
            if notes:
                print("\n" + notes)
        if args.plots and gpu:
            from ..tools import plots

            written = plots.write_all(log.document(), args.plots)
            print("\nplots: " + (", ".join(map(str, written)) or "none (nothing was timed)"))
        if any(r.status in FAILED for r in log.results):
            status = 1
    dist.destroy_process_group()
    return status


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def without_option(argv: list[str], option: str) -> list[str]:
    """argv without `option VALUE` or `option=VALUE`."""
    kept, skip_next = [], False
    for arg in argv:
        if skip_next:
            skip_next = False
        elif arg == option:
            skip_next = True
        elif not arg.startswith(option + "="):
            kept.append(arg)
    return kept


def launch(argv: list[str], nproc: int) -> int:
    """compare.py --nproc N: start N ranks of `compare.py --distributed` with torchrun's environment, and end
    them all as soon as one fails."""
    if torch.cuda.is_available() and nproc > torch.cuda.device_count():
        raise SystemExit(f"--nproc {nproc}: this machine has {torch.cuda.device_count()} GPU(s); one process per GPU")
    env = {**NVLS_OFF, **os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()),
           "WORLD_SIZE": str(nproc), "LOCAL_WORLD_SIZE": str(nproc),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(IMPORT_ROOT), os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-c", "import sys; from implementations.core.cli import main; sys.exit(main())",
               *without_option(argv, "--nproc"), "--distributed"]
    ranks = [subprocess.Popen(command, env={**env, "RANK": str(r), "LOCAL_RANK": str(r)}) for r in range(nproc)]
    try:
        while True:
            codes = [p.poll() for p in ranks]
            failed = [(r, code) for r, code in enumerate(codes) if code not in (None, 0)]
            if failed:
                r, code = failed[0]
                ended = _end(ranks)
                print(f"rank {r} exited with status {code}"
                      + (f"; ended rank(s) {', '.join(map(str, ended))}" if ended else ""), file=sys.stderr)
                return 1
            if all(code == 0 for code in codes):
                return 0
            time.sleep(0.1)
    except KeyboardInterrupt:
        _end(ranks)
        return 130


def _end(ranks: list[subprocess.Popen], grace_s: float = 10.0) -> list[int]:
    """Terminate the ranks still running (then kill those that do not stop); returns which."""
    running = [r for r, p in enumerate(ranks) if p.poll() is None]
    for r in running:
        ranks[r].terminate()
    deadline = time.monotonic() + grace_s
    for r in running:
        try:
            ranks[r].wait(max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            ranks[r].kill()
            ranks[r].wait()
    return running
