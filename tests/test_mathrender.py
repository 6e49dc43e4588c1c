"""Math typeset at build time (lessonbuild.mathrender, via the plugin).

Real node, real vendored KaTeX, real MkDocs builds: no mocks.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lessonbuild.mathrender import MathRenderer

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None, reason="node is needed to typeset math"
)


@pytest.fixture(scope="module")
def math():
    with MathRenderer() as renderer:
        yield renderer


def test_inline_formula_becomes_html_and_mathml(math):
    page = '<p>Each head has <span class="arithmatex">\\(d_k\\)</span>.</p>'
    html, problems = math.render_html(page, "docs/x.md")
    assert problems == []
    assert "\\(" not in html, "the TeX delimiters must be gone"
    # The wrapper stays (CSS and a11y.js select it); KaTeX's two layers:
    assert html.startswith('<p>Each head has <span class="arithmatex">')
    assert '<span class="katex-html" aria-hidden="true">' in html
    assert "<math" in html and "<msub><mi>d</mi><mi>k</mi></msub>" in html
    assert '<annotation encoding="application/x-tex">d_k</annotation>' in (
        html
    )
    assert "katex-display" not in html


def test_display_formula_is_set_in_display_mode(math):
    page = '<div class="arithmatex">\\[\nx = \\frac{a}{b}\n\\]</div>'
    html, problems = math.render_html(page, "docs/x.md")
    assert problems == []
    assert html.startswith(
        '<div class="arithmatex"><span class="katex-display'
    )
    assert 'display="block"' in html
    assert "<mfrac>" in html


def test_escaped_tex_is_unescaped_before_typesetting(math):
    """arithmatex escapes <, > and & in the page; KaTeX must get TeX."""
    page = '<span class="arithmatex">\\(a &lt; b\\)</span>'
    html, problems = math.render_html(page, "docs/x.md")
    assert problems == []
    assert "<mo>&lt;</mo>" in html
    assert "&amp;lt;" not in html


def test_tex_error_names_file_and_line_and_keeps_the_tex(math):
    source = "---\ntitle: t\n---\n\nFine \\(x\\).\n\nBroken \\(\\frac{a\\).\n"
    page = (
        '<p>Fine <span class="arithmatex">\\(x\\)</span>.</p>'
        '<p>Broken <span class="arithmatex">\\(\\frac{a\\)</span>.</p>'
    )
    html, problems = math.render_html(page, "docs/slides/07-x.md", source)
    assert [(p.path, p.line) for p in problems] == [("docs/slides/07-x.md", 7)]
    assert "TeX error in \\(\\frac{a\\)" in problems[0].message
    assert str(problems[0]).startswith("docs/slides/07-x.md:7: ")
    assert "\\(\\frac{a\\)" in html
    assert html.count('class="katex"') == 1


def test_unknown_command_is_an_error_not_red_text(math):
    _, problems = math.render_html(
        '<span class="arithmatex">\\(\\nosuchmacro{x}\\)</span>', "a.md"
    )
    assert len(problems) == 1 and "nosuchmacro" in problems[0].message


def test_one_process_and_a_cache_for_the_whole_build(math):
    page = "".join(
        f'<span class="arithmatex">\\(x_{{{i % 7}}}\\)</span>'
        for i in range(70)
    )
    math.render_html(page, "a.md")
    process = math._process
    html, _ = math.render_html(page + page, "b.md")
    assert math._process is process and process.poll() is None
    assert html.count('class="katex"') == 140
    assert sum(1 for key in math._cache if key[0].startswith("x_")) == 7


# --- the hook in a real MkDocs build ---------------------------------------


def _build(tmp_path: Path, markdown: str) -> subprocess.CompletedProcess:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/index.md").write_text(markdown, encoding="utf-8")
    (tmp_path / "mkdocs.yml").write_text(
        textwrap.dedent(
            """\
            site_name: t
            strict: true
            theme: mkdocs
            plugins: [lesson, search]
            markdown_extensions:
              - pymdownx.arithmatex:
                  generic: true
            """
        ),
        encoding="utf-8",
    )
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )


def test_build_typesets_and_search_gets_the_tex_once(tmp_path):
    result = _build(tmp_path, "# T\n\nHeads: $h$ and\n\n$$\nd_k = d/h\n$$\n")
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "site/index.html").read_text(encoding="utf-8")
    assert page.count('class="katex"') == 2
    assert "\\(" not in page and "\\[" not in page
    index = json.loads(
        (tmp_path / "site/search/search_index.json").read_text("utf-8")
    )
    texts = [doc["text"] for doc in index["docs"]]
    # Each entry holds the formula once, as TeX: not three run-together
    # copies (MathML, annotation, KaTeX's visual layer).
    assert any("d_k = d/h" in text for text in texts), texts
    assert all(text.count("d_k = d/h") <= 1 for text in texts), texts
    assert not any("katex" in t or "\u200b" in t for t in texts), texts


def test_build_fails_on_a_tex_error_at_file_and_line(tmp_path):
    result = _build(tmp_path, "# T\n\nok $x$\n\nbad $\\frac{a$ here\n")
    assert result.returncode != 0
    assert "docs/index.md:5: TeX error in \\(\\frac{a\\)" in result.stderr
    assert not (tmp_path / "site/index.html").exists()


# --- the lesson's built site ------------------------------------------------


def _pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def test_no_page_loads_katex_script_or_auto_render(built_site):
    """Math is typeset at build time: no page may load KaTeX's script."""
    offenders = [
        str(page.relative_to(built_site))
        for page in _pages(built_site)
        if re.search(
            r"katex(\.min)?\.js|auto-render|assets/math\.js",
            page.read_text(encoding="utf-8"),
        )
    ]
    assert offenders == [], (
        "these pages load KaTeX's script; remove it from extra_javascript "
        f"in mkdocs.yml: {offenders}"
    )
    assert not (built_site / "assets/vendor/katex/katex.min.js").exists()
    assert (built_site / "assets/vendor/katex/katex.min.css").is_file()


