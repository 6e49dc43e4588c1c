"""Exercises inside real `mkdocs build` runs of the lesson plugin."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import lessonbuild.exercises as exercises
from lessonbuild.deck import read_deck

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "exercise_fixtures"


#: A page with one check exercise, id 'split', options 'view-transpose'
#: and 'direct-view': what the reference and anchor tests point at.
CHECK_PAGE = """
# Check

```exercise
kind: check
id: split
question: q
options:
  - id: view-transpose
    text: a
    correct: true
  - id: direct-view
    text: b
    tempts: t
explanation: e
```
"""


def build(
    config: Path, site: Path, quiet: bool = True
) -> subprocess.CompletedProcess:
    """`mkdocs build --strict`; `quiet` (-q) also hides MkDocs' warnings
    from its strict count, so a test of a MkDocs warning passes False."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict"]
        + (["-q"] if quiet else [])
        + ["-f", str(config), "-d", str(site)],
        cwd=config.parent,
        env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
        capture_output=True,
        text=True,
    )


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))


def test_all_problems_of_all_pages_fail_the_build_together(tmp_path):
    """Three pages, three problems: one error lists them all with file and
    line, and no page of the site is left behind (not even an old one)."""
    write(
        tmp_path / "mkdocs.yml",
        """
        site_name: broken
        plugins: [lesson]
        markdown_extensions: [md_in_html, pymdownx.superfences]
        """,
    )
    write(
        tmp_path / "docs" / "index.md",
        """
        ---
        title: Index
        ---

        # Fine page

        ```exercise
        kind: predict
        prompt: p
        answer: a
        why: w
        ```
        """,
    )
    write(
        tmp_path / "docs" / "pages" / "37-check.md",
        """
        ---
        title: Check
        ---

        # Check

        ```exercise
        kind: check
        question: q
        options:
          - text: a
            correct: true
          - text: b
            correct: true
        explanation: e
        ```

        ```exercise
        kind: order
        prompt: p
        steps: [x]
        why: w
        ```
        """,
    )
    write(
        tmp_path / "docs" / "pages" / "24-fill.md",
        """
        # Fill

        ```exercise
        kind: fill-in
        prompt: p
        variants: no_such.table
        cells:
          - label: x
        ```
        """,
    )
    stale = tmp_path / "site" / "index.html"
    write(stale, "<p>an old build</p>")
    result = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0
    err = result.stderr
    assert "3 problems found." in err
    check = "docs/pages/37-check.md"
    assert f"{check}:10: check has 2 options (A, B) marked" in err
    assert f"{check}:11: option B is the correct one" not in err
    assert f"{check}:21: 'steps' of order has 1 item(s)" in err
    assert "docs/pages/24-fill.md:6: fill-in " in err
    assert "no_such.table" in err
    assert "docs/index.md" not in err
    assert not list((tmp_path / "site").rglob("*.html"))


def test_a_reference_to_a_missing_id_fails_the_build_at_its_line(tmp_path):
    """{{ ref(...) }} to an option id that does not exist, in a page's
    prose and in an exercise's text: the build stops before any page,
    naming each file and line and the ids that do exist."""
    write(
        tmp_path / "mkdocs.yml",
        """
        site_name: refs
        plugins: [lesson]
        markdown_extensions: [md_in_html, pymdownx.superfences]
        """,
    )
    write(
        tmp_path / "docs" / "index.md",
        """
        # Index

        The right split is option {{ ref("split", "view-transpose") }}, the
        wrong one {{ ref("split", "direct") }}.

        ```exercise
        kind: predict
        prompt: Which is it, {{ ref("split", "flat") }} or another?
        answer: a
        why: w
        ```
        """,
    )
    write(tmp_path / "docs" / "check.md", CHECK_PAGE)
    result = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0
    err = result.stderr
    assert "2 problems found." in err, err
    assert (
        "docs/index.md:4: ref('split', 'direct'): exercise 'split' has no "
        "option with id 'direct'; expected one of: direct-view, "
        "view-transpose"
    ) in err
    assert (
        "docs/index.md:8: ref('split', 'flat'): exercise 'split' has " in err
    )
    assert not (tmp_path / "site").exists() or not list(
        (tmp_path / "site").rglob("*.html")
    )


