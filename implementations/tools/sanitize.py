"""compute-sanitizer over the same child: racecheck shows the broken-on-purpose rung's hazards beside the
correct rung it breaks, memcheck (or initcheck, synccheck) checks any rung on request.

Each rung, config and language runs in a child process of its own, so that every report in its log
belongs to that launch:

    compute-sanitizer --tool racecheck --racecheck-report analysis --target-processes application-only
        --kernel-name regex=^(_Z12smem_no_sync|smem_no_sync$) --log-file <log>
        python -m implementations.tools.profile --rungs v04 --impl cuda --sizes 97x61x130 --dtype fp32
            --config-json '{"TILE": 16}' --no-warmup

- The tools instrument every kernel of the process (torch's, Triton's autotuning, cuBLAS's) unless
  filtered, and NVTX ranges do not filter them: `--kernel-name regex=` keeps the rung's own kernels.
  compute-sanitizer matches the *mangled* name, so a CUDA C++ kernel is `_Z<length><name>...`
  ("_Z11smem_tilingILi32EE...": the length pins the name, where a bare substring "vectorize" would
  also match torch's vectorized_elementwise_kernel), an extern "C" or Triton kernel its plain name.
- `--no-warmup`: one launch each (an autotuned rung's search launches still run, and are checked).
- racecheck's analysis report: one report per pair of racing instructions, with the number of
  byte-level hazards behind it (`--racecheck-report hazard|all` prints one report per byte).
- racecheck checks shared memory only. A rung that is wrong on purpose and comes out clean raced
  somewhere racecheck does not look (v04's Triton side: split-K programs adding into C in global
  memory), and the verdict says so instead of calling it clean.
"""

from __future__ import annotations

import collections
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from tabulate import tabulate

from ..core import tasks
from .profile import child_command, cuda_kernel_names, read_child_output, triton_kernel_names
from ..core import IMPORT_ROOT
from ..core.registry import LANGS, Variant, all_variants, config_label

TOOLS = ("racecheck", "memcheck", "initcheck", "synccheck")
CHILD_TIMEOUT_S = 600  # one rung, config and language under the tool: far above what a correct one takes
DEFAULT_SIZE = (97, 61, 130)  # ragged in all three: edge masks run, and K spans several tiles (TILE 32: 5 steps)
FIRST_LINES = 8  # report lines shown per launch
_RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
_ERROR_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) errors?")
_HAZARDS = re.compile(r"\[(\d+) hazards?\]")  # the tail of an analysis report
_HAZARD = re.compile(r"Potential (RAW|WAR|WAW) hazard detected")  # a byte-level hazard report
_API_ERROR = "Program hit "  # "Program hit cudaErrorInvalidValue (error 1) ... on CUDA API call to ..."
_NOISE = ("COMPUTE-SANITIZER", "Saved host backtrace", "Host Frame", "Device Frame", "SUMMARY:")


def sanitizer_missing() -> str:
    """'' when compute-sanitizer is on the PATH, else why there will be no sanitizer report."""
    if shutil.which("compute-sanitizer"):
        return ""
    return "compute-sanitizer is not on the PATH: it ships with the CUDA toolkit as <cuda>/bin/compute-sanitizer"


def default_selection(variants: Sequence[Variant] | None = None) -> list[Variant]:
    """What `--sanitize` checks by default: every broken-on-purpose rung, and the correct rung it breaks,
    taken to be the nearest rung below it that is not broken (v04 deletes v03's barriers)."""
    ladder = list(all_variants() if variants is None else variants)
    chosen = set()
    for i, v in enumerate(ladder):
        if v.expect_wrong:
            fixed = next((w for w in reversed(ladder[:i]) if not w.expect_wrong), None)
            chosen |= {v.number} | ({fixed.number} if fixed else set())
    return [v for v in ladder if v.number in chosen]


