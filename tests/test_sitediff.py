"""lessonbuild.sitediff: two git revisions of a tiny site, built and compared.

The fixture is a three-slide site in its own git repository, built with
the real lesson plugin, Material and mkdocs-jupyter (so it has the deck
`present.html` and the lesson notebook). Revision 2 adds a second,
printing snippet to slide 2 (with its accepted output) and rewords its
prose; slides 1 and 3 are untouched. The summary must list exactly one
changed page, slide 2, with the deck and the notebook mapped to it, a
word diff of the prose and the new Output block's lines.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

MKDOCS_YML = """\
site_name: Site diff fixture
use_directory_urls: false
strict: true
theme:
  name: material
plugins:
  - lesson:
      parts: [Only]
  - minify:
      minify_html: !ENV [LESSON_MINIFY_HTML, true]
markdown_extensions:
  - tables
  - pymdownx.highlight
  - pymdownx.superfences
  - pymdownx.snippets:
      base_path: ["."]
      check_paths: true
"""
# The deck notebook rendered as a page, as in the lesson's mkdocs.yml.
JUPYTER = """\
  - mkdocs-jupyter:
      include: ["notebooks/*.ipynb"]
      ignore: ["*.md"]
      execute: false
"""

SLIDE = """\
---
title: {title}
slide: {n}
kind: Concept
part: Only
---

# {title}

{prose}

{code}
"""

CODE = """\
```python title="snippets/{stem}.py"
--8<-- "snippets/{stem}.py"
```

```text title="Output"
{output}
```
"""

TABLE = """\
| head | value |
|---|---|
| h | 2 |
"""


def _slide(n, title, prose, *snippets):
    """A slide showing each (stem, output) snippet, or else a table."""
    code = "\n".join(
        CODE.format(stem=stem, output=output) for stem, output in snippets
    )
    return SLIDE.format(n=n, title=title, prose=prose, code=code or TABLE)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def _commit(repo: Path, files: dict[str, str], message: str) -> str:
    for rel, text in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def two_revisions(tmp_path_factory):
    repo = tmp_path_factory.mktemp("sitediff") / "site"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "test@example.invalid")
    _git(repo, "config", "user.name", "test")
    # After the lesson plugin, whose on_files adds the notebooks.
    config = MKDOCS_YML.replace(
        "markdown_extensions:\n", JUPYTER + "markdown_extensions:\n"
    )
    base = _commit(
        repo,
        {
            "mkdocs.yml": config,
            "docs/index.md": "# Home\n",
            "docs/slides/01-prose.md": _slide(
                1, "Prose", "Heads attend.", ("01_one", "one = 1")
            ),
            "snippets/01_one.py": 'print("one =", 1)\n',
            "docs/slides/02-snippet.md": _slide(
                2, "Snippet", "Shapes of every tensor.", ("02_two", "two = 2")
            ),
            "snippets/02_two.py": 'print("two =", 2)\n',
            "docs/slides/03-table.md": _slide(3, "Table", "Untouched."),
        },
        "base",
    )
    head = _commit(
        repo,
        {
            "snippets/02_three.py": 'print("three =", 3)\n',
            "docs/slides/02-snippet.md": _slide(
                2,
                "Snippet",
                "Shapes and sizes of every tensor.",
                ("02_two", "two = 2"),
                ("02_three", "three = 3"),
            ),
        },
        "slide 2: one more snippet, reworded",
    )
    return repo, base, head


def _sitediff(repo: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    env["SNIPPET_CACHE_DIR"] = str(repo.parent / "cache")
    return subprocess.run(
        [sys.executable, "-m", "lessonbuild.sitediff", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _rows(summary: str) -> dict[str, tuple[str, str]]:
    """The summary's table: page -> (what changed, also changed in)."""
    rows = {}
    for line in summary.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 4:
            rows[cells[0].strip("`")] = (cells[2], cells[3])
    return rows


