"""The side-by-side lessons: built from the code and the saved results, counted right, readable in a real browser."""

import dataclasses
import html
import inspect
import json
import os
import shutil
from pathlib import Path

import pytest

from implementations import all_variants, select
from implementations.tools import crossover
from implementations.tools.lessons import NOT_MEASURED, build_lessons, cuda_loc, main, python_loc

# its module fixture is built once: every test of this file runs in one xdist worker
pytestmark = pytest.mark.xdist_group("test_lessons")

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"
SAVED = [RESULTS / "h100_fp32_4096.json", RESULTS / "h100_tc_bf16.json"]
CHROMIUM = "/usr/bin/chromium"
# Nothing in the page may need the network; these keep Chromium itself from calling home too.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]


def figure(path: Path) -> Path:
    Image = pytest.importorskip("PIL.Image")
    Image.new("RGB", (120, 60), (30, 120, 200)).save(path)
    return path


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """The lessons from the saved H100 results, with one figure, built through the command line."""
    out = tmp_path_factory.mktemp("measured")
    image = figure(tmp_path_factory.mktemp("figures") / "speed.png")
    assert main(["--out", str(out), "--results", *map(str, SAVED), "--images", str(image)]) == 0
    return out / "lessons.html", out / "lessons.md"


@pytest.fixture(scope="module")
def unmeasured(tmp_path_factory):
    """The lessons on a CPU-only machine: no result documents."""
    return build_lessons(tmp_path_factory.mktemp("unmeasured"))


def md_section(md: str, tag: str) -> str:
    start = md.index(f'<a id="{tag}"></a>')
    end = md.find('<a id="', start + 1)
    return md[start:end if end > 0 else None]


def html_section(page: str, tag: str) -> str:
    start = page.index(f'<section class="rung" id="{tag}">')
    return page[start:page.index("</section>", start)]


