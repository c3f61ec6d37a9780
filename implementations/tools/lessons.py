"""Side-by-side lessons, generated from the code so that they never drift from it.

`python -m implementations.tools.lessons --out DIR [--results run.json ...] [--images figure.png ...]`
writes DIR/lessons.html (one self-contained page, readable offline) and DIR/lessons.md (the same
for the repository). For every rung the registry finds: its docstring (the idea and the concept
map), its diagrams (drawn by diagrams.py from the rung's own configs and constants into DIR/diagrams,
embedded in the HTML, linked from the markdown), the CUDA C kernel beside the Triton kernel, each with
its Python launcher, the lines of code each language needs, the compiled kernels' registers / shared
memory / spills, compile times and the measured % of cuBLAS.

Measured sections between the figures and the rungs: where a GPU starts to pay (`--crossover`, a run of
tools/crossover.py) and where cuBLAS still wins (`--small-shapes`, runs of scripts/small_shapes.sh).

Where the figures come from:
- Measured ones only from result documents written by `compare.py --json` (`ResultLog`), labelled
  with the dtype, size and device of the run; nothing is estimated.
- Without a measured figure for a CUDA C kernel, its resources come from nvcc's compile report
  (no GPU needed), labelled as such. Triton's need a GPU run: Triton compiles for the GPU at hand.

What the line counts take in (blank lines and comments left out; Python docstrings too):
- CUDA C kernel: the rung's .cu and every kernels_cuda/ file it includes (an earlier rung's .cu,
  shared headers), since the kernel does not compile without them.
- Triton kernel: the `@triton.jit` functions (and autotune wrappers) the launcher reaches.
- Launcher, both languages: the function VARIANT.cuda / VARIANT.triton names and every function,
  class and module-level constant it reaches by name in the rung modules, this rung's or an earlier
  one's. The shared layer (`implementations/core/`: binding, checks, search) is counted for neither.
"""

from __future__ import annotations

import argparse
import ast
import base64
import dis
import importlib.util
import inspect
import io
import mimetypes
import os
import re
import sys
import textwrap
import tokenize
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path

from tabulate import tabulate
from triton.runtime.jit import KernelInterface

from ..core import IMPORT_ROOT
from ..core.bench import Result
from ..core.cuda_c import CudaSource, PtxasReport, compile_report, nvcc_path
from ..core.registry import Variant, all_variants, config_label
from ..core.report import (NO_COMPILE_S, by_shape, compile_table, kernel_table, ladder_table, load_document,
                      notes_table, results_of)
from ..core.triton_util import python_function
from . import crossover as crossover_tool
from . import plots
from . import diagrams as rung_diagrams

# pygments, markdown and jinja2 (the docs extra) are imported where they are used: nothing else in the
# package needs them.

NOT_MEASURED = "not measured (no GPU run given)"
NO_SIDE = "—"

# ---- lines of code ------------------------------------------------------------------------------------

_PY_LAYOUT = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
              tokenize.ENCODING, tokenize.ENDMARKER}
_PY_STRINGS = {tokenize.STRING} | {getattr(tokenize, n) for n in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")
                                   if hasattr(tokenize, n)}


def python_loc(source: str) -> int:
    """Lines of Python code: blank lines, `#` comments and docstrings (statements that are only a
    string literal) left out; a statement spanning several lines counts each line it spans."""
    lines: set[int] = set()
    statement: list[tokenize.TokenInfo] = []
    for tok in tokenize.generate_tokens(io.StringIO(textwrap.dedent(source)).readline):
        if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            if not all(t.type in _PY_STRINGS for t in statement):
                for t in statement:
                    lines.update(range(t.start[0], t.end[0] + 1))
            statement = []
        elif tok.type not in _PY_LAYOUT:
            statement.append(tok)
    return len(lines)


def cuda_loc(source: str) -> int:
    """Lines of CUDA C code: blank lines and `//` / `/* */` comments left out (pygments' lexer tells
    comments from string literals); preprocessor lines count, they are code."""
    from pygments.lexers import CudaLexer
    from pygments.token import Comment

    lines: set[int] = set()
    line = 1
    for ttype, value in CudaLexer(stripnl=False).get_tokens(source):
        # pygments files preprocessor directives under Comment.Preproc*, though they are code
        if ttype not in Comment or ttype in Comment.Preproc or ttype in Comment.PreprocFile:
            lines.update(line + i for i, part in enumerate(value.split("\n")) if part.strip())
        line += value.count("\n")
    return len(lines)


