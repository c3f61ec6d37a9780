"""Tables for the terminal and files that are written as each result arrives (CSV, JSON, Markdown).

A sweep that fails or is interrupted keeps everything measured before: CSV rows are appended and
flushed one by one, and the JSON and Markdown files are rewritten whole (write, then rename) after
every result, so they are complete documents at any moment.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable
from dataclasses import asdict, fields
from pathlib import Path
from typing import get_args, get_type_hints

from tabulate import tabulate

from .bench import Result
from .cuda_c import PtxasReport
from .tasks import BASELINES

RESULT_COLUMNS = [f.name for f in fields(Result) if f.name != "samples"] + ["size"]


def _num(value, fmt: str) -> str:
    return "" if value is None else format(value, fmt)


def _ms(r: Result) -> str:
    if r.ms is None:
        return ""
    spread = 50.0 * (r.ms_p80 - r.ms_p20) / r.ms if r.ms else 0.0
    return f"{r.ms:.3f} ±{spread:.1f}%"


def _speedup(value: float | None) -> str:
    """×CPU: one decimal below 10 (v01 runs at 0.4× the CPU), whole numbers above."""
    return "" if value is None else format(value, ".1f" if value < 10 else ",.0f")


NO_COMPILE_S = 0.005  # a first call this close to a repeat call compiled nothing


def _compile(r: Result) -> str:
    if r.compile_s is None:
        return ""
    return "-" if r.compile_s < NO_COMPILE_S else f"{r.compile_s:.2f}"


def _check(r: Result) -> str:
    if r.error is None:
        return r.status
    return f"{r.status} {r.error:.1e}"


def _rows_by_rung(results: Iterable[Result]) -> dict[tuple[str, str, str], dict[str, Result]]:
    rows: dict[tuple[str, str, str], dict[str, Result]] = {}
    for r in results:
        rows.setdefault((r.rung, r.name, r.config), {})[r.impl] = r
    return rows


def _drop_empty_columns(header: list[str], body: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    keep = [i for i in range(len(header)) if any(row[i] != "" for row in body)]
    return [header[i] for i in keep], [[row[i] for i in keep] for row in body]


def ladder_table(results: list[Result], fmt: str = "simple") -> str:
    """One row per rung and config, CUDA C beside Triton; the baselines first (CPU, cuBLAS, with an epilogue
    the unfused torch sequence, with groups torch._grouped_mm and the graphed loop), their figures in the CUDA
    columns. ×CPU, ×unfused, ×grouped_mm, ×loop graph: that baseline's time over the row's."""
    ratios = ["×CPU", "×unfused", "×grouped_mm", "×loop graph"]
    header = ["rung", "config", *(f"{lang} {column}" for lang in ("CUDA", "Triton")
                                  for column in ["ms", "TFLOP/s", "%cuBLAS", *ratios, "check"])]
    body = []
    for (rung, name, config), by_impl in _rows_by_rung(results).items():
        row = [f"{rung} {name}", config]
        for impl in ("cuda", "triton"):
            baseline = next((by_impl[b] for b in BASELINES if b in by_impl), None)
            r = by_impl.get(impl, baseline if impl == "cuda" else None)
            if r is None:
                row += [""] * (4 + len(ratios))
            else:
                row += [_ms(r), _num(r.tflops, ".2f"), _num(r.pct_cublas, ".1f"), _speedup(r.speedup_cpu),
                        _num(r.speedup_unfused, ".2f"), _num(r.speedup_grouped_mm, ".2f"),
                        _num(r.speedup_loop_graph, ".2f"), _check(r)]
        body.append(row)
    header, body = _drop_empty_columns(header, body)
    return tabulate(body, header, tablefmt=fmt, disable_numparse=True)


def kernel_table(results: list[Result], fmt: str = "simple") -> str:
    """Registers, shared memory, local (spill) bytes and compile time of each compiled kernel."""
    header = ["rung", "config", "CUDA regs", "CUDA smem B", "CUDA local B", "CUDA compile s",
              "Triton regs", "Triton smem B", "Triton local B", "Triton compile s"]
    body = []
    for (rung, name, config), by_impl in _rows_by_rung(results).items():
        if any(b in by_impl for b in BASELINES):
            continue
        row = [f"{rung} {name}", config]
        for impl in ("cuda", "triton"):
            r = by_impl.get(impl)
            row += ["", "", "", ""] if r is None else [
                _num(r.registers, "d"), _num(r.smem_bytes, "d"), _num(r.local_bytes, "d"), _compile(r)]
        body.append(row)
    header, body = _drop_empty_columns(header, body)
    if len(header) <= 2:  # nothing was compiled for a GPU (the interpreter)
        return ""
    return tabulate(body, header, tablefmt=fmt, disable_numparse=True)


def notes_table(results: list[Result], fmt: str = "simple") -> str:
    """Why something was skipped, failed or is wrong on purpose (one line per distinct note)."""
    seen: dict[str, list[str]] = {}
    for r in results:
        if r.note:
            seen.setdefault(r.note, []).append(f"{r.rung} {r.config} {r.impl}".replace("  ", " ").strip())
    body = [[", ".join(sorted(set(who))), note] for note, who in seen.items()]
    return tabulate(body, ["where", "note"], tablefmt=fmt) if body else ""


def config_values(config: str) -> dict[str, str]:
    """A config label ("BM=128 BN=64") back into its parameters."""
    return dict(part.split("=", 1) for part in config.split() if "=" in part)


def sweep_table(results: list[Result], name: str, fmt: str = "simple") -> str:
    """One row per size, rung and value of the swept parameter: each language's time, % of cuBLAS or
    why it did not run (a refusal states the limit)."""
    body = []
    rows: dict[tuple, dict[str, Result]] = {}
    for r in results:
        value = config_values(r.config).get(name)
        if value is not None:
            rows.setdefault((r.size, r.dtype, f"{r.rung} {r.name}", int(value)), {})[r.impl] = r
    for (size, dtype, rung, value), by_impl in rows.items():
        row = [f"{size} {dtype}", rung, f"{name}={value}"]
        for impl in ("cuda", "triton"):
            r = by_impl.get(impl)
            if r is None:
                row += ["", "", ""]
            elif r.ms is None:
                row += [r.status, "", r.note]
            else:
                row += [_ms(r), _num(r.pct_cublas, ".1f"), ""]
        body.append(row)
    header = ["size", "rung", "value", "CUDA ms", "CUDA %cuBLAS", "CUDA note", "Triton ms", "Triton %cuBLAS",
              "Triton note"]
    header, body = _drop_empty_columns(header, body)
    return tabulate(body, header, tablefmt=fmt, disable_numparse=True, maxcolwidths=60)


def compile_table(reports: list[tuple[str, PtxasReport]], fmt: str = "simple") -> str:
    header = ["rung", "kernel", "arch", "registers", "smem B", "stack B", "spill st/ld B", "nvcc s"]
    body = [[rung, r.kernel, r.arch, r.registers, r.smem_bytes, r.stack_bytes,
             f"{r.spill_stores}/{r.spill_loads}", f"{r.compile_s:.2f}"] for rung, r in reports]
    return tabulate(body, header, tablefmt=fmt, disable_numparse=True)


def env_table(env: dict[str, str], fmt: str = "simple") -> str:
    return tabulate(list(env.items()), ["environment", ""], tablefmt=fmt, disable_numparse=True)


def load_document(path: Path) -> dict:
    """A results document saved by `compare.py --json` (environment, results, ...), checked to be one, or the
    same from the rows of `compare.py --csv` and the environment saved beside them (.env.json)."""
    path = Path(path)
    if path.suffix == ".csv":
        return _csv_document(path)
    doc = json.loads(path.read_text())
    if not isinstance(doc, dict) or "results" not in doc:
        raise ValueError(f"{path}: not a results document written by compare.py --json")
    return doc


def csv_env_path(csv_path: Path) -> Path:
    """Where the environment of a results CSV is saved: beside it (a CSV has no place for it)."""
    return Path(csv_path).with_suffix(".env.json")


def _csv_document(path: Path) -> dict:
    kinds = {name: [t for t in (int, float) if t in (get_args(hint) or (hint,))]
             for name, hint in get_type_hints(Result).items()}  # int | None -> [int]; str -> []
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    if not rows:
        raise ValueError(f"{path}: no rows")
    if not {"rung", "impl", "M", "N", "K"} <= set(rows[0]):
        raise ValueError(f"{path}: not a results CSV written by compare.py --csv")

    def typed(name: str, text: str | None):
        kind = kinds.get(name, [])
        if not text:  # an empty cell, or none at all in a short row
            return None if kind else ""
        return kind[0](text) if kind else text

    env_path = csv_env_path(path)
    env = json.loads(env_path.read_text(encoding="utf-8")) if env_path.exists() else {}
    return {"environment": env, "results": [{k: typed(k, v) for k, v in row.items()} for row in rows]}


def results_of(doc: dict) -> list[Result]:
    """A saved document's records as Result objects (keys a newer or older Result lacks are dropped)."""
    known = {f.name for f in fields(Result)}
    return [Result(**{k: v for k, v in record.items() if k in known}) for record in doc["results"]]