def summary_rows(md: str) -> dict[str, list[list[str]]]:
    """The markdown summary table's cells, by rung tag."""
    table = md.split("## Summary\n\n", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    rows: dict[str, list[list[str]]] = {}
    for line in table:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows.setdefault(cells[0].rsplit("(#", 1)[1].rstrip(")"), []).append(cells)
    return rows


# ---- counting ------------------------------------------------------------------------------------------

C_SNIPPET = r'''// a file comment
#include "common.cuh"

/* a block comment
   over two lines */
template <int TILE>
__global__ void k(float* c, int n) {  // a trailing comment
    const char* s = "// not a comment /* nor this */";
    /* inline */ c[0] = 1.0f;

#pragma unroll
    for (int i = 0; i < n; ++i) c[i] = 0.0f;
}
'''

PY_SNIPPET = '''"""A module docstring."""
# a comment


@triton.jit
def f(x, y):
    """A docstring
    over two lines."""
    # why
    z = x + y  # a trailing comment

    s = "# not a comment"
    return (z,
            s)
'''


def test_cuda_loc_leaves_out_comments_and_blank_lines():
    # #include, template, __global__, const char*, c[0], #pragma, for, }
    assert cuda_loc(C_SNIPPET) == 8


def test_python_loc_leaves_out_comments_docstrings_and_blank_lines():
    # @triton.jit, def, z =, s =, and the return statement's two lines
    assert python_loc(PY_SNIPPET) == 6
    assert python_loc("    def g():\n        return 1\n") == 2  # a method's source, indented


# ---- content -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("build", ["measured", "unmeasured"])
def test_every_rung_has_a_section_with_both_languages(build, request):
    html_path, md_path = request.getfixturevalue(build)
    page, md = html_path.read_text(), md_path.read_text()
    for v in all_variants():
        assert f'href="#{v.tag}"' in page, f"{v.tag} missing from the table of contents"
        section = md_section(md, v.tag)
        assert f"## {v.tag} {v.title}" in section
        if v.cuda_source:
            assert v.cuda_source.path.read_text().rstrip("\n") in section, f"{v.tag}: the .cu is not shown"
        assert inspect.getsource(v.cuda) in section, f"{v.tag}: the CUDA C launcher is not shown"
        assert inspect.getsource(v.triton) in section, f"{v.tag}: the Triton launcher is not shown"
        assert "@triton.jit" in section, f"{v.tag}: no Triton kernel"
        rendered = html_section(page, v.tag)
        assert html.escape(v.title) in rendered
        assert '<div class="column cuda">' in rendered and '<div class="column triton">' in rendered
        assert rendered.count('class="highlight"') >= 4, f"{v.tag}: kernel and launcher of both languages"
        doc = rendered.split('<div class="doc">', 1)[1].split('<div class="side-by-side">', 1)[0]
        assert "<table>" in doc, f"{v.tag}: the docstring's concept map is not rendered as a table"


def test_a_reused_kernel_is_shown_and_counted_where_it_is_launched(measured):
    md = measured[1].read_text()
    v05 = md_section(md, "v05")
    assert "def smem_tiling_kernel(" in v05 and "reused from v03_smem_tiling" in v05
    assert "def autotuned_kernel(" in md_section(md, "v11") and "def block_tile(" in md_section(md, "v11")


def test_measured_percentages_come_from_the_documents(measured):
    page, md = measured[0].read_text(), measured[1].read_text()
    rows = summary_rows(md)
    for path, tag in ((SAVED[0], "v11"), (SAVED[1], "v15")):
        doc = json.loads(path.read_text())
        pct = {r["impl"]: r["pct_cublas"] for r in doc["results"] if r["rung"] == tag and r["size"] == "4096x4096x4096"}
        expected = f"{pct['cuda']:.1f} / {pct['triton']:.1f}"
        assert any(expected in row for row in rows[tag]), f"{tag}: {expected} not in {rows[tag]}"
        assert expected in page
        assert f"{pct['cuda']:.1f}" in md_section(md, tag), "the rung's own measured table"
    assert "NVIDIA H100 80GB HBM3" in page and "fp32 4096³" in page and "bf16 8192³" in page
    assert any("WRONG (expected)" in cell for row in rows["v04"] for cell in row)
    assert rows["v01"][0][-1] == "—", "v01 is fp32 only: nothing to show in the bf16 columns"


def test_no_figure_is_invented_without_results(unmeasured):
    page, md = unmeasured[0].read_text(), unmeasured[1].read_text()
    assert "## Measurements" not in md and "Measured:" not in md and "Compiled kernels:" not in md
    for tag, rows in summary_rows(md).items():
        for row in rows:
            assert row[-1] == NOT_MEASURED, f"{tag}: % cuBLAS"
            assert row[5] == NOT_MEASURED, f"{tag}: Triton registers need a GPU run"
    assert NOT_MEASURED in page
    v01 = all_variants()[0]
    cell = summary_rows(md)[v01.tag][0][4]
    if shutil.which("nvcc") is None:
        assert cell == "no nvcc report" and "nvcc not found" in md
    else:
        from implementations.core.cuda_c import compile_report

        r = compile_report(v01.cuda_source, v01.cuda_source.archs[-1])[0]
        assert cell == f"{r.registers} · {r.smem_bytes} · {r.spills} (nvcc {r.arch})"


def test_a_run_without_a_gpu_counts_as_no_measurement(tmp_path):
    """compare.py on a CPU writes results (checked in the interpreter) with no times: none may show as measured."""
    v01 = all_variants()[0]
    record = {"rung": v01.tag, "name": v01.name, "config": "", "impl": "triton", "dtype": "fp32",
              "M": 17, "N": 17, "K": 17, "status": "ok", "ms": None, "pct_cublas": None}
    cpu = tmp_path / "cpu.json"
    cpu.write_text(json.dumps({"environment": {"triton mode": "interpreter"}, "results": [record]}))
    md = build_lessons(tmp_path, [cpu], variants=[v01])[1].read_text()
    assert summary_rows(md)[v01.tag][0][-1] == NOT_MEASURED
    assert "Left out: cpu.json" in md and "Measured:" not in md


def test_a_missing_side_and_a_broken_rung_read_sensibly(tmp_path):
    v01, v03, v04 = (next(v for v in all_variants() if v.tag == t) for t in ("v01", "v03", "v04"))
    variants = [dataclasses.replace(v01, triton=None), dataclasses.replace(v03, cuda=None, cuda_source=None), v04]
    page, md = (p.read_text() for p in build_lessons(tmp_path, SAVED[:1], variants=variants))
    assert "This rung has no Triton implementation." in html_section(page, "v01")
    assert "This rung has no CUDA C implementation." in html_section(page, "v03")
    assert "Broken on purpose." in html_section(page, "v04") and "(broken on purpose)" in md
    rows = summary_rows(md)
    assert rows["v01"][0][3] == "—" and rows["v03"][0][2] == "—"


def test_figures_are_embedded_in_the_page_and_linked_from_the_markdown(measured):
    page, md = measured[0].read_text(), measured[1].read_text()
    assert 'src="data:image/png;base64,' in page
    assert "](../figures" in md and "speed.png)" in md


def test_the_command_line_refuses_missing_files(tmp_path, capsys):
    assert main(["--out", str(tmp_path), "--results", str(tmp_path / "none.json")]) == 2
    assert "none.json" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["not json", '{"environment": {}}', "[1, 2]"])