def test_every_formula_on_every_slide_is_typeset(built_site):
    total = 0
    for page in _pages(built_site):
        text = page.read_text(encoding="utf-8")
        wrappers = re.findall(r'class="arithmatex"><span class="katex', text)
        raw = re.findall(r'class="arithmatex">\s*\\[(\[]', text)
        assert raw == [], f"{page.name}: formulas left as TeX: {raw[:3]}"
        total += len(wrappers)
    assert total > 100, "the lesson has hundreds of formulas; found few"


def test_search_index_holds_each_formula_once_as_text(built_site):
    index = json.loads(
        (built_site / "search/search_index.json").read_text(encoding="utf-8")
    )
    slide = [
        doc["text"]
        for doc in index["docs"]
        if doc["location"].startswith("slides/20-")
    ]
    text = " ".join(slide)
    # Once, and as text a reader types (searchtext.readable_index), not
    # as KaTeX's HTML nor as TeX.
    assert text.count("3 d_model²") == 1, text[:500]
    assert "\\text{" not in text and "\\(" not in text, text[:500]
    assert "katex" not in text and "\u200b" not in text, text[:500]


def test_every_url_in_the_sites_css_is_a_file_it_has(built_site):
    """No stylesheet names a file the site lacks (KaTeX's own CSS named a
    .woff and a .ttf beside each vendored .woff2: 40 dead requests)."""
    missing = []
    for css in built_site.rglob("*.css"):
        text = css.read_text(encoding="utf-8")
        for url in re.findall(r"url\(\s*['\"]?([^'\")]+)['\"]?\s*\)", text):
            if url.startswith(("data:", "http:", "https:", "#")):
                continue
            target = css.parent / url.split("?")[0].split("#")[0]
            if not target.is_file():
                missing.append(f"{css.relative_to(built_site)}: {url}")
    assert missing == [], missing[:5]