def test_a_revision_against_the_tree_lists_the_one_changed_slide_once(
    two_revisions,
):
    """``make site-diff BASE=...``: the base from a worktree, the tree
    (at the second revision) built where it is. The deck and the
    notebook changed too, and are named on slide 2's row, not as pages
    of their own with cells counted by position."""
    repo, base, head = two_revisions
    run = _sitediff(repo, "--base", base)
    assert run.returncode == 0, run.stderr
    summary = run.stdout
    rows = _rows(summary)
    assert list(rows) == ["slides/02-snippet.html"], summary
    what, also = rows["slides/02-snippet.html"]
    assert what.split(", ") == [
        "`Output of snippets/02_three.py`",
        "code `snippets/02_three.py`",
        "text",
    ], summary
    assert also == "`notebooks/lesson-81.html`, `present.html`", summary
    assert "Shapes <ins>and sizes</ins> of every tensor." in summary
    assert "+three = 3" in summary, summary
    # The worktrees are gone: only the repository's own tree is listed.
    assert len(_git(repo, "worktree", "list").splitlines()) == 1
    # The base's build is kept for the next run, keyed by its commit.
    builds = repo / ".cache" / "sitediff"
    assert (builds / f"{base}-plain" / "index.html").is_file()


PAGE = "<html><body><main><h1>{title}</h1>{body}</main></body></html>"


def _sites(tmp_path, old: dict[str, str], new: dict[str, str]):
    for name, pages in (("old", old), ("new", new)):
        for rel, body in pages.items():
            path = tmp_path / name / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(PAGE.format(title="T", body=body))
    return tmp_path / "old", tmp_path / "new"


def test_two_site_folders(two_revisions, tmp_path):
    repo = two_revisions[0]
    old, new = _sites(
        tmp_path,
        {"slides/01-x.html": "<p>a</p>"},
        {"slides/01-x.html": "<p>b</p>", "slides/02-y.html": "<p>new</p>"},
    )
    run = _sitediff(repo, str(old), str(new))
    assert run.returncode == 0, run.stderr
    assert _rows(run.stdout) == {
        "slides/01-x.html": ("text", "—"),
        "slides/02-y.html": ("added", "—"),
    }, run.stdout
    assert "<del>a</del> <ins>b</ins>" in run.stdout


def test_a_changed_table_is_shown_before_and_after():
    from lessonbuild.sitediff import table_diff

    old = [["h", "d_k"], ["1", "512"], ["16", "32"]]
    new = [["h", "d_k"], ["1", "512"], ["16", "32"], ["32", "16"]]
    assert table_diff(old, new) == [
        "**Before**",
        "",
        "|  | h | d_k |",
        "|---|---|---|",
        "|  | 1 | 512 |",
        "|  | 16 | 32 |",
        "",
        "**After**",
        "",
        "|  | h | d_k |",
        "|---|---|---|",
        "|  | 1 | 512 |",
        "|  | 16 | 32 |",
        "| + | 32 | 16 |",
    ]


def test_exercise_text_is_a_word_diff_and_a_fill_in_cell_says_so():
    from lessonbuild.sitediff import read_page

    page = read_page(
        PAGE.format(
            title="T",
            body='<p>Prose.</p><section class="exercise"><p>Predict h=8.'
            "</p><table><tr><th>h</th></tr><tr><td><input></td></tr>"
            "</table></section>",
        )
    )
    assert page.texts == {"exercise 1": "Predict h=8."}
    assert page.prose == "T Prose."
    assert list(page.tables.values()) == [[["h"], ["(to fill in)"]]]


def test_code_blocks_without_a_file_name_are_named_by_their_heading():
    """A homework notebook's cells: one inserted cell renames nothing
    under the other headings."""
    from lessonbuild.sitediff import read_page

    cell = '<div class="highlight"><pre>{}</pre></div>'
    before = read_page(
        PAGE.format(
            title="T",
            body="<h2>Split</h2>"
            + cell.format("a")
            + "<h2>Merge</h2>"
            + cell.format("b"),
        )
    )
    after = read_page(
        PAGE.format(
            title="T",
            body="<h2>Split</h2>"
            + cell.format("new")
            + cell.format("a")
            + "<h2>Merge</h2>"
            + cell.format("b"),
        )
    )
    assert before.code == {
        "code under “Split”": "a",
        "code under “Merge”": "b",
    }
    assert after.code["code under “Merge”"] == "b"


