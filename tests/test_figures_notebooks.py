"""Figures and notebooks: real, deterministic, described, and consistent.

Figures are snippet output (mha_ref.publish_figure); notebooks are build
products (the deck's from the engine's verified outputs, the homework
from notebooks/*.py). These tests read the built site and run the figure
snippets themselves.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from lessonbuild.deck import read_deck
from lessonbuild.engine.outputs import normalize
from lessonbuild.settings import read_settings
from mha_ref.tables import TABLES_ENV

ROOT = Path(__file__).resolve().parents[1]
FIGURE_SNIPPETS = sorted(
    p.relative_to(ROOT).as_posix()
    for p in (ROOT / "snippets").glob("*.py")
    if "publish_figure(" in p.read_text(encoding="utf-8")
)
#: Slides the lesson promises a picture on.
SLIDES_WITH_FIGURES = (9, 12, 17, 31, 41)


def deck():
    return read_deck(ROOT, parts=read_settings(ROOT).parts)


def figure_records(rel: str, seed: str, tmp_path: Path) -> list[dict]:
    """Run one snippet as the engine would, with a given hash seed."""
    sink = tmp_path / f"records-{seed}.jsonl"
    env = dict(os.environ, PYTHONHASHSEED=seed, **{TABLES_ENV: str(sink)})
    subprocess.run(
        [sys.executable, rel],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    lines = sink.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    return [r for r in records if r.get("kind") == "figure"]


def test_the_lesson_has_figure_snippets():
    assert len(FIGURE_SNIPPETS) >= 4


@pytest.mark.parametrize("rel", FIGURE_SNIPPETS)
def test_figures_are_byte_identical_across_runs_and_described(
    rel, tmp_path, built_site
):
    """A fresh standalone run (a hash seed the build never uses) gives
    the SVG bytes the build published (itself two runs that agreed,
    seeds 0 and 1), with alt text."""
    records = figure_records(rel, "7", tmp_path)
    assert records, f"{rel} published no figure"
    for record in records:
        figure_id = f"{Path(rel).stem}.{record['name']}"
        built = built_site / "figures" / f"{figure_id}.svg"
        assert built.read_text(encoding="utf-8") == record["svg"], figure_id
        assert len(record["alt"].split()) >= 10, record["name"]
        assert record["svg"].lstrip().startswith(("<?xml", "<svg"))
        assert "<dc:date>" not in record["svg"]


def test_figure_text_stays_text_whatever_the_snippets_rcparams():
    """Labels are SVG <text> (searchable, crisp, a third lighter than
    glyph outlines), even when the snippet drew outside style()."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from mha_ref.figures import to_svg

    fig = Figure()
    fig.subplots().set_title("head 0: previous token")
    with matplotlib.rc_context({"svg.fonttype": "path"}):
        svg = to_svg(fig)
    assert re.search(r"<text[^>]*>head 0: previous token</text>", svg), svg
    assert "DejaVuSans-" not in svg  # no glyph outlines


@pytest.mark.parametrize("number", SLIDES_WITH_FIGURES)
def test_slide_shows_a_figure_with_alt_text(built_site, number):
    slide = deck().slides[number - 1]
    page = built_site / Path(slide.path).relative_to("docs")
    html = page.with_suffix(".html").read_text(encoding="utf-8")
    images = re.findall(
        r'<figure class="?lesson-figure[^>]*>(?:<picture><source media="'
        r'[^"]+" srcset="([^"]+)">)?<img src="([^"]+)" alt="([^"]*)"',
        html,
    )
    assert images, f"slide {number} shows no figure"
    for narrow, src, alt in images:
        assert (page.parent / src).is_file(), src
        assert not narrow or (page.parent / narrow).is_file(), narrow
        assert len(alt.split()) >= 10


def output_blocks() -> dict[str, list[str]]:
    """Snippet -> the Output block the slides show for it."""
    blocks = {}
    for page in deck().pages:
        for fence in page.fences:
            if not fence.is_output:
                continue
            above = page.block_above(fence)
            for inc in page.includes_in(above) if above else []:
                blocks[inc.path] = normalize(fence.content)
    return blocks