def kernel_regex(variant: Variant, impl: str) -> str:
    """compute-sanitizer's `--kernel-name regex=` value for one rung and language (mangled names)."""
    if impl == "cuda":
        names = [f"_Z{len(n)}{re.escape(n)}|{re.escape(n)}$" for n in cuda_kernel_names(variant)]
    else:
        names = [f"{re.escape(n)}$" for n in triton_kernel_names(variant)]
    return f"^({'|'.join(names)})"


def sanitizer_command(tool: str, variant: Variant, config: dict, impl: str, size: tuple[int, int, int], dtype: str,
                      log_file: Path, racecheck_report: str = "analysis") -> list[str]:
    report = ["--racecheck-report", racecheck_report] if tool == "racecheck" else []
    return [shutil.which("compute-sanitizer") or "compute-sanitizer", "--tool", tool, *report,
            "--target-processes", "application-only", "--kernel-name", f"regex={kernel_regex(variant, impl)}",
            "--log-file", str(log_file),
            *child_command([variant], [impl], [size], dtype, config=config, warmup=False)]


@dataclass
class Findings:
    """What one compute-sanitizer log says."""
    summary: str = ""  # the tool's summary line; '' when it printed none (the run did not finish)
    reports: int = 0  # racecheck: race reports displayed; the other tools: errors
    errors: int = 0
    warnings: int = 0
    hazards: int = 0  # racecheck: byte-level hazards (the [N hazards] of analysis reports, or hazard reports)
    by_type: dict[str, int] = field(default_factory=dict)  # RAW / WAR / WAW, from byte-level hazard reports
    api_errors: int = 0  # CUDA API errors among the errors: host-side calls, not the kernel's accesses
    lines: list[str] = field(default_factory=list)  # the first report lines, without the tool's prefix


def parse_log(text: str) -> Findings:
    found = Findings()
    body = [re.sub(r"^=+ ?", "", line).rstrip() for line in text.splitlines() if line.startswith("=")]
    race, error = _RACE_SUMMARY.search(text), _ERROR_SUMMARY.search(text)
    if race:
        found.summary = race.group(0)
        found.reports, found.errors, found.warnings = (int(g) for g in race.groups())
    elif error:
        found.summary = error.group(0)
        found.reports = found.errors = int(error.group(1))
    types = collections.Counter(m.group(1) for m in map(_HAZARD.search, body) if m)
    found.by_type = dict(types)
    found.hazards = sum(int(n) for n in _HAZARDS.findall(text)) + sum(types.values())
    found.api_errors = sum(_API_ERROR in line for line in body)
    found.lines = [line for line in body if line.strip() and not any(n in line for n in _NOISE)][:FIRST_LINES]
    return found


@dataclass
class SanitizeResult:
    rung: str
    name: str
    config: str
    impl: str
    tool: str
    expect_wrong: str = ""  # the rung's own statement of its bug, when it is broken on purpose
    launched: bool = False  # the child ran the launch (else `note` says why not)
    findings: Findings | None = None
    note: str = ""
    log: str = ""  # the log's path, when kept

    @property
    def verdict(self) -> str:
        f = self.findings
        if not self.launched:
            return self.note or "the child ran no launch (see its output beside the log)"
        if f is None or not f.summary:
            return self.note or "no summary from compute-sanitizer"
        if self.tool == "racecheck":
            if f.reports:
                return f"{f.reports} race report(s), {f.hazards} hazards ({f.errors} errors, {f.warnings} warnings)"
            if self.expect_wrong:
                return ("no shared-memory hazard, and still wrong on purpose: racecheck checks shared memory only, "
                        f"so it cannot see this race ({self.expect_wrong})")
            return "clean: no shared-memory hazard"
        in_kernel = f.errors - f.api_errors
        text = f"{in_kernel} error(s) in the kernel" if in_kernel else "clean"
        return text + (f" ({f.api_errors} CUDA API error(s) from host-side calls)" if f.api_errors else "")


@dataclass
class SanitizeReport:
    tool: str
    size: tuple[int, int, int]
    results: list[SanitizeResult] = field(default_factory=list)
    problem: str = ""  # non-empty: nothing was checked, and why (print it and go on)