def test_a_slide_reads_as_its_words_once_without_chrome(built_site):
    """Slide 23 as the lesson builds it: each formula once, as its TeX
    (KaTeX writes it as MathML, TeX and HTML); no slide number, Present
    link or notebook link; the instructor notes apart from the prose; a
    table named by its header row; no drop-down's options in a widget."""
    from lessonbuild.sitediff import read_page

    def page(n):
        (path,) = built_site.glob(f"slides/{n:02d}-*.html")
        return read_page(path.read_text(encoding="utf-8"))

    s23 = page(23)
    assert s23.prose.count(r"\(4 \cdot 512^2\)") == 1, s23.prose
    assert "512 2" not in s23.prose and "⋅" not in s23.prose
    for chrome in ("23 / 55", "Present", "Instructor view", ".ipynb"):
        assert chrome not in s23.prose
    assert "Instructor notes" not in s23.prose
    assert s23.texts["instructor notes"].startswith("Ask:")
    assert list(s23.tables) == ["table (h · d_k · params (d=512))"]
    s16 = page(16)  # a buckets exercise: a drop-down per item
    (words,) = [v for k, v in s16.texts.items() if k.startswith("exercise")]
    assert "Choose a bucket" not in words


def test_the_decks_last_slide_ends_before_its_scripts(built_site):
    """present.html as the lesson builds it: the last slide's part holds
    its own words, not the deck's settings or every slide's notes (their
    JSON came after a line the deck gained, and a note changed on slide
    22 was listed on slide 55 too, as escaped JSON: a contributor's
    check). Each slide's part names its own slide only."""
    from lessonbuild.sitediff import read_site

    units = read_site(built_site)
    parts = {
        url: views["present.html"]
        for url, views in units.items()
        if "present.html" in views
    }
    assert len(parts) == 55
    for url, part in parts.items():
        assert "deck-config" not in part and "deck-notes" not in part, url
        assert "deck-turn" not in part, url
        assert part.count("data-reading=") == 1, url


def test_a_time_edit_lists_its_slide_not_every_later_screen(tmp_path):
    """One slide's "Time:" moves every later screen's "from minute M of
    the T min class" line in the deck: derived, so not a change of theirs."""
    from lessonbuild.sitediff import compare

    def deck(minutes):
        screens = "".join(
            f'<section data-reading="slides/0{n}-x.html"><h2>S{n}</h2>'
            f'<aside class="notes"><p>Time: {m} min</p>'
            f'<p class="deck-pacing">Slide {n} of 2: {m} min, from minute '
            f"{sum(minutes[: n - 1])} of the {sum(minutes)} min class.</p>"
            "</aside></section>"
            for n, m in enumerate(minutes, start=1)
        )
        return (
            f'<div class="reveal"><div class="slides">{screens}'
            '</div></div><script id="deck-config"></script>'
        )

    pages = {
        "slides/01-x.html": "<p>one</p>",
        "slides/02-x.html": "<p>two</p>",
    }
    old, new = _sites(
        tmp_path,
        {**pages, "present.html": deck([3, 2])},
        {**pages, "present.html": deck([4, 2])},
    )
    changes, _ = compare(old, new)
    assert [(c.path, c.views) for c in changes] == [
        ("slides/01-x.html", ["present.html"])
    ]


def test_a_new_last_slide_is_listed_alone_not_every_screen(tmp_path):
    """A slide added at the end makes every page's and every deck
    screen's "N / 2" read "N / 3": derived, so the summary lists the new
    slide and nothing else."""
    from lessonbuild.sitediff import compare

    def deck(count):
        screens = "".join(
            f'<section data-reading="slides/0{n}-x.html"><h2>S{n}</h2>'
            f'<p class="deck-head"><span class="deck-number">{n} / {count}'
            "</span></p></section>"
            for n in range(1, count + 1)
        )
        return (
            f'<div class="reveal"><div class="slides">{screens}'
            '</div></div><script id="deck-config"></script>'
        )

    def pages(count):
        return {
            f"slides/0{n}-x.html": (
                f'<span class="slide-number" aria-label="Slide {n} of '
                f'{count}">{n} / {count}</span><p>slide {n}</p>'
            )
            for n in range(1, count + 1)
        } | {"present.html": deck(count)}

    old, new = _sites(tmp_path, pages(2), pages(3))
    changes, _ = compare(old, new)
    assert [(c.path, c.status) for c in changes] == [
        ("slides/03-x.html", "added")
    ]