def test_the_command_line_refuses_what_compare_did_not_write(tmp_path, capsys, text):
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    assert main(["--out", str(tmp_path), "--results", str(bad)]) == 2
    assert "bad.json" in capsys.readouterr().err
    assert not (tmp_path / "lessons.html").exists()


# ---- in a real browser ---------------------------------------------------------------------------------


def browser_or_skip():
    """playwright's sync API, or a skip with the reason (a failure when TVC_REQUIRE_BROWSER=1, as in CI)."""
    reason = ""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        reason = "playwright is not installed (pip install playwright)"
    if not reason and not Path(CHROMIUM).is_file():
        reason = f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    if not reason:
        try:
            import PIL  # noqa: F401  (reads the screenshot back)
        except ImportError:
            reason = "Pillow is not installed"
    if reason:
        if os.environ.get("TVC_REQUIRE_BROWSER") == "1":
            pytest.fail(f"TVC_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    return sync_playwright


def test_the_page_renders_offline_in_headless_chromium(measured, tmp_path):
    sync_playwright = browser_or_skip()
    from PIL import Image

    html_path = measured[0]
    errors, requests, failed = [], [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            # half-scale pixels: the layout is the same 1400 CSS pixels, the long screenshot 4× smaller
            page = browser.new_page(viewport={"width": 1400, "height": 900}, device_scale_factor=0.5)
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.on("requestfailed", lambda r: failed.append(r.url))
            page.goto(html_path.as_uri(), wait_until="load")
            for v in all_variants():
                section = page.locator(f"section#{v.tag}")
                assert section.is_visible(), v.tag
                cuda = section.locator(".column.cuda").bounding_box()
                triton = section.locator(".column.triton").bounding_box()
                assert abs(cuda["y"] - triton["y"]) < 1, f"{v.tag}: the two columns do not start level"
                assert cuda["x"] + cuda["width"] <= triton["x"], f"{v.tag}: CUDA C is not left of Triton"
                assert section.locator(".highlight").first.is_visible()
            assert page.locator("figure img[alt='speed.png']").evaluate("img => img.naturalWidth") == 120
            assert page.locator("figure img").evaluate_all("imgs => imgs.every(img => img.naturalWidth > 0)")
            shot = tmp_path / "lessons.png"
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert not errors, errors
    assert not failed, failed
    assert all(url.startswith(("file:", "data:")) for url in requests), requests
    image = Image.open(shot)
    assert image.height > 10 * image.width, "the whole page, not one screen"
    colours = image.convert("RGB").getcolors(1 << 24)
    assert len(colours) > 200, "highlighted code and tables have many colours; a blank page has one"
    assert max(colours)[0] < 0.95 * image.width * image.height, "mostly background"


def test_a_crossover_run_gets_its_section_with_plot_and_paragraph(tmp_path):
    saved = RESULTS / "h100_crossover.json"
    page, md = (p.read_text() for p in build_lessons(tmp_path, variants=select("1"), crossover=saved))
    paragraph = crossover.lesson(*crossover.load(saved))
    assert paragraph in md and "From n = " in paragraph
    assert "When a GPU pays" in page and 'alt="crossover"' in page and (tmp_path / "diagrams" / "crossover.png").is_file()


def test_small_shapes_runs_get_their_section_with_plot_and_paragraph(tmp_path):
    """The paragraph's spreads and the shapes it names below 95% are the runs' own figures."""
    from implementations.tools.lessons import SMALL_HEADING, small_shapes_lesson

    saved = [RESULTS / "h100_small_bf16_graph.json", RESULTS / "h100_small_bf16_events.json"]
    page, md = (p.read_text() for p in build_lessons(tmp_path, variants=select("1"), small_shapes=saved))
    docs = [json.loads(p.read_text()) for p in saved]
    paragraph = small_shapes_lesson(docs)
    graph = [r for r in docs[0]["results"] if r["impl"] == "triton"]
    low, high = min(r["pct_cublas"] for r in graph), max(r["pct_cublas"] for r in graph)
    assert f"Triton {low:.0f}-{high:.0f}%" in paragraph, paragraph
    slow = min(graph, key=lambda r: r["pct_cublas"])
    assert f"Triton {slow['size']} ({slow['pct_cublas']:.0f}%)" in paragraph
    assert paragraph.split("\n\n")[0] in md and SMALL_HEADING in page and 'alt="small-shapes"' in page
    assert (tmp_path / "diagrams" / "small_shapes.png").is_file()
