"""The tuning cache: each search's choice kept on disk, so that a shape seen before, in any process, costs
no search.

Where: `$TVC_CACHE_DIR/tuning.json`, else `$XDG_CACHE_HOME/triton-vs-cuda/tuning.json` (~/.cache when
XDG_CACHE_HOME is unset). One entry per problem: the GPU (name, compute capability), the rung, language,
dtype, layout, M, N, K, the operands' strides and 16-byte alignment (what the kernels are specialised on;
the search builds it). The entry keeps the winner, every candidate's time (and the tied candidates' times
in a CUDA graph, where those decided), when the search ran and how long it took, and the software it ran
under (CUDA runtime and driver, torch, Triton, CuPy, and a digest of the kernels' code).

What is trusted: plain JSON values, nothing else. The file is parsed, never executed, imported or
unpickled; the winner is a candidate's description, and an entry is taken only if the rung's current
candidates are exactly those it timed and its winner is the fastest of the times that decided. An
unreadable file, another schema version, a malformed entry, one whose candidates differ, or one searched
under other software is ignored with a one-line warning on stderr: the search runs again and its result
replaces the entry (or, for a file that cannot be read, the file).

Writes are read-modify-write under an exclusive lock (flock on a lock file beside the cache: several
processes, pytest-xdist workers among them, may save at once), through a temporary file in the same
directory renamed over the old one: a reader sees the old file or the new one, never part of one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import functools
import hashlib
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch

SCHEMA = 1
DIR_VARIABLE = "TVC_CACHE_DIR"
FILE_NAME = "tuning.json"


def path() -> Path:
    """The cache file, from the environment at each call (the tests point it at a temporary directory)."""
    directory = os.environ.get(DIR_VARIABLE)
    if directory:
        return Path(directory) / FILE_NAME
    xdg = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(xdg) / "triton-vs-cuda" / FILE_NAME


def warn(message: str) -> None:
    print(f"tuning cache: {message}", file=sys.stderr)


def kernel_code() -> str:
    """A digest of the code the kernels are made of: the rungs' modules (their Triton kernels and launchers), the
    shared Triton helpers and kernels_cuda/. An edited kernel, or a rung's changed candidates, makes every
    earlier choice stale."""
    from . import PACKAGE_DIR
    from .cuda_c import KERNEL_DIR

    files = sorted(PACKAGE_DIR.glob("v*.py")) + [PACKAGE_DIR / "core" / "triton_util.py"] + sorted(
        f for f in KERNEL_DIR.iterdir() if f.suffix in (".cu", ".cuh"))
    digest = hashlib.sha256()
    for f in files:
        digest.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@functools.cache
def software() -> dict:
    """What a search's outcome depends on besides the GPU and the problem: compilers, driver, libraries, and
    the kernel code itself (kernel_code). The driver is known by the CUDA version it supports, through CuPy:
    None where CuPy is absent (it launches the CUDA C rungs only), as is CuPy's version."""
    import triton

    try:
        import cupy
    except ImportError:
        cupy = None
    return {
        "CUDA runtime": torch.version.cuda,
        "CUDA driver": cupy.cuda.runtime.driverGetVersion() if cupy and torch.cuda.is_available() else None,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cupy": cupy.__version__ if cupy else None,
        "kernel code": kernel_code(),
    }


@dataclass(frozen=True)
class Entry:
    problem: dict  # the search's key, as JSON values
    best: str  # the winner, as the search describes it
    times_ms: dict  # description -> ms, every candidate timed
    seconds: float  # how long the search took
    searched: str  # when (UTC, ISO 8601)
    software: dict  # software() when it was searched
    graph_ms: dict = dataclasses.field(default_factory=dict)  # description -> ms in a CUDA graph, the tied ones

    @classmethod
    def parse(cls, raw) -> Entry:
        """An entry from its JSON form; ValueError or TypeError if it is not one."""
        entry = cls(**raw)
        numbers = (int, float)
        if not (isinstance(entry.problem, dict) and isinstance(entry.best, str) and isinstance(entry.times_ms, dict)
                and all(isinstance(k, str) and isinstance(v, numbers) for k, v in entry.times_ms.items())
                and isinstance(entry.seconds, numbers) and isinstance(entry.searched, str)
                and isinstance(entry.software, dict) and isinstance(entry.graph_ms, dict)
                and all(k in entry.times_ms and isinstance(v, numbers) for k, v in entry.graph_ms.items())):
            raise ValueError("fields of the wrong type")
        return entry


def _read(file: Path) -> tuple[list, str]:
    """The file's entries as JSON values, and why none could be taken from it ("" when they could)."""
    try:
        document = json.loads(file.read_text())
    except FileNotFoundError:
        return [], ""
    except (OSError, ValueError) as exc:  # json.JSONDecodeError and UnicodeDecodeError are ValueErrors
        return [], f"unreadable ({type(exc).__name__}: {exc})".splitlines()[0]
    if not isinstance(document, dict) or document.get("schema") != SCHEMA:
        found = document.get("schema") if isinstance(document, dict) else None
        return [], f"schema {found!r}, not {SCHEMA}"
    if not isinstance(document.get("entries"), list):
        return [], "no list of entries"
    return document["entries"], ""


def label(problem: dict) -> str:
    return "{rung} {lang} {dtype} {M}x{N}x{K}".format(**problem)


def load(problem: dict, candidates: set[str]) -> Entry | None:
    """The entry for this problem if one can be trusted: its search timed exactly these candidates (by
    description), chose the fastest, and ran under this software. None if there is no entry (silently) or
    none to trust (with a one-line warning)."""
    file = path()
    entries, problem_with_file = _read(file)
    if problem_with_file:
        warn(f"{file}: {problem_with_file}; searching {label(problem)} again")
        return None
    for raw in entries:
        if not isinstance(raw, dict) or raw.get("problem") != problem:
            continue
        try:
            entry = Entry.parse(raw)
        except (TypeError, ValueError) as exc:
            warn(f"{file}: a malformed entry for {label(problem)} ({exc}); searching again")
            return None
        decided = entry.graph_ms or entry.times_ms
        if set(entry.times_ms) != candidates or decided.get(entry.best) != min(decided.values()):
            warn(f"{file}: the entry for {label(problem)} timed other candidates than the rung has now, or did "
                 "not choose the fastest; searching again")
            return None
        now = software()
        changed = [f"{k} {entry.software.get(k)} -> {v}" for k, v in now.items() if entry.software.get(k) != v]
        if changed:
            warn(f"{file}: {label(problem)} was searched under other software ({', '.join(changed)}); "
                 "searching again")
            return None
        return entry
    return None


@contextlib.contextmanager
def _locked(file: Path):
    file.parent.mkdir(parents=True, exist_ok=True)
    with open(file.with_name(file.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the lock file is closed
        yield


def save(entry: Entry) -> None:
    """Write `entry` over any entry for its problem; an unreadable file is replaced. OSError if the cache
    cannot be written (the file is then as it was)."""
    file = path()
    with _locked(file):
        entries, _ = _read(file)
        entries = [e for e in entries if not (isinstance(e, dict) and e.get("problem") == entry.problem)]
        entries.append(dataclasses.asdict(entry))
        descriptor, temporary = tempfile.mkstemp(dir=file.parent, prefix=f".{file.name}.")
        try:
            with os.fdopen(descriptor, "w") as out:
                json.dump({"schema": SCHEMA, "entries": entries}, out, indent=1)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, file)
        except BaseException:
            os.unlink(temporary)
            raise