def test_an_inserted_slide_shows_its_content_and_the_moves(tmp_path):
    """A slide inserted at 2 renumbers the slides after it: the new one
    is listed with its words; one moved and edited is compared with its
    old self; one only moved is named on one "Renumbered" line, not as
    a removed and an added page."""
    from lessonbuild.sitediff import compare, to_markdown

    def page(n, body):
        return (
            f'<span class="slide-number">{n} / 4</span><h1>S</h1><p>{body}</p>'
        )

    old, new = _sites(
        tmp_path,
        {
            "slides/01-a.html": page(1, "first"),
            "slides/02-b.html": page(2, "see slide 3"),
            "slides/03-c.html": page(3, "last"),
        },
        {
            "slides/01-a.html": page(1, "first"),
            "slides/02-new.html": page(2, "brand new words"),
            "slides/03-b.html": page(3, "see slide 4"),
            "slides/04-c.html": page(4, "last"),
        },
    )
    changes, total = compare(old, new)
    assert total == 4
    summary = to_markdown(changes, total)
    assert [(c.path, c.status) for c in changes] == [
        ("slides/02-new.html", "added"),
        ("slides/03-b.html", "moved from `slides/02-b.html`"),
        ("slides/04-c.html", "moved from `slides/03-c.html`"),
    ]
    assert "S brand new words</ins>" in summary
    assert "slide <del>3</del> <ins>4</ins>" in summary
    assert "| `slides/03-b.html` |" in summary
    assert "| `slides/04-c.html` |" not in summary
    assert "Renumbered, content unchanged (1;" in summary
    assert "removed" not in summary


def test_a_slide_inserted_mid_deck_is_one_row_and_one_line(tmp_path):
    """Each view of a slide carries its number: the deck section
    (data-slide, "Slide N:", ids sN-ex1, its reading link), the page (its
    Present link, its exercises' keys), the notebook (the "N. Title"
    heading, its id, the cells' ids), and every link to it ("slide N").
    An insertion changed them all, and the summary listed ~50 slides (a
    contributor's review). Read at their new numbers, the moved slides
    are one "Renumbered" line; one moved and edited keeps its edit."""
    from lessonbuild.sitediff import compare, to_markdown

    titles = {"a": "Alpha", "b": "Beta", "c": "Gamma", "new": "Fresh"}

    def page(n, name, body):
        return PAGE.format(
            title=titles[name],
            body=f'<a class="slide-present" href="../present.html#/{n}">P'
            f"</a><p>{body}</p>"
            f'<section data-ex-key="lesson81:slides/0{n}-{name}.html:1">'
            "<p>Predict it.</p></section>",
        )

    def deck(order):
        screens = "".join(
            f'<section data-slide="{n}" data-reading="slides/0{n}-{name}.html"'
            f' aria-label="Slide {n}: {titles[name]}"><h1 id="s{n}-{name}">'
            f'{titles[name]}</h1><div id="s{n}-ex1" aria-labelledby='
            f'"s{n}-ex1-for s{n}-ex1-item0"></div><a class="deck-reading" '
            f'href="slides/0{n}-{name}.html">read</a></section>'
            for n, name in enumerate(order, start=1)
        )
        return (
            f'<div class="reveal"><div class="slides">{screens}'
            '</div></div><script id="deck-config"></script>'
        )

    def notebook(order):
        return "".join(
            f'<div class="jp-Cell" id="cell-id=slide-{n}"><h2 id="{n}-'
            f'{name}">{n}. {titles[name]}<a class="anchor-link" href="#{n}-'
            f'{name}">¶</a></h2></div><div id="cell-id=slide-{n}-1"><pre>'
            f"# see slides/0{n}-{name}.html</pre></div>"
            for n, name in enumerate(order, start=1)
        )

    def site(folder, order, bodies):
        pages = {
            f"slides/0{n}-{name}.html": page(n, name, bodies.get(name, name))
            for n, name in enumerate(order, start=1)
        }
        c = order.index("c") + 1
        pages["slides/01-a.html"] = page(
            1, "a", f'see <a href="0{c}-c.html">slide {c}</a>'
        )
        pages["present.html"] = PAGE.format(title="Deck", body=deck(order))
        pages["notebooks/lesson-81.html"] = PAGE.format(
            title="Notebook", body=notebook(order)
        )
        for rel, text in pages.items():
            (tmp_path / folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / folder / rel).write_text(text)
        return tmp_path / folder

    old = site("old", ["a", "b", "c"], {})
    new = site("new", ["a", "new", "b", "c"], {"b": "beta, edited"})
    changes, _ = compare(old, new)
    summary = to_markdown(changes, 4)
    assert [(c.path, c.status) for c in changes] == [
        ("slides/02-new.html", "added"),
        ("slides/03-b.html", "moved from `slides/02-b.html`"),
        ("slides/04-c.html", "moved from `slides/03-c.html`"),
    ], summary
    assert "<del>b</del> <ins>beta, edited</ins>" in summary
    assert "| `slides/04-c.html` |" not in summary
    assert "| `slides/01-a.html` |" not in summary
    assert "Renumbered, content unchanged (1;" in summary


