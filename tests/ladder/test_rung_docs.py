"""Rung docstrings and kernel comments teach the idea; measurements and history live in docs/notes/vNN.md.

A rung's module docstring (rendered on the lesson page) and the comments of kernels_cuda/ say what a
kernel does and why. What was measured, when, and what was tried on the way belongs in the rung's notes,
whose links to docs/results/ must point at files that exist.
"""

import re
from pathlib import Path

import pytest

from implementations import all_variants
from implementations.core.cuda_c import KERNEL_DIR

ROOT = Path(__file__).resolve().parents[2]
NOTES = ROOT / "docs" / "notes"
RESULTS = ROOT / "docs" / "results"
MAX_DOC_LINES = 50

NUMBER = r"(?<![\w.])\d+(?:[.,]\d+)*"  # 12, 0.373, 1,024; not the 16 of fp16 or the 90 of sm_90a
# What reads as a measurement or as history, and what each pattern is for.
FORBIDDEN = {
    "a measured figure": re.compile(
        NUMBER + r"(?:-\d+(?:\.\d+)?)?\s?(?:%|ms\b|µs\b|us\b|ns\b|TFLOP/s|GB/s|GFLOP|GHz\b)"),
    "a commit hash": re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b", re.IGNORECASE),
    "a results file (cite it in docs/notes/)": re.compile(r"docs/results"),
    "a measurement (it belongs in docs/notes/)": re.compile(r"\bMeasured\b"),
    # "issue" is a verb too: `issue 4 wgmma` passes, `issue 22.` and `issue #22` do not
    "history": re.compile(r"\breverted\b|\bearlier version\b|\bissue #?\d+\b(?!\s+\w)|(?<![\w&])#\d+\b", re.IGNORECASE),
}


def offences(text: str) -> list[str]:
    return [f"{what}: {m.group(0)!r}" for what, pattern in FORBIDDEN.items() for m in pattern.finditer(text)]


def c_comments(source: str) -> str:
    """The text of the // and /* */ comments of C/C++ source, one per line; string and character
    literals (PTX in asm statements, `%0`) are skipped."""
    comments, i, n = [], 0, len(source)
    while i < n:
        ch, nxt = source[i], source[i + 1:i + 2]
        if ch == "/" and nxt == "/":
            end = source.find("\n", i)
            end = n if end < 0 else end
            comments.append(source[i + 2:end])
            i = end
        elif ch == "/" and nxt == "*":
            end = source.find("*/", i + 2)
            end = n if end < 0 else end
            comments.append(source[i + 2:end])
            i = end + 2
        elif ch in "\"'":
            i += 1
            while i < n and source[i] != ch:
                i += 2 if source[i] == "\\" else 1
            i += 1
        else:
            i += 1
    return "\n".join(comments)


# ---- the checks themselves ------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "a 128×256 tile, 4096³ fp32, sm_90a, m64n256k16 and m64n128k16, BK=64, fp16 and bf16 operands",
    "siboehm's worklog: 2.7× over its tiling kernel; 16 KB staging buffers, 64-byte rows, 32 banks",
    "`tile += gridDim.x`, kt % STAGES, N % 8 != 0, (row/2)%4, 0xFFFFE000, 1e-3 near tf32, e4m3",
    "chosen by measurement at the first call; a measured figure stands beside it on the lesson page",
    "both warpgroups issue 4 wgmma per k-block; the thread that issues the copies",
])
def test_legitimate_text_passes(text):
    assert offences(text) == []


@pytest.mark.parametrize("text", [
    "CUDA C 95.8% of cuBLAS", "15-20% of cuBLAS", "276 ms", "178.1 µs", "4.3 us", "900 ns",
    "237-273 TFLOP/s", "3001 GB/s", "978 GFLOP/J", "1.565 GHz", "commit cee17ff", "c99ac46",
    "docs/results/h100_tc_bf16.md", "Measured (H100, 4096³)", "reverted", "see issue 22", "issue #22",
])
def test_figures_and_history_are_caught(text):
    assert offences(text), text


def test_comments_are_read_without_string_literals():
    source = 'asm("mma %0, %1;  // 5 ms");  // one comment\nint x; /* two\n   95% */ char c = \'"\'; // three'
    assert c_comments(source) == " one comment\n two\n   95% \n three"


# ---- the rungs -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", all_variants(), ids=lambda v: v.stem)
def test_rung_docstring_is_the_idea_not_the_diary(variant):
    doc = variant.doc
    lines = len(doc.strip("\n").splitlines())
    assert lines <= MAX_DOC_LINES, f"{variant.stem}'s docstring has {lines} lines: its story goes to docs/notes/"
    assert offences(doc) == [], f"{variant.stem}'s docstring: move these to docs/notes/{variant.tag}.md"
    for note in re.findall(r"docs/notes/(v\d\d)\.md", doc):
        assert (NOTES / f"{note}.md").is_file(), f"{variant.stem} points to docs/notes/{note}.md, which is missing"


@pytest.mark.parametrize("path", sorted([*KERNEL_DIR.glob("*.cu"), *KERNEL_DIR.glob("*.cuh")]), ids=lambda p: p.name)
def test_kernel_comments_explain_the_code(path):
    assert offences(c_comments(path.read_text())) == [], f"{path.name}: move these to the rung's docs/notes/vNN.md"


# ---- the notes -------------------------------------------------------------------------------------------

NOTE_FILES = sorted(NOTES.glob("*.md"))


def test_every_note_belongs_to_a_rung():
    tags = {v.tag: v.stem for v in all_variants()}
    for path in NOTE_FILES:
        assert path.stem in tags, f"{path.name}: notes are named for a rung (vNN.md)"
        first = path.read_text().splitlines()[0]
        assert first == f"# {tags[path.stem]}: notes", f"{path.name} opens with '# {tags[path.stem]}: notes'"


@pytest.mark.parametrize("path", NOTE_FILES, ids=lambda p: p.name)
def test_note_links_to_results_exist(path):
    links = re.findall(r"\]\(\.\./results/([^)#\s]+)", path.read_text())
    missing = [name for name in links if not (RESULTS / name).exists()]
    assert not missing, f"{path.name} cites results that are not in docs/results/: {missing}"