def _log_name(tool: str, v: Variant, config: dict, impl: str) -> str:
    label = re.sub(r"\W+", "", config_label(config).replace(" ", "_"))
    return "_".join(p for p in (tool, v.tag, label, impl) if p)


def _check_one(tool: str, v: Variant, config: dict, impl: str, size: tuple[int, int, int], dtype: str,
               folder: Path, keep: bool, racecheck_report: str) -> SanitizeResult:
    result = SanitizeResult(v.tag, v.name, config_label(config), impl, tool, v.expect_wrong)
    # the checks that need no GPU here (dtype, language); the child checks the device's own limits
    reason = tasks.skip_reason(tasks.Task(v, config, impl, size), dtype, torch.device("cpu"))
    if reason:
        result.note = f"skipped: {reason}"
        return result
    log_file = folder / f"{_log_name(tool, v, config, impl)}.log"
    cmd = sanitizer_command(tool, v, config, impl, size, dtype, log_file, racecheck_report)
    try:
        proc = subprocess.run(cmd, cwd=IMPORT_ROOT, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:  # a kernel that never finishes: this launch's result, not the run's end
        result.note = f"timeout: no result within {CHILD_TIMEOUT_S} s; its process was ended"
        return result
    text = log_file.read_text() if log_file.is_file() else ""
    child = read_child_output(proc.stdout)
    result.launched = bool(child.labels)
    result.findings = parse_log(text)
    result.note = "; ".join(child.notes)
    if not result.findings.summary and not result.note:
        tail = (text.strip() or proc.stderr.strip())[-400:]
        result.note = f"no summary from compute-sanitizer (exit code {proc.returncode}): {tail}"
    if keep:
        log_file.with_suffix(".child.txt").write_text(f"$ {shlex.join(cmd)}\n{proc.stdout}\n{proc.stderr}")
        result.log = str(log_file)
    return result


def sanitize(tool: str, variants: Sequence[Variant], impls: Sequence[str] = LANGS,
             size: tuple[int, int, int] = DEFAULT_SIZE, dtype: str = "fp32", log_dir: Path | None = None,
             racecheck_report: str = "analysis") -> SanitizeReport:
    """Run `tool` on every chosen rung, config and language (cuBLAS is not ours to check: CUDA C and
    Triton only); log_dir (when given) keeps each log and the child's output beside it."""
    if tool not in TOOLS:
        raise ValueError(f"unknown compute-sanitizer tool {tool!r}; choose from {', '.join(TOOLS)}")
    missing = sanitizer_missing()
    if missing:
        return SanitizeReport(tool, size, problem=missing)
    report = SanitizeReport(tool, size)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(log_dir).resolve() if log_dir is not None else Path(tmp)  # the tools run in REPO
        folder.mkdir(parents=True, exist_ok=True)
        for v in variants:
            for config in v.configs:
                for impl in (i for i in impls if i in LANGS):
                    report.results.append(_check_one(tool, v, dict(config), impl, size, dtype, folder,
                                                     log_dir is not None, racecheck_report))
    return report


def format_report(report: SanitizeReport, fmt: str = "simple") -> str:
    """A verdict per launch, then the first reported lines of each launch that had findings."""
    size = "x".join(map(str, report.size))
    if report.problem:
        return f"compute-sanitizer {report.tool}: {report.problem}"
    body = [[f"{r.rung} {r.name}", r.config, r.impl, r.verdict] for r in report.results]
    parts = [tabulate(body, ["rung", "config", "impl", f"{report.tool} at {size}"], tablefmt=fmt,
                      disable_numparse=True, maxcolwidths=[None, None, None, 90])]
    for r in report.results:
        if r.findings and r.findings.reports and r.findings.lines:
            where = " ".join(p for p in (r.rung, r.config, r.impl) if p)
            parts.append(f"\n{where}: first lines of {r.findings.summary}" + (f" (log: {r.log})" if r.log else "")
                         + "".join(f"\n    {line}" for line in r.findings.lines))
    return "\n".join(parts)