def test_a_redrawn_figure_and_changed_code_are_shown(tmp_path):
    """A figure is compared by its image file and alt text, and a changed
    code block by a line diff (a trial's redrawn figure was not listed)."""
    from lessonbuild.sitediff import compare, to_markdown

    img = '<img src="../figures/f.svg" alt="{alt}">'
    code = (
        '<div class="highlight"><span class="filename">s.py</span>'
        "<pre>{}</pre></div>"
    )
    old, new = _sites(
        tmp_path,
        {
            "slides/01-x.html": img.format(alt="T = 128")
            + code.format("T = 128"),
            "slides/02-y.html": img.format(alt="same"),
        },
        {
            "slides/01-x.html": img.format(alt="T = 256")
            + code.format("T = 256"),
            "slides/02-y.html": img.format(alt="same"),
        },
    )
    for site, drawn in ((old, "<svg>1</svg>"), (new, "<svg>2</svg>")):
        (site / "figures").mkdir()
        (site / "figures" / "f.svg").write_text(drawn)
    changes, _ = compare(old, new)
    # Both pages show the redrawn image; only slide 1's alt text and code
    # changed.
    assert [c.path for c in changes] == [
        "slides/01-x.html",
        "slides/02-y.html",
    ]
    one, two = changes
    assert one.figures == [
        (
            "f.svg",
            "T = <del>128</del> <ins>256</ins> The image itself changed.",
        )
    ]
    assert two.figures == [("f.svg", "The image itself changed.")]
    summary = to_markdown(changes, 2)
    assert "-T = 128\n+T = 256" in summary
    assert "figure `f.svg`" in summary


def test_a_revision_builds_from_copies_of_the_keyed_caches(
    two_revisions, tmp_path, monkeypatch
):
    """The revision's tree starts with copies of this checkout's executed
    homework and notebook conversions (content-keyed: the build makes
    again what differs), and the checkout's own caches are left as they
    were (two builds of the lesson: 28.7 s -> 18.4 s)."""
    from lessonbuild import sitediff

    repo, base, _ = two_revisions
    cached = {}
    for path in sitediff.SHARED_CACHES:
        (repo / path).mkdir(parents=True, exist_ok=True)
        (repo / path / "x.key").write_text(f"key of {path}")
        cached[path] = f"key of {path}"
    seen = {}

    def build_tree(tree, dest, cache, minify):
        for path in sitediff.SHARED_CACHES:
            seen[path] = (tree / path / "x.key").read_text()
            (tree / path / "x.key").write_text("made again")
        dest.mkdir(parents=True)

    monkeypatch.setattr(sitediff, "build_tree", build_tree)
    try:
        sitediff.build_revision(
            repo, base, tmp_path / "builds", tmp_path, minify=True
        )
        assert seen == cached
        for path in sitediff.SHARED_CACHES:
            assert (repo / path / "x.key").read_text() == cached[path]
    finally:  # the module's repository, as the other tests left it
        for path in sitediff.SHARED_CACHES:
            (repo / path / "x.key").unlink()


def test_its_own_builds_are_unminified_and_a_given_site_is_matched(
    two_revisions, tmp_path, monkeypatch
):
    """Both builds site-diff makes skip the HTML minifier (a quarter of
    a warm lesson build; nobody reads them); against a given site, the
    published build, the base is minified as that site is. Each kind is
    kept under its own name, as their markup differs everywhere."""
    from lessonbuild import sitediff

    repo, base, _ = two_revisions
    made = []

    def build_tree(tree, dest, cache, minify):
        made.append(minify)
        dest.mkdir(parents=True)
        (dest / "index.html").write_text(PAGE.format(title="Home", body=""))

    monkeypatch.setattr(sitediff, "build_tree", build_tree)
    builds = tmp_path / "builds"
    plain = sitediff.build_revision(repo, base, builds, tmp_path, False)
    published = sitediff.build_revision(repo, base, builds, tmp_path, True)
    assert (plain.name, published.name) == (f"{base}-plain", base)
    assert made == [False, True]

    asked = []

    def build_revision(repo, rev, builds, cache, minify):
        asked.append((rev, minify))
        return published

    monkeypatch.setattr(sitediff, "build_revision", build_revision)
    made.clear()
    assert sitediff.main(["--base", base, "--repo", str(repo)]) == 0
    # The tree: built where it is, or as its HEAD when it is clean.
    assert asked[0] == (base, False)
    assert asked[1:] + made in ([("HEAD", False)], [False])
    asked.clear()
    argv = ["--base", base, "--head-site", str(plain), "--repo", str(repo)]
    assert sitediff.main(argv) == 0
    assert asked == [(base, True)]


