"""Nsight Compute over the chosen rungs: speed of light, DRAM bytes and occupancy per launch.

`profile` runs the child program (implementations/profile.py) under

    ncu --target-processes application-only --clock-control none --nvtx --nvtx-include tvc/
        --kernel-name-base function --kernel-name regex:^(smem_tiling|smem_tiling_kernel|...)$
        --metrics gpu__time_duration.sum,... --csv --page raw --print-units base --log-file <csv>
        python -m implementations.tools.profile --rungs ... --impl ... --sizes ... --dtype ...

- Clock control off: the kernels run at the clocks they get outside the profiler (ncu locks them by
  default, to base or boost clocks by version), so the times are comparable with compare.py's. Cache
  control stays at its default: the caches are flushed before each replay pass, so every kernel reads
  its operands from DRAM once, as the traffic model assumes.
- Only the launches inside the child's NVTX range "tvc" are profiled: not the warm-up and autotuning
  calls, nor torch's kernels outside the range.
- Inside the range the kernel-name filter keeps the rung's own kernels and drops the torch helpers
  some runs launch there (v04's Triton side zeroes C first, v14/v15 pad ragged operands). The names
  come from the rungs themselves (their .cu kernel list and their @triton.jit functions), so a new
  rung is filtered in without an edit here; cuBLAS kernels are matched by the patterns below.
- Each profiled kernel is matched to its launch by the nested NVTX range "tvc#<i>" that ncu prints
  in the CSV's Push/Pop range column, so a launch with several kernels (cuBLAS's split-K reduction)
  or with none that passed the filter is still labelled right.

When ncu is missing, cannot read the performance counters (ERR_NVGPUCTRPERM) or profiles nothing,
the report's `problem` says so, and the caller goes on without these columns.
"""

from __future__ import annotations

import csv
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tabulate import tabulate

from ..core.check import PRECISIONS
from .profile import (RANGE, child_command, cuda_kernel_names, describe, problem_label, read_child_output,
                       triton_kernel_names)
from ..core import IMPORT_ROOT
from ..core.registry import Variant
from ..core.traffic import predicted_bytes

CHILD_TIMEOUT_S = 1800  # every chosen launch profiled in one child process
METRICS = {  # NcuRow field -> Nsight Compute metric
    "time_ns": "gpu__time_duration.sum",
    "sm_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "mem_pct": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram_read": "dram__bytes_read.sum",
    "dram_write": "dram__bytes_write.sum",
    "occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
}
# cuBLAS and cuBLASLt GEMM kernels as Nsight Compute names them on the function basis. NVIDIA
# documents no naming scheme; these are the families seen in profiles of torch.matmul on Ampere and
# Hopper: sm80_xmma_gemm_*/sm90_xmma_gemm_* (the fp32 FFMA kernels of the README), nvjet_* (cuBLASLt's
# Hopper GEMMs), cutlass_* and cutlass::Kernel2<cutlass_80_...> (whose function name is Kernel2),
# ampere_sgemm_* and other *gemm*/*gemv* kernels, and the split-K reduction.
CUBLAS_KERNELS = (r"sm[0-9]+_xmma_.*", r"nvjet_.*", r"cutlass.*", r"(cutlass::)?Kernel2?", r".*gemm.*", r".*gemv.*",
                  r".*splitKreduce.*")