def test_links_to_an_exercise_reach_its_anchor(tmp_path):
    """A Markdown link to an exercise's anchor is a link MkDocs can check:
    one that exists passes its anchor validation, one that does not fails
    the strict build (the lesson's mkdocs.yml sets anchors to warn)."""
    write(
        tmp_path / "mkdocs.yml",
        """
        site_name: anchors
        plugins: [lesson]
        markdown_extensions: [md_in_html, pymdownx.superfences]
        validation:
          anchors: warn
        """,
    )
    write(
        tmp_path / "docs" / "index.md",
        """
        # Index

        Try [the check](check.md#ex-split) and [its option
        B](check.md#ex-split-direct-view), not [this](check.md#ex-splat).
        """,
    )
    write(tmp_path / "docs" / "check.md", CHECK_PAGE)
    result = build(tmp_path / "mkdocs.yml", tmp_path / "site", quiet=False)
    assert result.returncode != 0
    broken = re.findall(r"anchor '#([\w-]+)'", result.stderr)
    assert broken == ["ex-splat"], result.stderr


def test_fixture_site_builds_every_kind(tmp_path):
    """The fixture site: each page's widgets are in, no placeholder left."""
    result = build(FIXTURE / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, result.stderr
    kinds = set()
    for page in (tmp_path / "site").glob("*.html"):
        html = page.read_text()
        assert "xexercisex" not in html
        kinds |= set(re.findall(r'data-ex-kind="([a-z-]+)"', html))
    assert kinds == set(exercises.KINDS)


def test_lesson_site_renders_every_exercise(built_site):
    """Every ```exercise fence of the lesson's slides is a widget."""
    deck = read_deck(ROOT)
    assert deck.slides
    for slide in deck.slides:
        html_path = built_site / deck.docs_rel(slide).replace(".md", ".html")
        html = html_path.read_text()
        sections = re.findall(r'<section class="exercise ex-([a-z-]+)"', html)
        assert len(sections) == len(slide.exercises), slide.path
        assert "xexercisex" not in html


def test_item_numbers_in_the_markup_give_no_answer_away(built_site):
    """Order and sorting exercises number their items where they are
    shown (0, 1, 2, ... down the page), never in the answer's order; the
    folded key (the answer without JavaScript) names each item by the
    same number, so the widget grades against it."""
    from bs4 import BeautifulSoup

    seen = {"ex-order": 0, "ex-buckets": 0}
    for path in sorted((built_site / "slides").glob("*.html")):
        soup = BeautifulSoup(path.read_text(), "html.parser")
        for section in soup.select("section.ex-order, section.ex-buckets"):
            kind = (
                "ex-order" if "ex-order" in section["class"] else "ex-buckets"
            )
            seen[kind] += 1
            attr = "data-ex-step" if kind == "ex-order" else "data-ex-item"
            pool = ".ex-steps" if kind == "ex-order" else ".ex-zone--pool"
            shown = section.select(f"{pool} [{attr}]")
            ids = [li[attr] for li in shown]
            assert ids == [str(i) for i in range(len(shown))], (path, ids)
            parts = ".ex-step__text, .ex-item__text"
            text = {
                li[attr]: li.select_one(parts).get_text(" ", strip=True)
                for li in shown
            }
            keyed = section.select(f".ex-key [{attr}]")
            assert sorted(li[attr] for li in keyed) == sorted(ids), path
            for li in keyed:
                assert text[li[attr]] == li.get_text(" ", strip=True), path
    assert all(seen.values()), seen