def test_deck_notebook_outputs_equal_the_slides_output_blocks(built_site):
    nb = nbformat.read(built_site / "notebooks/lesson-81.ipynb", as_version=4)
    nbformat.validate(nb)
    blocks = output_blocks()
    slides = {slide.number: slide for slide in deck().slides}
    compared, locked = 0, []
    for before, cell in zip(nb.cells, nb.cells[1:], strict=False):
        rel = cell.get("metadata", {}).get("snippet")
        if cell.cell_type != "code" or rel not in blocks:
            continue
        if cell.metadata.get("after_exercise"):
            # A run the page locks until its exercise is tried (slide 37's
            # count, 39's shape): no output to read, a note to answer first;
            # an exercise only where the slide has one (slide 51's program
            # is locked for after the project, and told "Answer slide 51's
            # exercise first").
            assert cell.outputs == [] and "first" in before.source
            number = int(cell.id.split("-")[1])
            has_exercise = bool(slides[number].exercises)
            assert ("exercise" in before.source) == has_exercise, before
            locked.append(rel)
            continue
        text = "".join(o.get("text", "") for o in cell.get("outputs", []))
        assert normalize(text.split("\n")) == blocks[rel], rel
        compared += 1
    assert compared >= 10
    assert {"snippets/37_param_check.py", "snippets/39_attn_shape.py"} <= set(
        locked
    ), locked


def test_deck_notebook_says_answer_first_before_every_locked_fold(
    built_site,
):
    """Code a slide keeps in a Verify fold, locked until its exercise is
    tried, is said to be the answer in the notebook too: the variants'
    code (it prints nothing) sat there with its shape comments, the
    answers of slides 39's and 48's fill-ins, under no warning."""
    from bs4 import BeautifulSoup

    folded = {}
    for page in sorted((built_site / "slides").glob("*.html")):
        html = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        for fold in html.select("details.verify"):
            for name in fold.select(".filename"):
                if name.get_text().startswith("snippets/"):
                    folded[name.get_text()] = page.name
    assert any("_variants.py" in rel for rel in folded), folded
    nb = nbformat.read(built_site / "notebooks/lesson-81.ipynb", as_version=4)
    unsaid = [
        rel
        for before, cell in zip(nb.cells, nb.cells[1:], strict=False)
        if (rel := cell.get("metadata", {}).get("snippet")) in folded
        and not (
            cell.metadata.get("after_exercise")
            and cell.outputs == []
            and "first" in before.source
        )
    ]
    assert not unsaid, unsaid


def test_deck_notebook_leads_hold_no_macro_call(built_site):
    """A slide's lead paragraph in the notebook is text a reader reads:
    slide 45's showed its raw ``{{ value("45_skeleton.d_model") }}``
    calls. A lead ends at the last sentence before a macro's line."""
    nb = nbformat.read(built_site / "notebooks/lesson-81.ipynb", as_version=4)
    raw = [
        c.id
        for c in nb.cells
        if c.cell_type == "markdown" and ("{{" in c.source or "{%" in c.source)
    ]
    assert not raw, raw
    lead = next(c.source for c in nb.cells if c.id == "slide-45")
    assert lead.rstrip().endswith((".", "!", "?")), lead
    assert "Task." in lead, lead


def _published_outputs(site) -> dict[str, str]:
    """Each snippet's output, as the built deck notebook holds it (a run
    kept for after its exercise holds none: any text stands for it)."""
    nb = nbformat.read(site / "notebooks/lesson-81.ipynb", as_version=4)
    return {
        cell.metadata["snippet"]: "".join(
            o.get("text", "") for o in cell.get("outputs", [])
        )
        or (
            "(run after the exercise)\n"
            if "after_exercise" in cell.metadata
            else ""
        )
        for cell in nb.cells
        if cell.cell_type == "code" and "snippet" in cell.metadata
    }


def test_deck_notebook_is_the_same_file_for_the_same_deck(built_site):
    """The download is reproducible (nbformat's cell ids are random
    unless set), and equals what the build published."""
    from lessonbuild.notebooks import deck_notebook

    outputs = _published_outputs(built_site)
    first = nbformat.writes(deck_notebook(deck(), outputs))
    assert first == nbformat.writes(deck_notebook(deck(), outputs))
    published = (built_site / "notebooks/lesson-81.ipynb").read_text(
        encoding="utf-8"
    )
    assert first == published


