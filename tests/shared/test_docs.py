"""The generated docs: every table in README.md and docs/ matches the results it is generated from, every
file in docs/results is in its index, and every relative link resolves (CPU only, no GPU needed)."""

import json
import re
from pathlib import Path

import pytest

from implementations.tools import docs

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), RESULTS / "README.md"]


def _check(*args: str) -> int:
    return docs.main(["--check", "--root", str(ROOT), *args])


def test_the_committed_docs_match_their_results(capsys):
    assert _check() == 0, capsys.readouterr().out


def test_a_drifted_table_is_caught_and_rewritten(tmp_path, capsys):
    page = tmp_path / "README.md"
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("<!-- generated: headline")
    row = re.compile(r"^\| fp32 .*$", re.M).search(text, start)
    cuda_pct = row.group().split("|")[5]  # the best CUDA C rung's % of cuBLAS
    drifted = text[: row.start()] + row.group().replace(cuda_pct, " 12.3".ljust(len(cuda_pct)), 1) + text[row.end():]
    assert drifted != text
    page.write_text(drifted, encoding="utf-8")

    assert _check(str(page)) == 1
    out = capsys.readouterr().out
    assert "README.md:" in out and "headline docs/results/h100_records_fp32.json" in out and "12.3" in out

    assert docs.main(["--root", str(ROOT), str(page)]) == 0  # rewrite
    def headline(page_text):  # as committed (other blocks link their sources relative to the page's folder)
        return page_text[page_text.index("<!-- generated: headline"):].split("<!-- end generated -->")[0]

    assert headline(page.read_text(encoding="utf-8")) == headline(text)
    assert _check(str(page)) == 0


def _made_up(tmp_path: Path) -> Path:
    def result(rung, impl, pct=None, ms=1.0, status="ok", config="", note=""):
        return {"rung": rung, "name": {"cuBLAS": "torch.matmul"}.get(rung, "x"), "config": config, "impl": impl,
                "dtype": "fp32", "M": 64, "N": 64, "K": 64, "status": status, "note": note, "ms": ms,
                "ms_p20": ms, "ms_p80": ms, "tflops": 2.0, "pct_cublas": pct}

    doc = {"environment": {"device": "Test GPU", "date": "2026-01-02T03:04:05+00:00", "timing": "events: ..."},
           "results": [result("cuBLAS", "cublas"), result("v97", "cuda", 40.0), result("v97", "triton", 60.0),
                       result("v98", "cuda", 90.0, note="autotuned: BM=64, 1.000 ms; runner-up ..."),
                       result("v98", "triton", 50.0),
                       result("v99", "cuda", None, None, "skipped", note="supports bf16 only"),
                       result("v99", "triton", None, None, "skipped", note="supports bf16 only")]}
    (tmp_path / "run.json").write_text(json.dumps(doc))
    return tmp_path


def test_tables_from_a_made_up_document(tmp_path):
    """Rungs v97-v99 are not in the registry, so their labels are the names saved in the document."""
    root = _made_up(tmp_path)
    page = root / "page.md"
    headline = docs.generate("headline run.json", root, page)
    assert "| fp32" in headline and "| v98 x" in headline and "90.0" in headline and "v97 x" in headline
    assert "Test GPU" in headline and "2026-01-02" in headline

    ladder = docs.generate("ladder run.json", root, page)
    assert "**90.0**" in ladder and "**40.0**" not in ladder and "**60.0**" in ladder  # the best of each language
    assert "v98 CUDA C: autotuned: BM=64" in ladder
    assert "not run: v99 x: supports bf16 only" in ladder and "| v99" not in ladder  # every result skipped
    assert "[run.json](run.json): Test GPU, 2026-01-02 03:04 UTC" in ladder

    sizes = docs.generate("sizes run.json choices=yes", root, page)
    assert "v98 CUDA C choice" in sizes and "BM=64 " in sizes and "timing" not in sizes.splitlines()[0]

    graph = json.loads((root / "run.json").read_text())
    graph["environment"]["timing"] = "graph: ..."
    graph["results"].append({**graph["results"][0], "rung": "grouped_mm", "impl": "grouped_mm", "pct_cublas": 93.5})
    (root / "graph.json").write_text(json.dumps(graph))
    both = docs.generate("sizes run.json graph.json baselines=grouped_mm", root, page).splitlines()
    assert "| timing " in both[0] and "| grouped_mm % " in both[0]
    assert "| events " in both[2] and "| graph " in both[3] and "| 93.5 " in both[3]

    doc = json.loads((root / "run.json").read_text())
    for r in doc["results"]:
        r.update(M=1, N=6144, K=4096)
    (root / "decode.json").write_text(json.dumps(doc))
    labelled = docs.generate("sizes decode.json shapes=llama3-8b,mixtral-8x7b", root, page).splitlines()
    assert "| shape " in labelled[0] and "llama3-8b qkv decode 1 / mixtral-8x7b qkv decode 1" in labelled[2]
    with pytest.raises(docs.DocsError, match="unknown shape set"):
        docs.generate("sizes decode.json shapes=llama9", root, page)

    only_v98 = docs.generate("pct run.json rungs=98", root, page)
    assert "v98 x" in only_v98 and "v97 x" not in only_v98