# ---- the code of each side ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Piece:
    """A run of source lines shown and counted as one block: a file, or one top-level definition."""

    path: Path
    first: int
    last: int
    text: str
    lang: str  # "cuda" or "python"
    name: str  # what it defines ("smem_tiling_kernel"), or the file name
    kernel: bool
    origin: str  # the rung module or .cu it comes from
    shared: bool = False  # a shared header: shown once at the end of the page, counted for each rung

    @cached_property  # a frozen dataclass still has a __dict__ for it
    def loc(self) -> int:
        return cuda_loc(self.text) if self.lang == "cuda" else python_loc(self.text)

    @property
    def where(self) -> str:
        rel = self.path.relative_to(IMPORT_ROOT).as_posix()
        lines = f"{self.first}" if self.first == self.last else f"{self.first}-{self.last}"
        return rel if self.lang == "cuda" else f"{rel}:{lines}"

    @property
    def anchor(self) -> str:
        return "file-" + re.sub(r"[^a-z0-9]+", "-", self.path.name.lower())


@cache
def _module_tree(module: str) -> ast.Module:
    return ast.parse(Path(sys.modules[module].__file__).read_text())


def _defined_names(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    return []


def _definition(module: str, name: str, rungs: frozenset[str]) -> Piece | None:
    """The top-level statement of a rung module that binds `name` (following `from .vNN import`)."""
    if module not in rungs:
        return None  # the shared layer, the standard library, triton, ...
    for node in reversed(_module_tree(module).body):  # the last binding is the live one
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    source = importlib.util.resolve_name("." * node.level + (node.module or ""),
                                                         sys.modules[module].__package__)
                    return _definition(source, alias.name, rungs)
        elif name in _defined_names(node):
            path = Path(sys.modules[module].__file__)
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            text = "\n".join(path.read_text().splitlines()[first - 1:node.end_lineno])
            live = getattr(sys.modules[module], name, None)
            return Piece(path, first, node.end_lineno, text, "python", ", ".join(_defined_names(node)),
                         kernel=isinstance(live, KernelInterface), origin=module)
    return None


def _code_globals(code) -> set[str]:
    names = {i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for const in code.co_consts:
        if hasattr(const, "co_code"):  # nested functions, lambdas, comprehensions
            names |= _code_globals(const)
    return names


def _referenced(piece: Piece) -> set[str]:
    """Module-level names a piece reads: from the compiled code for functions, else from the syntax."""
    node = next(n for n in _module_tree(piece.origin).body if n.end_lineno == piece.last)
    function = python_function(getattr(sys.modules[piece.origin], _defined_names(node)[0], None))
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not hasattr(function, "__code__"):
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    # a function's decorators and defaults are evaluated in the module; its body's globals are in its code
    outer = [*node.decorator_list, *node.args.defaults, *[d for d in node.args.kw_defaults if d]]
    return {n.id for o in outer for n in ast.walk(o) if isinstance(n, ast.Name)} | _code_globals(function.__code__)


def python_pieces(root: Callable, rungs: frozenset[str]) -> list[Piece]:
    """`root` and every definition it reaches by name in the rung modules, in ladder and file order."""
    found: dict[tuple[str, int], Piece] = {}
    pending = [(root.__module__, root.__name__)]
    while pending:
        piece = _definition(*pending.pop(), rungs)
        if piece is None or (piece.origin, piece.first) in found:
            continue
        found[(piece.origin, piece.first)] = piece
        pending += [(piece.origin, name) for name in _referenced(piece)]
    return sorted(found.values(), key=lambda p: (p.origin, p.first))


def cuda_pieces(source: CudaSource) -> list[Piece]:
    """The rung's .cu and what it includes from kernels_cuda/: earlier rungs' .cu files shown in place,
    headers (.cuh) shown once at the end of the page."""
    pieces = []
    for path in (source.path, *source.included()):
        text = path.read_text()
        pieces.append(Piece(path, 1, len(text.splitlines()), text, "cuda", path.name, kernel=True,
                            origin=path.stem, shared=path.suffix != ".cu"))
    return pieces


@dataclass
class Side:
    label: str  # "CUDA C" or "Triton"
    absent: str = ""  # why this rung has no such side
    kernels: list[Piece] = field(default_factory=list)
    launcher: list[Piece] = field(default_factory=list)

    @property
    def kernel_loc(self) -> int:
        return sum(p.loc for p in self.kernels)

    @property
    def launcher_loc(self) -> int:
        return sum(p.loc for p in self.launcher)

    def loc_cell(self) -> str:
        if self.absent:
            return NO_SIDE
        return f"{self.kernel_loc + self.launcher_loc} ({self.kernel_loc} + {self.launcher_loc})"

    def blocks(self, variant: Variant, code: Callable[[str], str] = str) -> list[tuple[str, Piece]]:
        """(caption, piece) in reading order, kernels then launcher; `code` marks up names and paths."""
        out = []
        for role, pieces in (("kernel", self.kernels), ("launcher", self.launcher)):
            for p in pieces:
                name = f" · {code(p.name)}" if p.lang == "python" else ""
                reused = "" if p.origin in (variant.module, variant.stem) else (
                    f" · reused from {p.origin.rpartition('.')[2]}")
                out.append((f"{role} · {code(p.where)}{name}{reused} · {p.loc} LOC", p))
        return out

    def loc_sentence(self) -> str:
        if self.absent:
            return self.absent
        kernel_parts = " + ".join(f"{p.name} {p.loc}" for p in self.kernels)
        return (f"{self.kernel_loc + self.launcher_loc} lines of code: kernel {self.kernel_loc}"
                + (f" ({kernel_parts})" if len(self.kernels) > 1 else "")
                + f", launcher {self.launcher_loc} (blank lines and comments left out)")


def sides(variant: Variant, rungs: frozenset[str]) -> tuple[Side, Side]:
    cuda, triton = Side("CUDA C"), Side("Triton")
    if variant.cuda is None:
        cuda.absent = "This rung has no CUDA C implementation."
    else:
        cuda.kernels = cuda_pieces(variant.cuda_source) if variant.cuda_source else []
        cuda.launcher = python_pieces(variant.cuda, rungs)
    if variant.triton is None:
        triton.absent = "This rung has no Triton implementation."
    else:
        pieces = python_pieces(variant.triton, rungs)
        triton.kernels = [p for p in pieces if p.kernel]
        triton.launcher = [p for p in pieces if not p.kernel]
    return cuda, triton


# ---- figures: result documents and nvcc --------------------------------------------------------------


@dataclass
class RunSet:
    """The results of one size and dtype from one result document."""

    document: Path
    env: dict
    dtype: str
    size: str
    results: list[Result]
    label: str = ""

    @property
    def device(self) -> str:
        return self.env.get("device", "unknown device")

    @property
    def timed(self) -> bool:
        return any(r.ms is not None for r in self.results)

    @property
    def cublas(self):
        return next((r for r in self.results if r.impl == "cublas"), None)

    def of(self, tag: str, config: str | None = None, impl: str | None = None) -> list[Result]:
        return [r for r in self.results if r.rung == tag and config in (None, r.config) and impl in (None, r.impl)]


def _size_label(size: str) -> str:
    m, n, k = size.split("x")
    return f"{m}³" if m == n == k else size.replace("x", "×")


def load_results(paths: Sequence[Path]) -> list[RunSet]:
    sets = []
    for path in paths:
        doc = load_document(path)
        for (size, dtype), group in by_shape(results_of(doc)).items():
            sets.append(RunSet(Path(path), doc.get("environment", {}), dtype, size, group))
    for s in sets:
        s.label = f"{s.dtype} {_size_label(s.size)}"
    labels = [s.label for s in sets]
    for s in sets:
        if labels.count(s.label) > 1:  # the same shape measured on two devices
            s.label += f", {s.device}"
    return sets


def nvcc_reports(variants: Sequence[Variant]) -> dict[str, tuple[PtxasReport, ...] | str]:
    """nvcc's report for each rung's CUDA C kernels, for one architecture (the last the source builds
    for: sm_90, or sm_90a for the Hopper-only rungs): a tuple of PtxasReport, or the reason there is none.
    The compiles run in parallel: each is an nvcc process."""
    try:
        nvcc_path()
    except RuntimeError as exc:
        return {v.tag: str(exc) for v in variants}

    def one(v: Variant) -> tuple[PtxasReport, ...] | str:
        try:
            return compile_report(v.cuda_source, v.cuda_source.archs[-1])
        except RuntimeError as exc:
            return f"nvcc failed for {v.cuda_source.archs[-1]}: {exc}"

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return dict(zip([v.tag for v in variants], pool.map(one, variants)))


def _span(values: list) -> str:
    values = sorted(set(values))
    return f"{values[0]}" if len(values) == 1 else f"{values[0]}-{values[-1]}"


def _measured_resources(results: list[Result]) -> str:
    timed = [r for r in results if r.registers is not None]
    if not timed:
        return ""
    return " · ".join(_span([getattr(r, a) for r in timed]) for a in ("registers", "smem_bytes", "local_bytes"))


def _nvcc_resources(reports: tuple[PtxasReport, ...] | str) -> str:
    if isinstance(reports, str):
        return "no nvcc report"
    if not reports:
        return ""
    spans = [_span([getattr(r, a) for r in reports]) for a in ("registers", "smem_bytes", "spills")]
    kernels = f", {len(reports)} kernels" if len(reports) > 1 else ""
    return " · ".join(spans) + f" (nvcc {reports[0].arch}{kernels})"


def _compile_cell(results: list[Result]) -> str:
    times = [r.compile_s for r in results if r.compile_s is not None]
    if not times:
        return ""
    return "-" if max(times) < NO_COMPILE_S else f"{max(times):.2f}"


def _pct_cell(results: list[Result]) -> str:
    if not results:
        return ""
    cells = []
    for r in results:
        if r.pct_cublas is not None:
            cells.append(f"{r.pct_cublas:.1f}")
        else:
            cells.append("not timed" if r.status == "ok" else r.status)
    return "; ".join(dict.fromkeys(cells))


# ---- one rung ------------------------------------------------------------------------------------------


@dataclass
class Table:
    caption: str
    html: str
    md: str


@dataclass
class Rung:
    variant: Variant
    cuda: Side
    triton: Side
    summary_rows: list[list[str]]
    tables: list[Table]

    @property
    def anchor(self) -> str:
        return self.variant.tag

    @property
    def heading(self) -> str:
        return f"{self.variant.tag} {self.variant.title}"

    @property
    def wrong(self) -> str:
        why = self.variant.expect_wrong.strip().rstrip(".")
        return f"{why[:1].upper()}{why[1:]}. The suite expects it to be wrong and never times it."

    @property
    def toc_label(self) -> str:
        return self.heading + (" (broken on purpose)" if self.variant.expect_wrong else "")

    @property
    def facts(self) -> str:
        v = self.variant
        configs = "; ".join(config_label(c) or "(none)" for c in v.configs)
        arch = f" ({v.cuda_source.arch} build)" if v.cuda_source and v.cuda_source.arch else ""
        return (f"dtypes: {', '.join(v.dtypes)} · configs: {configs} · "
                f"needs compute capability {v.min_cc[0]}.{v.min_cc[1]}+{arch} · module {v.module}")


def _rung(variant: Variant, rungs: frozenset[str], sets: list[RunSet], nvcc: dict) -> Rung:
    cuda, triton = sides(variant, rungs)
    tag = variant.tag
    mine = [s for s in sets if s.of(tag)]
    configs = list(dict.fromkeys(r.config for s in mine for r in s.of(tag)))
    if not configs:
        configs = ["; ".join(config_label(c) for c in variant.configs)]
    rows = []
    for config in configs:
        by_impl = {impl: [r for s in mine for r in s.of(tag, config, impl)] for impl in ("cuda", "triton")}
        cuda_res = _measured_resources(by_impl["cuda"]) or _nvcc_resources(nvcc.get(tag, ()))
        if cuda.absent:
            cuda_res = NO_SIDE
        triton_res = NO_SIDE if triton.absent else _measured_resources(by_impl["triton"]) or (
            "not measured" if mine else NOT_MEASURED)
        compile_cells = []
        for side, impl in ((cuda, "cuda"), (triton, "triton")):
            cell = _compile_cell(by_impl[impl])
            report = nvcc.get(tag) if impl == "cuda" else None
            if not cell and report and not isinstance(report, str):
                cell = f"{report[0].compile_s:.2f} (nvcc)"
            compile_cells.append(NO_SIDE if side.absent else cell or "not measured")
        row = [tag, config, cuda.loc_cell(), triton.loc_cell(), cuda_res, triton_res, " / ".join(compile_cells)]
        if sets:
            for s in sets:
                if s.dtype not in variant.dtypes:
                    row.append(NO_SIDE)
                    continue
                pct = [NO_SIDE if side.absent else _pct_cell(s.of(tag, config, impl)) or "not run"
                       for side, impl in ((cuda, "cuda"), (triton, "triton"))]
                row.append(" / ".join(pct))
        else:
            row.append(NOT_MEASURED)
        rows.append(row)

    tables = []
    for s in mine:
        group = ([s.cublas] if s.cublas else []) + s.of(tag)
        caption = (f"Measured: {s.label} on {s.device} ({s.document.name}, {s.env.get('date', 'undated')}; "
                   f"cuBLAS row: the same run's reference)")
        tables.append(Table(caption, ladder_table(group, "html"), ladder_table(group, "github")))
        resources = kernel_table(s.of(tag), "github")
        if resources:
            tables.append(Table(f"Compiled kernels: {s.label} on {s.device}",
                                kernel_table(s.of(tag), "html"), resources))
        notes = notes_table(s.of(tag), "github")
        if notes:
            tables.append(Table(f"Notes: {s.label}", notes_table(s.of(tag), "html"), notes))
    report = nvcc.get(tag)
    if isinstance(report, str):
        tables.append(Table(f"nvcc compile report: none ({report})", "", ""))
    elif report:
        pairs = [(tag, r) for r in report]
        tables.append(Table(
            f"nvcc compile report for {report[0].arch} (compiled on the CPU, not run; smem: static shared memory "
            "only, dynamic shared memory is sized at launch; nvcc s: the whole .cu)",
            compile_table(pairs, "html"), compile_table(pairs, "github")))
    return Rung(variant, cuda, triton, rows, tables)


# ---- the page -----------------------------------------------------------------------------------------


def summary_header(sets: list[RunSet]) -> list[str]:
    header = ["rung", "config", "CUDA C LOC (kernel + launcher)", "Triton LOC (kernel + launcher)",
              "CUDA C regs · smem B · spill B", "Triton regs · smem B · local B", "compile s CUDA C / Triton"]
    if not sets:
        return header + ["% cuBLAS"]
    return header + [f"% cuBLAS {s.label} (CUDA C / Triton)" for s in sets]


def legend(sets: list[RunSet]) -> list[str]:
    lines = [
        "LOC: lines of code, blank lines and comments (and Python docstrings) left out; the kernel includes "
        "what it reuses from earlier rungs and, for CUDA C, the headers it includes; the launcher is the "
        "Python that the rung's VARIANT names and what it reaches in the rung modules (not the shared layer).",
        "regs · smem · spill/local: registers per thread, shared memory bytes per block, and spilled (nvcc) or "
        "local-memory (driver) bytes per thread; a range where configs, sizes or kernels differ. Figures "
        "marked nvcc come from nvcc's compile report (static shared memory only).",
        "compile s: the first call's extra time over a repeat call on the GPU (compiling, and for searched "
        "rungs the search); '-' when nothing was compiled (the same kernel was compiled earlier in the run); "
        "(nvcc): nvcc's time for the whole .cu on the CPU.",
    ]
    if sets:
        lines.append("% cuBLAS: cuBLAS's time over the kernel's, both measured in the same run; "
                     f"{NO_SIDE}: the rung has no such side or does not support the dtype; 'not run': "
                     "supported but not in that run.")
    else:
        lines.append("No result documents were given (`--results`), so nothing on this page was measured; "
                     "run `python compare.py --json run.json` on a GPU and pass the document.")
    return lines


def measurement_rows(sets: list[RunSet]) -> tuple[list[str], list[list[str]]]:
    header = ["figures", "device", "document", "date", "cuBLAS", "software", "timing"]
    rows = []
    for s in sets:
        c = s.cublas
        cublas = f"{c.ms:.3f} ms, {c.tflops:.1f} TFLOP/s" if c and c.ms and c.tflops else "not timed"
        software = ", ".join(f"{k} {s.env[k]}" for k in ("torch", "triton", "cupy", "driver_version") if k in s.env)
        rows.append([s.label, s.device, s.document.name, s.env.get("date", ""), cublas, software,
                     s.env.get("timing", "")])
    return header, rows


def _doc_markdown(doc: str) -> str:
    # Python-Markdown, unlike GitHub's CommonMark, needs a blank line before a list that follows a paragraph
    return re.sub(r"(?m)^((?![-*] |\s|\|).+)\n(?=[-*] )", r"\1\n\n", inspect.cleandoc(doc))


def _doc_html(doc: str) -> str:
    import markdown
    from markdown.extensions import Extension

    class EscapeHtml(Extension):
        """Show `<int TILE>` and the like as text: Python-Markdown passes raw HTML through otherwise."""

        def extendMarkdown(self, md):
            md.preprocessors.deregister("html_block")
            md.inlinePatterns.deregister("html")

    return markdown.markdown(_doc_markdown(doc), extensions=["tables", EscapeHtml()])


def _highlight(piece: Piece) -> str:
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import CudaLexer, PythonLexer

    lexer = CudaLexer(stripnl=False) if piece.lang == "cuda" else PythonLexer(stripnl=False)
    return highlight(piece.text, lexer, HtmlFormatter(cssclass="highlight"))


def _figure(path: Path) -> tuple[str, str]:
    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode()}", path.name


TEMPLATES = Path(__file__).resolve().parent / "templates"  # the page (Jinja2) and its style sheet
CROSSOVER_HEADING = "When a GPU pays: one small product, the CPU against the GPU"
SMALL_HEADING = "Where cuBLAS still wins: small, skinny and ragged shapes"


def small_shapes_lesson(docs: list[dict]) -> str:
    """The lesson page's paragraph on runs of scripts/small_shapes.sh (the same shapes in graph and events
    timing): how close each language comes, which shapes stay below 95%, why, and what the levers bought."""
    rows = [r for doc in docs for r in results_of(doc) if r.impl in ("cuda", "triton") and r.pct_cublas]
    if not rows:
        return "These runs have no timed rung beside cuBLAS: run scripts/small_shapes.sh on a GPU."
    names = {"cuda": "CUDA C", "triton": "Triton"}

    def spread(impl, timing):
        pct = [r.pct_cublas for r in rows if (r.impl, r.timing) == (impl, timing)]
        return f"{min(pct):.0f}-{max(pct):.0f}%" if pct else "none timed"

    below = [f"{names[r.impl]} {r.size} ({r.pct_cublas:.0f}%)" for r in rows
             if r.timing == "graph" and r.pct_cublas < 95]
    rungs = ", ".join(sorted({f"{r.rung} {r.dtype}" for r in rows}))
    env = docs[0].get("environment", {})
    return (
        f"On {env.get('device', 'this GPU')}, {rungs} against cuBLAS at {len({r.size for r in rows})} shapes, "
        "each timed in a CUDA graph (the kernels alone, L2 warm) and with events (each call alone: the launch "
        f"included, the L2 flushed). In the graph CUDA C reaches {spread('cuda', 'graph')} of cuBLAS and Triton "
        f"{spread('triton', 'graph')}; with events {spread('cuda', 'events')} and {spread('triton', 'events')}. "
        f"Below 95% in the graph: {', '.join(below) or 'none'}.\n\n"
        "Why cuBLAS wins at such shapes: a product of a few microseconds is mostly fixed cost. There is the "
        "launch (from C++ in cuBLAS, through a Python launcher here: CuPy's, or Triton's once its arguments are "
        "bound, costs the host about what cuBLAS's call does, and Triton's `kernel[grid]`, which binds and "
        "specializes every argument at every call, more), the kernel's own start (descriptors, barriers, the "
        "pipeline's first fill) and a last wave that leaves SMs idle; and cuBLAS chooses among many kernels "
        "per shape, split-K and stream-K ones among them, where a rung here has a dozen candidates.\n\n"
        "The levers, and what each bought (docs/notes/v15.md, docs/notes/v11.md): split-K for products of "
        "fewer tiles than SMs (a decode product of 16 rows; 128 rows cut in two slices of k), in both languages; "
        "for at most 32 rows the operands swapped, Cᵀ = Bᵀ·Aᵀ, so that B's columns fill the tensor cores' 64-row "
        "side and the few rows their narrow one (8 to 32), where a 64-row tile padded every multiply up to "
        "fourfold (cuBLAS's own decode kernel is swapped so), in both languages; "
        "64-row tiles, and a deeper ring with one CTA per SM, for about as many tiles as SMs (also with two "
        "consumer warpgroups side by side, the structure of cuBLAS's own kernel at 1024³, which ties the "
        "one-consumer tile there: the same tile did not bring cuBLAS's speed); 128×128 tiles "
        "without a cluster partner for one row of tiles; no tiles wider than 128×128 in the search where tiles "
        "are fewer than SMs (they never won there); deciding between candidates that tie with events "
        "in a CUDA graph, not by a launch's jitter; Triton launches bound once, as CuPy's are; and, for fp32, "
        "telling Triton when ragged rows still start 16-byte aligned, so that it copies them 16 bytes at a time, "
        "and tiles sized to the shape: CUDA C's 80-row tiles (a warp 80×32) make one even wave of 1000×1100 "
        "where 64 or 128 rows make a second, and its 48-row ones (a warp 48×32) waste 31 rows of 257 where 64- "
        "and 80-row ones waste 63; sizes Triton cannot take (a block's sides are powers of two), so its side "
        "gets 32×64 tiles instead."
    )


def _intro(sets: list[RunSet], untimed: list[str]) -> list[str]:
    lines = [
        "Every rung of the matrix-multiplication ladder twice: the CUDA C kernel (launched through CuPy) beside "
        "the Triton kernel, each with its launcher; the idea and the concept map from the rung's docstring; "
        "lines of code, compiled-kernel resources and the measured % of cuBLAS.",
        "Generated from the code by `python -m implementations.tools.lessons`: edit the rungs, not this page.",
    ]
    if sets:
        devices = ", ".join(dict.fromkeys(s.device for s in sets))
        documents = len({s.document for s in sets})
        lines.append(f"Measured figures come from {documents} result document(s), {len(sets)} dtype and size "
                     f"combination(s), on {devices}: see Measurements.")
    else:
        lines.append(f"Nothing was measured for this page: {NOT_MEASURED}. CUDA C kernel resources are "
                     "nvcc's compile report.")
    if untimed:
        lines.append(f"Left out: {', '.join(untimed)}, in which nothing was timed (a run without a GPU).")
    return lines


def _fence(text: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _markdown(title: str, intro: list[str], rungs: list[Rung], sets: list[RunSet], images: list[Path],
              out_dir: Path, headers: list[Piece], pictures: dict[str, list[tuple[Path, str]]],
              sections: Sequence[tuple[str, str, Path]] = ()) -> str:
    parts = [f"# {title}", "", *[line + "\n" for line in intro], "## Contents", ""]
    parts += [f"{i}. [{r.toc_label}](#{r.anchor})" for i, r in enumerate(rungs, 1)]
    summary = [[f"[{r.heading}](#{r.anchor})", *row[1:]] for r in rungs for row in r.summary_rows]
    parts += ["", "## Summary", "", tabulate(summary, summary_header(sets), "github", disable_numparse=True), ""]
    parts += [line + "\n" for line in legend(sets)]
    if sets:
        header, rows = measurement_rows(sets)
        parts += ["## Measurements", "", tabulate(rows, header, "github", disable_numparse=True), ""]
    if images:
        parts += ["## Figures", ""]
        parts += [f"![{p.name}]({Path(os.path.relpath(p.resolve(), out_dir.resolve())).as_posix()})\n"
                  for p in images]
    for heading, paragraph, plot_path in sections:
        parts += [f"## {heading}", "", paragraph, "",
                  f"![{plot_path.stem}]({Path(os.path.relpath(plot_path.resolve(), out_dir.resolve())).as_posix()})",
                  ""]
    for r in rungs:
        parts += [f'<a id="{r.anchor}"></a>', "", f"## {r.heading}", "", f"*{r.facts}*", ""]
        if r.variant.expect_wrong:
            parts += [f"> **Broken on purpose.** {r.wrong}", ""]
        parts += [_doc_markdown(r.variant.doc), ""]
        for path, caption in pictures.get(r.anchor, []):
            parts += [f"![{path.stem}]({Path(os.path.relpath(path.resolve(), out_dir.resolve())).as_posix()})", "",
                      f"*{caption}*", ""]
        for side in (r.cuda, r.triton):
            parts += [f"### {side.label}", ""]
            if side.absent:
                parts += [side.absent, ""]
                continue
            parts += [side.loc_sentence(), ""]
            for caption, p in side.blocks(r.variant, code=lambda text: f"`{text}`"):
                if p.shared:
                    parts += [f"Includes [`{p.where}`](#{p.anchor}) ({p.loc} lines of code, counted above).", ""]
                    continue
                fence = _fence(p.text)
                parts += [f"**{caption}**", "", f"{fence}{p.lang}", p.text.rstrip("\n"), fence, ""]
        for t in r.tables:
            parts += [f"**{t.caption}**", ""] + ([t.md, ""] if t.md else [])
    if headers:
        parts += ["## Shared CUDA C headers", ""]
        for p in headers:
            fence = _fence(p.text)
            parts += [f'<a id="{p.anchor}"></a>', "", f"### `{p.where}` ({p.loc} LOC)", "",
                      f"{fence}cuda", p.text.rstrip("\n"), fence, ""]
    return "\n".join(parts)


def build_lessons(out_dir: Path, results: Sequence[Path] = (), images: Sequence[Path] = (), *,
                  variants: Sequence[Variant] | None = None, crossover: Path | None = None,
                  small_shapes: Sequence[Path] = ()) -> tuple[Path, Path]:
    """Write out_dir/lessons.html and out_dir/lessons.md; return their paths.

    `results`: JSON documents of `compare.py --json`; `images`: figures to show (embedded in the HTML,
    linked by relative path from the markdown); `variants`: the rungs, all of them by default. Each
    rung's diagrams are drawn into out_dir/diagrams (no GPU needed) and shown in its section.
    `crossover`: a saved run of tools/crossover.py, shown as its own section (plot and paragraph).
    `small_shapes`: saved runs of scripts/small_shapes.sh for one dtype (graph and events), likewise.
    """
    import jinja2
    from markupsafe import Markup
    from pygments.formatters import HtmlFormatter

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    images = [Path(p) for p in images]
    variants = list(all_variants() if variants is None else variants)
    rungs_modules = frozenset(v.module for v in all_variants()) | frozenset(v.module for v in variants)
    sets = load_results([Path(p) for p in results])
    untimed = sorted({s.document.name for s in sets if not s.timed} - {s.document.name for s in sets if s.timed})
    sets = [s for s in sets if s.timed]

    def needs_nvcc(v: Variant) -> bool:
        measured = [r for s in sets for r in s.of(v.tag, impl="cuda") if r.registers is not None]
        return v.cuda is not None and v.cuda_source is not None and not measured

    nvcc = nvcc_reports([v for v in variants if needs_nvcc(v)])
    rungs = [_rung(v, rungs_modules, sets, nvcc) for v in variants]
    pictures = rung_diagrams.write(variants, out_dir / "diagrams")
    sections = []  # (id, heading, paragraph, plot): measured sections between the figures and the rungs
    if crossover is not None:
        measured = crossover_tool.load(crossover)
        sections.append(("crossover", CROSSOVER_HEADING, crossover_tool.lesson(*measured),
                         crossover_tool.plot(*measured, out_dir / "diagrams" / "crossover.png")))
    if small_shapes:
        docs = [load_document(Path(p)) for p in small_shapes]
        plot = plots.pct_of_cublas(docs, out_dir / "diagrams" / "small_shapes.png")
        if plot is not None:
            sections.append(("small-shapes", SMALL_HEADING, small_shapes_lesson(docs), plot))
    headers = list({p.path: p for r in rungs for p in r.cuda.kernels if p.shared}.values())

    title = "CUDA C beside Triton: the matrix-multiplication ladder, rung by rung"
    intro = _intro(sets, untimed)
    code = {p: Markup(_highlight(p))
            for r in rungs for side in (r.cuda, r.triton) for p in side.kernels + side.launcher}
    docs = {r.anchor: Markup(_doc_html(r.variant.doc)) for r in rungs}
    for r in rungs:
        for t in r.tables:
            t.html = Markup(t.html)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    highlight = HtmlFormatter(cssclass="highlight").get_style_defs(".highlight")
    css = Markup((TEMPLATES / "lessons.css").read_text() + highlight)
    page = env.get_template("lessons.html.j2").render(
        title=title, intro=Markup(_doc_html("\n\n".join(intro))), css=css, rungs=rungs,
        summary_header=summary_header(sets), legend=Markup(_doc_html("\n\n".join(legend(sets)))),
        measurements=measurement_rows(sets) if sets else None, figures=[_figure(p) for p in images],
        docs=docs, code=code, headers=headers,
        sections=[(id_, heading, Markup(_doc_html(paragraph)), _figure(plot)[0])
                  for id_, heading, paragraph, plot in sections],
        pictures={tag: [(_figure(path)[0], caption) for path, caption in drawn] for tag, drawn in pictures.items()})
    html_path, md_path = out_dir / "lessons.html", out_dir / "lessons.md"
    html_path.write_text(page)
    md_path.write_text(_markdown(title, intro, rungs, sets, images, out_dir, headers, pictures,
                                 [(heading, paragraph, plot) for _, heading, paragraph, plot in sections]))
    return html_path, md_path


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m implementations.tools.lessons",
        description="Write the side-by-side lessons (CUDA C beside Triton for every rung) as one self-contained "
                    "HTML page and a markdown file, from the code and from saved result documents.")
    parser.add_argument("--out", type=Path, required=True, help="folder for lessons.html and lessons.md")
    parser.add_argument("--results", type=Path, nargs="*", default=[], metavar="JSON",
                        help="result documents of `compare.py --json` (e.g. docs/results/h100_fp32_4096.json "
                             "docs/results/h100_tc_bf16.json); without them nothing is shown as measured")
    parser.add_argument("--images", type=Path, nargs="*", default=[], metavar="IMAGE",
                        help="figures to include (embedded in the HTML, linked from the markdown)")
    parser.add_argument("--crossover", type=Path, metavar="JSON",
                        help="a saved run of `python -m implementations.tools.crossover` (its crossover.json): "
                             "shown as a section, the plot with a paragraph on where the GPU starts to pay")
    parser.add_argument("--small-shapes", type=Path, nargs="*", default=[], metavar="JSON",
                        help="saved runs of scripts/small_shapes.sh for one dtype (graph and events): shown as a "
                             "section, % of cuBLAS per shape with a paragraph on why cuBLAS wins there")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    missing = [p for p in [*args.results, *args.images, *([args.crossover] if args.crossover else []),
                           *args.small_shapes] if not p.is_file()]
    if missing:
        print(f"not found: {', '.join(map(str, missing))}", file=sys.stderr)
        return 2
    for path in [*args.results, *args.small_shapes]:
        try:
            load_document(path)
        except ValueError as exc:  # not JSON, or not what compare.py --json writes
            print(f"{path}: {exc}", file=sys.stderr)
            return 2
    if args.crossover:
        try:
            crossover_tool.load(args.crossover)
        except ValueError as exc:
            print(exc, file=sys.stderr)
            return 2
    for path in build_lessons(args.out, args.results, args.images, crossover=args.crossover,
                              small_shapes=args.small_shapes):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