@pytest.mark.parametrize(
    "source",
    [
        "notebooks/homework.py",
        "notebooks/homework_solutions.py",
        "notebooks/project.py",
        "notebooks/project_solutions.py",
    ],
)
def test_homework_notebook_is_the_same_file_for_the_same_source(source):
    from lessonbuild.notebooks import to_ipynb

    first = nbformat.writes(to_ipynb(ROOT / source))
    assert first == nbformat.writes(to_ipynb(ROOT / source))


@pytest.mark.parametrize(
    "name",
    [
        "lesson-81",
        "homework",
        "homework-solutions",
        "project",
        "project-solutions",
    ],
)
def test_notebooks_download_as_valid_ipynb_and_render(built_site, name):
    nb = nbformat.read(built_site / f"notebooks/{name}.ipynb", as_version=4)
    nbformat.validate(nb)
    from bs4 import BeautifulSoup

    page = (built_site / f"notebooks/{name}.html").read_text("utf-8")
    soup = BeautifulSoup(page, "html.parser")
    assert soup.select(f'a[href="{name}.ipynb"][download]')  # downloadable
    # Each cell's copy button copies its code as it is, lines and all
    # (minified, they came out as one line: a SyntaxError when pasted).
    copied = [div.get_text() for div in soup.select(".clipboard-copy-txt")]
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    shown = code[len(code) - len(copied) :]  # the page shows no setup cell
    assert copied and len(code) - len(copied) <= 1 and copied == shown


@pytest.mark.parametrize(
    "name", ["lesson-81", "homework", "homework-solutions"]
)
def test_notebook_pages_show_typeset_math(built_site, name):
    """The Markdown cells' $...$ is typeset at build time, like the
    slides' math: no raw dollars in the visible prose."""
    from bs4 import BeautifulSoup

    page = (built_site / f"notebooks/{name}.html").read_text("utf-8")
    soup = BeautifulSoup(page, "html.parser")
    cells = soup.find_all("div", class_="jp-RenderedMarkdown")
    assert cells
    assert soup.select(".jp-RenderedMarkdown .katex math")  # MathML too
    for cell in cells:
        for hidden in cell.select(".katex, code, pre"):
            hidden.decompose()
        text = cell.get_text(" ")
        assert not re.search(r"\$[^\s$][^$]*\$", text), text[:300]


def test_mark_math_wraps_jupyter_math_only_in_prose():
    from lessonbuild.notebooks import mark_math

    page = (
        '<div class="jp-RenderedMarkdown"><p>Let $a &lt; b$ cost $5 '
        "and $ 6$, see <code>$x$</code>.</p><p>$$x^2$$</p></div>"
        "<pre>$y$</pre>"
    )
    assert mark_math(page) == (
        '<div class="jp-RenderedMarkdown"><p>Let <span class="arithmatex">'
        "\\(a &lt; b\\)</span> cost $5 and $ 6$, see <code>$x$</code>.</p>"
        '<div class="arithmatex">\\[x^2\\]</div></div><pre>$y$</pre>'
    )