def test_scaling_sets_runs_side_by_side(tmp_path):
    def run(name, t1, t2, efficiency):
        base = {"rung": "v15", "name": "x", "config": "", "impl": "cuda", "dtype": "bf16", "size": "8x8x8",
                "status": "ok", "chunks": 1}
        doc = {"environment": {"device": "Test GPU", "date": "2026-01-02T03:04:05+00:00", "timing": "events"},
               "results": [{**base, "strategy": "single", "world": 1, "ms": t1},
                           {**base, "strategy": "push", "chunks": 4, "world": 2, "ms": t2, "efficiency": efficiency},
                           {**base, "size": "4x4x4", "strategy": "rows", "world": 2, "ms": 1.0, "efficiency": 0.5}]}
        (tmp_path / name).write_text(json.dumps(doc))

    run("a.json", 10.0, 7.0, 10 / 14)
    run("b.json", 12.0, 5.0, 12 / 10)
    run("c.json", 11.0, 8.0, 11 / 16)
    table = docs.generate("scaling a.json b.json c.json size=8x8x8", tmp_path, tmp_path / "page.md")
    row = next(line for line in table.splitlines() if "push ×4" in line)
    cells = [c.strip() for c in row.split("|")[1:-1]]
    # the median of the runs' efficiencies, and the median T1 (11) over 2 × the median step (7)
    assert cells[1:] == ["v15 CUDA C", "push ×4", "2", "3", "71.4, 120.0, 68.8", "71.4", "78.6"]
    assert "4x4x4" not in table


def test_copies_puts_each_probes_cuda_form_under_the_last_probes_baselines(tmp_path):
    """Two probes of two CUDA C forms: torch and Triton from the last, a CUDA C row from each (two tiles in the
    first), each time the mean of both directions; a probe without the size asked for is refused."""
    def probe(name, form, cuda):
        timed = lambda scale: {"plain": 10 * scale, "torch": 30 * scale, "triton 64 w4": 11 * scale, **cuda(scale)}
        doc = {"device": "GPU", "date": "today", "form": form,
               **{f"layout copy 8×8 {dtype} {way}": timed(scale * (1 if way.startswith("row") else 3))
                  for dtype, scale in (("float32", 1), ("bfloat16", 0.5)) for way in ("row-major to a view", "a view back")}}
        (tmp_path / name).write_text(json.dumps(doc))

    probe("one.json", "first form: an element a thread", lambda s: {"cuda 32": 20 * s, "cuda 64": 40 * s})
    probe("two.json", "second form: a word a thread", lambda s: {"cuda": 12 * s})
    table = docs.generate("copies one.json two.json size=8×8", tmp_path, tmp_path / "page.md")
    rows = {cells[0]: cells[1:] for line in table.splitlines() if line.startswith("| ")
            for cells in [[c.strip() for c in line.split("|")[1:-1]]]}
    assert rows["copy (µs)"] == ["fp32", "bf16"]
    assert rows["torch copy_ into the other storage order"] == ["60.0", "30.0"]
    assert rows["Triton, 64×64 block, 4 warps"] == ["22.0", "11.0"]
    assert rows["CUDA C, first form, a 32-element tile"] == ["40.0", "20.0"]
    assert rows["CUDA C, first form, a 64-element tile"] == ["80.0", "40.0"]
    assert rows["CUDA C, second form"] == ["24.0", "12.0"]
    assert "- first form: an element a thread (from [one.json](one.json), GPU, today)" in table
    with pytest.raises(docs.DocsError, match="no layout copy of 4096×4096"):
        docs.generate("copies one.json", tmp_path, tmp_path / "page.md")


@pytest.mark.parametrize("spec, message", [
    ("nothing run.json", "unknown table kind"),
    ("ladder missing.json", "no such results file"),
    ("ladder run.json size=128x128x128", "no results at 128x128x128"),
    ("sweep run.json", "param=NAME"),
    ("ncu run.json", "no Nsight Compute records"),
])
def test_a_marker_that_cannot_be_generated_says_why(tmp_path, spec, message):
    root = _made_up(tmp_path)
    with pytest.raises(docs.DocsError, match=message):
        docs.generate(spec, root, root / "page.md")


def test_an_unclosed_marker_is_an_error(tmp_path, capsys):
    page = tmp_path / "page.md"
    page.write_text("<!-- generated: headline docs/results/h100_fp32_4096.json -->\n| a |\n")
    assert _check(str(page)) == 2
    assert "without its '<!-- end generated -->'" in capsys.readouterr().err


def _index_entries() -> set[str]:
    text = (RESULTS / "README.md").read_text(encoding="utf-8")
    block = text[text.index("<!-- generated: index docs/results"):]
    return {docs.local_link(target) for target in docs.links(block)} - {None}


def test_every_saved_result_is_in_the_index():
    files = {p.relative_to(RESULTS).as_posix() for p in RESULTS.rglob("*") if p.is_file()} - {"README.md"}
    assert files and files == _index_entries()


def test_the_index_names_who_uses_each_file():
    text = (RESULTS / "README.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| [h100_records_fp32.json]"))
    assert "README.md (headline table)" in row and "docs/results.md (sizes table)" in row
    assert "NVIDIA H100 80GB HBM3" in row


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors (lower case, punctuation dropped, spaces to hyphens) and explicit ids."""
    text = page.read_text(encoding="utf-8")
    headings = re.findall(r"^#+ (.+)$", text, re.M)
    return ({re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}
            | set(re.findall(r'<a (?:id|name)="([^"]+)"', text)))


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_relative_link_resolves(page):
    broken = []
    for target in docs.links(page.read_text(encoding="utf-8")):
        path = docs.local_link(target)
        fragment = target.partition("#")[2]
        if path is None:
            if target.startswith("#") and fragment not in _anchors(page):
                broken.append(target)
            continue
        resolved = (page.parent / path).resolve()
        if not resolved.exists():
            broken.append(target)
        elif fragment and resolved.suffix == ".md" and fragment not in _anchors(resolved):
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"