# To bytes and ns. `--print-units base` prints byte and ns (as ncu did on the H100 for
# docs/results/h100_ncu_fp32.md); the scaled units are there for a CSV printed with `--print-units auto`.
SCALE = {"": 1.0, "%": 1.0, "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9,
         "ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6}
_LAUNCH = re.compile(re.escape(RANGE) + r"#(\d+)")
PERMISSION = ("Nsight Compute cannot read this GPU's performance counters (ERR_NVGPUCTRPERM): profiling needs "
              "root, or the driver option NVreg_RestrictProfilingToAdminUsers=0 "
              "(https://developer.nvidia.com/ERR_NVGPUCTRPERM)")


def ncu_missing() -> str:
    """'' when ncu is on the PATH, else why there will be no Nsight Compute figures."""
    if shutil.which("ncu"):
        return ""
    return "ncu (Nsight Compute) is not on the PATH: it ships with the CUDA toolkit as <cuda>/bin/ncu"


def kernel_regex(variants: Iterable[Variant], impls: Iterable[str]) -> str:
    """ncu's --kernel-name value: the chosen rungs' kernels in the chosen languages (plus cuBLAS's when
    chosen), anchored because ncu's regex matches any substring (v07's "vectorize" would match torch's
    vectorized_elementwise_kernel)."""
    impls = set(impls)
    names: list[str] = []
    for v in variants:
        if "cuda" in impls:
            names += cuda_kernel_names(v)
        if "triton" in impls and v.triton is not None:
            names += triton_kernel_names(v)
    patterns = [re.escape(n) for n in dict.fromkeys(names)] + (list(CUBLAS_KERNELS) if "cublas" in impls else [])
    return f"regex:^({'|'.join(patterns)})$"


def ncu_command(variants: Sequence[Variant], impls: Sequence[str], sizes: Sequence[tuple[int, int, int]], dtype: str,
                log_file: Path, **problem) -> list[str]:
    """problem: the child's layouts=, batch=, shared= (profile.child_command)."""
    return [shutil.which("ncu") or "ncu", "--target-processes", "application-only", "--clock-control", "none",
            "--nvtx", "--nvtx-include", f"{RANGE}/", "--kernel-name-base", "function",
            "--kernel-name", kernel_regex(variants, impls), "--metrics", ",".join(METRICS.values()),
            "--csv", "--page", "raw", "--print-units", "base", "--log-file", str(log_file),
            *child_command(variants, impls, sizes, dtype, **problem)]


# ---- reading ncu's raw CSV --------------------------------------------------------------------------


@dataclass
class Launch:
    """One kernel as ncu's raw page lists it."""
    kernel: str
    launch: int | None  # the child's launch index (its nested NVTX range), None without an NVTX column
    values: dict[str, float | None]  # NcuRow field -> value in bytes, ns or %


def short_kernel_name(name: str) -> str:
    """ncu's demangled name without the return type and the parameter list: "smem_tiling<32>"."""
    name = name.strip().removeprefix("void ")
    if name.endswith(")"):
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                return name[:i].rstrip()
    return name


def _number(text: str, unit: str) -> float | None:
    text = text.strip().replace(",", "")  # ncu prints thousands separators: "201,457,664"
    if text in ("", "n/a"):
        return None
    if unit not in SCALE:
        raise ValueError(f"unexpected unit {unit!r} in ncu's CSV")
    return float(text) * SCALE[unit]


def parse_raw_csv(text: str) -> list[Launch]:
    """The launches in `ncu --csv --page raw` output: a header row, a units row, one row per kernel
    (the ==PROF== lines around them are skipped)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        return []
    header, units, *data = csv.reader(line for line in lines[start:] if line.startswith('"'))
    column = {name: i for i, name in enumerate(header)}
    nvtx = next((i for i, name in enumerate(header) if "Push/Pop_Range" in name), None)
    launches = []
    for row in data:
        found = _LAUNCH.findall(row[nvtx]) if nvtx is not None else []
        values = {key: _number(row[column[metric]], units[column[metric]])
                  for key, metric in METRICS.items() if metric in column}
        launches.append(Launch(short_kernel_name(row[column["Kernel Name"]]), int(found[-1]) if found else None,
                               values))
    return launches


@dataclass
class NcuRow:
    """One profiled kernel, labelled with the launch it belongs to."""
    rung: str
    name: str
    config: str
    impl: str
    M: int
    N: int
    K: int
    dtype: str
    tile: tuple[int, int] | None  # the block tile the run computed with (traffic.run_tile), None for cuBLAS
    launch: int
    kernel: str
    layout: str = "nn"
    batch: int = 0  # products in the launch (0: one, not a batch)
    time_ns: float | None = None
    sm_pct: float | None = None
    mem_pct: float | None = None
    dram_read: float | None = None
    dram_write: float | None = None
    occupancy_pct: float | None = None

    @property
    def size(self) -> str:
        return problem_label(self.M, self.N, self.K, self.layout, self.batch)


def match(launches: list[Launch], labels: dict[int, dict]) -> tuple[list[NcuRow], list[str]]:
    """Label each profiled kernel with the launch whose NVTX range it ran in; notes for what did not match.

    Without an NVTX column (an ncu that does not print it) the kernels are taken in order, one per
    launch, and only when the counts agree."""
    notes: list[str] = []
    if launches and all(x.launch is None for x in launches):
        if len(launches) != len(labels):
            return [], [f"ncu's CSV has no NVTX column and {len(launches)} kernels for {len(labels)} launches: "
                        "cannot tell which kernel belongs to which launch"]
        launches = [Launch(x.kernel, i, x.values) for x, i in zip(launches, sorted(labels))]
    rows = []
    for x in launches:
        label = labels.get(x.launch)
        if label is None:
            notes.append(f"kernel {x.kernel} of launch {x.launch}, whose run failed: left out")
            continue
        tile = tuple(label["tile"]) if label.get("tile") else None
        fields = {k: label[k] for k in ("rung", "name", "config", "impl", "M", "N", "K", "dtype", "layout", "batch")
                  if k in label}
        rows.append(NcuRow(**fields, tile=tile, launch=x.launch, kernel=x.kernel, **x.values))
    seen = {row.launch for row in rows}
    notes += [f"{describe(label)}: ncu profiled no kernel of this launch (is its kernel name in the filter?)"
              for i, label in sorted(labels.items()) if i not in seen]
    return rows, notes


# ---- running it ---------------------------------------------------------------------------------------


@dataclass
class NcuReport:
    rows: list[NcuRow] = field(default_factory=list)
    problem: str = ""  # non-empty: no figures, and why (print it and go on)
    notes: list[str] = field(default_factory=list)  # skipped or failed launches, ncu's errors and warnings
    command: list[str] = field(default_factory=list)


def _tool_messages(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.startswith(("==ERROR==", "==WARNING=="))]


def profile(variants: Sequence[Variant], impls: Sequence[str], sizes: Sequence[tuple[int, int, int]], dtype: str,
            log_dir: Path | None = None, **problem) -> NcuReport:
    """Profile every chosen launch under ncu; log_dir (when given) keeps ncu's raw CSV, the child's
    output and the command line. problem: layouts=, batch=, shared= (profile.child_command)."""
    missing = ncu_missing()
    if missing:
        return NcuReport(problem=missing)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(log_dir).resolve() if log_dir is not None else Path(tmp)  # the tools run in REPO
        folder.mkdir(parents=True, exist_ok=True)
        log_file = folder / "ncu_raw.csv"
        cmd = ncu_command(variants, impls, sizes, dtype, log_file, **problem)
        try:
            proc = subprocess.run(cmd, cwd=IMPORT_ROOT, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return NcuReport(command=cmd, problem=f"ncu did not finish within {CHILD_TIMEOUT_S} s; its process was ended")
        log = log_file.read_text() if log_file.is_file() else ""
    if log_dir is not None:
        (folder / "ncu_command.txt").write_text(shlex.join(cmd) + "\n")
        (folder / "ncu_stdout.txt").write_text(proc.stdout)
        (folder / "ncu_stderr.txt").write_text(proc.stderr)
    report = NcuReport(command=cmd)
    child = read_child_output(proc.stdout)
    everything = "\n".join((log, proc.stdout, proc.stderr))
    messages = _tool_messages(everything)
    try:
        launches = parse_raw_csv(log)
    except (ValueError, IndexError, KeyError) as exc:
        report.problem = f"could not read ncu's CSV ({type(exc).__name__}: {exc})"
        return report
    report.rows, unmatched = match(launches, child.labels)
    report.notes = child.notes + unmatched + messages
    if "ERR_NVGPUCTRPERM" in everything:
        report.problem = PERMISSION
    elif not report.rows:
        detail = "; ".join(messages + [proc.stderr.strip()[-500:]]).strip("; ") or "no output"
        report.problem = f"ncu profiled no kernel (exit code {proc.returncode}): {detail}"
    return report


# ---- tables -------------------------------------------------------------------------------------------


def _num(value: float | None, fmt: str, scale: float = 1.0) -> str:
    return "" if value is None else format(value / scale, fmt)


def _rung(row: NcuRow) -> str:
    return f"{row.rung} {row.name}"


def ncu_table(rows: list[NcuRow], fmt: str = "simple") -> str:
    """Speed of light per profiled kernel: SM and memory throughput as % of peak, DRAM bytes, achieved
    occupancy (warps active per SM as % of the maximum)."""
    header = ["rung", "config", "impl", "size", "kernel", "time µs", "SM %", "memory %", "DRAM read MB",
              "DRAM write MB", "occupancy %"]
    body = [[_rung(r), r.config, r.impl, r.size, r.kernel, _num(r.time_ns, ",.1f", 1e3), _num(r.sm_pct, ".1f"),
             _num(r.mem_pct, ".1f"), _num(r.dram_read, ",.1f", 1e6), _num(r.dram_write, ",.1f", 1e6),
             _num(r.occupancy_pct, ".1f")] for r in rows]
    return tabulate(body, header, tablefmt=fmt, disable_numparse=True, maxcolwidths=[None] * 4 + [48] + [None] * 6)


def traffic_table(rows: list[NcuRow], fmt: str = "simple") -> str:
    """The memory-traffic lesson: the global traffic each rung's block tile asks for (traffic.py)
    beside the DRAM bytes ncu measured (read + write). Below 1, the L2 cache served the repeats."""
    header = ["rung", "config", "impl", "size", "tile", "predicted MB", "DRAM read+write MB", "measured / predicted"]
    body = []
    for r in rows:
        itemsize = PRECISIONS[r.dtype].dtype.itemsize  # the output has the operands' dtype
        products = max(r.batch, 1)  # each product of a batch reads its own tiles (a shared operand's from L2)
        predicted = products * predicted_bytes(r.M, r.N, r.K, r.tile, itemsize, itemsize) if r.tile else None
        measured = None if r.dram_read is None or r.dram_write is None else r.dram_read + r.dram_write
        ratio = measured / predicted if predicted and measured is not None else None
        body.append([_rung(r), r.config, r.impl, r.size, "x".join(map(str, r.tile)) if r.tile else "",
                     _num(predicted, ",.1f", 1e6), _num(measured, ",.1f", 1e6), _num(ratio, ".3f")])
    return tabulate(body, header, tablefmt=fmt, disable_numparse=True)