def by_shape(results: list[Result]) -> dict[tuple[str, str], list[Result]]:
    groups: dict[tuple[str, str], list[Result]] = {}
    for r in results:
        groups.setdefault((r.size, r.dtype), []).append(r)
    return groups


def _replace(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


class ResultLog:
    """Collects results and keeps the requested files current after every one.

    `columns` and `tables` are the CSV columns and the Markdown tables of one size's results: a log of
    another kind of result (the distributed comparison's) passes its own."""

    def __init__(self, env: dict[str, str], *, csv_path=None, json_path=None, markdown_path=None,
                 columns: list[str] = RESULT_COLUMNS, tables=None):
        self.env = env
        self.tables = tables or (lambda group: [ladder_table(group, "github"), kernel_table(group, "github"),
                                                notes_table(group, "github")])
        self.results: list[Result] = []
        self.compile_reports: list[tuple[str, PtxasReport]] = []
        self.sections: list[tuple[str, str]] = []  # (title, Markdown table) added after the results
        self.records: dict[str, list[dict]] = {}  # further JSON entries (Nsight Compute's rows)
        self.csv_path, self.json_path, self.markdown_path = (
            Path(p) if p else None for p in (csv_path, json_path, markdown_path))
        self._csv = None
        self._rows_written: set[int] = set()
        if self.csv_path:
            self.csv_path.parent.mkdir(parents=True, exist_ok=True)
            self.csv_env_path = csv_env_path(self.csv_path)
            self._csv_file = self.csv_path.open("w", newline="", encoding="utf-8")
            self._csv = csv.DictWriter(self._csv_file, columns)
            self._csv.writeheader()
            self._csv_file.flush()
        self._write_documents()

    def add(self, result: Result, final: bool = True) -> None:
        """final=False: later rounds may still pool into it; its CSV row waits for `finish` (or `close`)."""
        self.results.append(result)
        if final:
            self._write_row(result)
        self._write_documents()

    def finish(self, results: Iterable[Result]) -> None:
        """These results' figures are settled: their CSV rows, and the documents rewritten."""
        for result in results:
            self._write_row(result)
        self._write_documents()

    def _write_row(self, result: Result) -> None:
        if self._csv and id(result) not in self._rows_written:
            self._rows_written.add(id(result))
            self._csv.writerow(result.record())
            self._csv_file.flush()

    def update_environment(self, extra: dict[str, str]) -> None:
        self.env.update(extra)
        self._write_documents()

    def add_compile_reports(self, rung: str, reports: Iterable[PtxasReport]) -> None:
        self.compile_reports.extend((rung, r) for r in reports)
        self._write_documents()

    def add_section(self, title: str, markdown: str) -> None:
        self.sections.append((title, markdown))
        self._write_documents()

    def add_records(self, key: str, records: list[dict]) -> None:
        self.records[key] = records
        self._write_documents()

    def close(self) -> None:
        """Rows for results still waiting on later rounds (an interrupted run) are written as they stand."""
        if self._csv:
            self.finish(self.results)
            self._csv_file.close()
            self._csv = None

    def markdown(self) -> str:
        parts = ["# triton-vs-cuda results", "", env_table(self.env, "github"), ""]
        for (size, dtype), group in by_shape(self.results).items():
            parts += [f"## {size} {dtype}", ""]
            for table in self.tables(group):
                if table:
                    parts += [table, ""]
        if self.compile_reports:
            parts += ["## nvcc compile report", "", compile_table(self.compile_reports, "github"), ""]
        for title, table in self.sections:
            parts += [f"## {title}", "", table, ""]
        return "\n".join(parts)

    def document(self) -> dict:
        """What the JSON file holds: the environment, every result, the compile reports."""
        return {"environment": self.env, "results": [r.record() for r in self.results],
                "compile_reports": [{"rung": rung, **asdict(r)} for rung, r in self.compile_reports], **self.records}

    def _write_documents(self) -> None:
        for path in (self.json_path, self.markdown_path):
            if path:
                path.parent.mkdir(parents=True, exist_ok=True)
        if self.csv_path:
            _replace(self.csv_env_path, json.dumps(self.env, indent=1))
        if self.json_path:
            _replace(self.json_path, json.dumps(self.document(), indent=1))
        if self.markdown_path:
            _replace(self.markdown_path, self.markdown())