@pytest.mark.parametrize(
    "plugin, option, variable",
    [
        ("minify", "minify_html", "MINIFY_ENV"),
        ("search", "enabled", "SEARCH_ENV"),
    ],
)
def test_the_lessons_switches_are_the_ones_site_diff_sets(
    monkeypatch, plugin, option, variable
):
    """mkdocs.yml reads the HTML minifier's and the search index's
    switches from the variables site-diff sets (MkDocs' own loader,
    ``!ENV`` tags and all): on by default, off when set to false."""
    from mkdocs.utils import yaml_load

    from lessonbuild import sitediff

    def value() -> object:
        text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
        plugins = yaml_load(text)["plugins"]
        (options,) = [p[plugin] for p in plugins if plugin in p]
        return options[option]

    name = getattr(sitediff, variable)
    monkeypatch.delenv(name, raising=False)
    assert value() is True
    monkeypatch.setenv(name, "false")
    assert value() is False


def test_a_base_from_before_the_switch_is_matched_minified(
    tmp_path, monkeypatch
):
    """A base whose mkdocs.yml always minified (from before the
    switch): both sides are built minified, or every page would differ
    in markup alone."""
    from lessonbuild import sitediff

    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "test@example.invalid")
    _git(repo, "config", "user.name", "test")
    old = "plugins:\n  - minify:\n      minify_html: true\n"
    base = _commit(repo, {"mkdocs.yml": old}, "before the switch")
    (repo / "mkdocs.yml").write_text(MKDOCS_YML)  # the tree has it
    assert not sitediff._reads_minify_switch(repo, base)
    assert sitediff._reads_minify_switch(repo, None)
    asked, made = [], []
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(PAGE.format(title="Home", body=""))

    def build_revision(repo, rev, builds, cache, minify):
        asked.append((rev, minify))
        return site

    def build_tree(tree, dest, cache, minify):
        made.append(minify)
        shutil.copytree(site, dest)

    monkeypatch.setattr(sitediff, "build_revision", build_revision)
    monkeypatch.setattr(sitediff, "build_tree", build_tree)
    assert sitediff.main(["--base", base, "--repo", str(repo)]) == 0
    assert (asked, made) == ([(base, True)], [True])


def test_a_bad_revision_or_folder_is_a_message_not_a_diff(tmp_path, capsys):
    """A revision git does not know, a folder outside git, and a site
    folder that is no build: each a one-line reason and exit 2 (the
    first two were tracebacks; the missing folder compared as a site
    with no page, every page "removed", and exited 0)."""
    from lessonbuild.sitediff import main

    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    built = tmp_path / "built"
    built.mkdir()
    (built / "index.html").write_text("<html></html>")
    cases = {
        "needed a single revision": ["--base", "nosuch", "--repo", str(repo)],
        "not a git repository": ["--base", "main", "--repo", str(tmp_path)],
        "not a built site": [str(built), str(tmp_path / "nope")],
    }
    for words, argv in cases.items():
        try:
            status = main(argv)
        except SystemExit as usage:  # argparse's error: exit status 2
            status = usage.code
        out, err = capsys.readouterr()
        assert status == 2, argv
        assert words in err.lower(), err
        assert "Traceback" not in err and "Site diff" not in out