def test_solutions_notebook_prints_its_measured_specialisation(built_site):
    nb = nbformat.read(
        built_site / "notebooks/homework-solutions.ipynb", as_version=4
    )
    errors = [
        o
        for c in nb.cells
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    assert errors == []
    text = "\n".join(
        o.get("text", "") for c in nb.cells for o in c.get("outputs", [])
    )
    assert re.search(r"specialisation", text, re.I)


def test_notebook_downloads_from_the_landing_page_and_slides_with_code(
    built_site,
):
    """index.html links the .ipynb; every slide that runs code does too."""
    index = (built_site / "index.html").read_text(encoding="utf-8")
    assert 'href="notebooks/lesson-81.ipynb"' in index
    offered = set()
    for slide in deck().slides:
        runs_code = any(i.path.startswith("snippets/") for i in slide.includes)
        page = built_site / Path(slide.path).relative_to("docs")
        html = page.with_suffix(".html").read_text(encoding="utf-8")
        links = re.findall(r'href="([^"]+\.ipynb)" download', html)
        lesson = [h for h in links if h.endswith("/lesson-81.ipynb")]
        assert bool(lesson) == runs_code, slide.path
        for href in links:
            assert (page.parent / href).resolve().is_file()
            offered.add(Path(href).name)
    # The project and the homework are offered where the deck sets them.
    assert {"project.ipynb", "homework.ipynb"} <= offered


def test_search_leaves_out_the_deck_and_solutions_notebooks(built_site):
    index = json.loads(
        (built_site / "search/search_index.json").read_text(encoding="utf-8")
    )
    locations = {doc["location"].split("#")[0] for doc in index["docs"]}
    assert "notebooks/lesson-81.html" not in locations
    assert "notebooks/homework-solutions.html" not in locations
    assert "notebooks/project-solutions.html" not in locations
    assert "notebooks/homework.html" in locations
    assert "notebooks/project.html" in locations


def test_no_page_leads_to_an_answer_key_by_next_or_the_nav(built_site):
    """A student on the last task pressed "Next" and read the project's
    solutions: no footer link and no nav entry points at a solutions
    page; the home page still links each one, for after an attempt."""
    from bs4 import BeautifulSoup

    keys = {
        p.name for p in (built_site / "notebooks").glob("*-solutions.html")
    }
    assert len(keys) == 2  # homework and project

    def links(page, selector):
        soup = BeautifulSoup(page.read_text("utf-8"), "html.parser")
        return {Path(a["href"]).name for a in soup.select(selector)}

    pages = sorted(built_site.glob("**/*.html"))
    for page in pages:
        led_to = links(
            page, "link[rel=next], .md-footer a, .md-nav--primary a"
        )
        assert not led_to & keys, page.relative_to(built_site)
    assert links(built_site / "index.html", "article a[href]") >= keys


def test_code_blocks_stay_out_of_the_search_index(built_site):
    """A third of the index was code; the first visit downloads it all."""
    text = (built_site / "search/search_index.json").read_text("utf-8")
    assert "nn.MultiheadAttention(d_model, h, batch_first=True" not in text
    assert "Trace" in text  # the slides themselves are still there


@pytest.mark.parametrize(
    "name",
    ["lesson-81", "homework", "homework-solutions", "project"],
)
def test_notebooks_carry_mha_ref_and_no_build_plumbing(built_site, name):
    """The first code cell unpacks the notebook's own copy of mha_ref
    (hidden in Jupyter and on the page); no cell calls the build's
    publish_* or switches matplotlib to Agg, none opens with a snippet's
    docstring."""
    nb = nbformat.read(built_site / f"notebooks/{name}.ipynb", as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    setup = code[0]
    assert "setup" in setup.metadata["tags"]
    assert setup.metadata["jupyter"]["source_hidden"] is True
    for cell in code[1:]:
        assert "publish_" not in cell.source, cell.source[:200]
        assert 'matplotlib.use("Agg")' not in cell.source
        assert not cell.source.lstrip().startswith('"""'), cell.source[:80]
    page = (built_site / f"notebooks/{name}.html").read_text("utf-8")
    assert "MHA_REF = " not in page  # the blob stays out of the page


def test_a_cell_added_or_removed_leaves_the_other_cells_ids(built_site):
    """Cell ids name the slide, not the position: with one slide's
    snippet gone (as if a branch had added it), every other cell keeps
    its id, so ``make site-diff`` does not list their slides."""
    from lessonbuild.notebooks import deck_notebook

    outputs = _published_outputs(built_site)
    early = sorted(outputs)[2]  # a snippet with slides after it
    fewer = {k: v for k, v in outputs.items() if k != early}

    def ids(notebook) -> dict[str, str]:
        return {c.id: c.source for c in notebook.cells}

    whole, without = (
        ids(deck_notebook(deck(), outputs)),
        ids(deck_notebook(deck(), fewer)),
    )
    gone = set(whole) - set(without)
    assert gone, "the snippet's cell should be gone"
    assert not set(without) - set(whole)
    assert all(without[i] == whole[i] for i in without)
    later = [i for i in whole if i not in gone]
    assert len(later) > len(whole) // 2