def test_a_change_only_the_deck_shows_is_shown_in_words(tmp_path):
    """A paragraph made reading-only leaves the deck and keeps the page's
    words: the row said "—" and nothing below it told what the class no
    longer sees (a contributor's review)."""
    from lessonbuild.sitediff import compare, to_markdown

    def deck(body):
        return (
            '<div class="reveal"><div class="slides"><section data-reading='
            f'"slides/01-x.html"><h2>S</h2>{body}</section></div></div>'
            '<script id="deck-config"></script>'
        )

    words = "<p>Consecutive rows walk the features.</p>"
    old, new = _sites(
        tmp_path,
        {"slides/01-x.html": words, "present.html": deck(words)},
        {
            "slides/01-x.html": f'<div class="reading">{words}</div>',
            "present.html": deck(""),
        },
    )
    changes, total = compare(old, new)
    summary = to_markdown(changes, total)
    assert [(c.path, c.views) for c in changes] == [
        ("slides/01-x.html", ["present.html"])
    ], summary
    assert "what present.html shows" in summary
    assert "<del>Consecutive rows walk the features.</del>" in summary


def test_a_changed_variant_of_an_exercise_is_shown_as_a_table(tmp_path):
    """The numbers an exercise's "Try another" draws live in its spec, not
    its text: a variants list edited in a snippet changed nothing a
    reviewer could see (a contributor's review)."""
    import json

    from lessonbuild.sitediff import compare, to_markdown

    def page(second):
        spec = {"vars": [{"d_model": "512", "h": "16"}, second]}
        return (
            f"<section class='exercise' data-ex-spec='{json.dumps(spec)}'>"
            "<p>How many parameters?</p></section>"
        )

    old, new = _sites(
        tmp_path,
        {"slides/01-x.html": page({"d_model": "640", "h": "10"})},
        {"slides/01-x.html": page({"d_model": "480", "h": "10"})},
    )
    changes, total = compare(old, new)
    summary = to_markdown(changes, total)
    assert [c.path for c in changes] == ["slides/01-x.html"], summary
    assert "variants of exercise 1" in summary
    assert "| − | 640 | 10 |" in summary and "| + | 480 | 10 |" in summary
    assert "**Exercise 1**" not in summary  # its words did not change


def test_a_wrong_answers_explanation_is_the_exercises_words(tmp_path):
    """A fill-in's explanation of a wrong answer waits in a <template>
    (which BeautifulSoup leaves out of a tag's text): a contributor's
    new one showed only as the deck's exercise JSON, word by word."""
    import json

    from lessonbuild.sitediff import compare, to_markdown

    def page(whys):
        templates = "".join(f"<template><p>{w}</p></template>" for w in whys)
        spec = json.dumps({"cells": [{"wrong": len(whys)}]})
        return (
            f"<section class='exercise' data-ex-spec='{spec}'>"
            f"<p>How many?</p>{templates}</section>"
        )

    def deck(body):
        return (
            '<div class="reveal"><div class="slides"><section data-reading='
            f'"slides/01-x.html"><h2>S</h2>{body}</section></div></div>'
            '<script id="deck-config"></script>'
        )

    before, after = (
        ["That multiplies by h."],
        ["That multiplies by h.", "Only the weights split."],
    )
    old, new = _sites(
        tmp_path,
        {"slides/01-x.html": page(before), "present.html": deck(page(before))},
        {"slides/01-x.html": page(after), "present.html": deck(page(after))},
    )
    changes, total = compare(old, new)
    summary = to_markdown(changes, total)
    assert "**Exercise 1**" in summary, summary
    assert "<ins>Only the weights split.</ins>" in summary, summary
    assert "what present.html shows" not in summary, summary
    assert '"cells"' not in summary, summary


def test_a_table_whose_header_changed_is_one_table_before_and_after(
    tmp_path,
):
    """Its label is its header: "params (d=512)" made "(d=256)" read as
    one table removed and another added (a contributor's review)."""
    from lessonbuild.sitediff import compare, to_markdown

    def table(d, count):
        return (
            "<p>Counts.</p><table><tr><th>h</th><th>x</th></tr>"
            "<tr><td>1</td><td>0</td></tr></table>"
            f"<table><tr><th>h</th><th>params (d={d})</th></tr>"
            f"<tr><td>8</td><td>{count}</td></tr></table>"
        )

    old, new = _sites(
        tmp_path,
        {"slides/01-x.html": table(512, "1,048,576")},
        {"slides/01-x.html": table(256, "262,144")},
    )
    changes, total = compare(old, new)
    (change,) = changes
    assert len(change.tables) == 1, change.tables
    summary = to_markdown(changes, total)
    assert "**Before**" in summary and "**After**" in summary, summary
    assert "| + | 8 | 262,144 |" in summary, summary
    assert "removed" not in summary, summary
