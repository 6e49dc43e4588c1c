"""``mkdocs serve --dirty`` (``make serve``): a rebuild renders only the
pages an edit changed, and the site it leaves is the one a clean build
writes, byte for byte."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.lesson_site import REPO, build, copy_lesson
from tests.test_same_site import differing

EDITED = "slides/03-what-survived-from-scaled-dot-product.md"
SNIPPET = "snippets/15_trace.py"


def page_of(uri: str) -> str:
    return uri.rsplit(".", 1)[0] + ".html"  # use_directory_urls: false


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.fixture
def serve(tmp_path, monkeypatch, request):
    """A copy of the lesson and ``rebuild()``: one build as ``mkdocs
    serve --dirty`` runs it, the plugins kept across rebuilds. With the
    param True, the copy's executed homework is stale (made from another
    source): the first build runs it again while the pages render."""
    from mkdocs.commands.build import build as mkdocs_build
    from mkdocs.config import load_config

    from lessonbuild.notebooks import OUT_DIR
    from lessonbuild.settings import CACHE_ENV

    root = copy_lesson(tmp_path)
    if getattr(request, "param", False):
        for stamp in (root / OUT_DIR).rglob("*.key"):
            stamp.write_text("stale")
            executed = stamp.with_suffix(".ipynb")
            executed.write_text(executed.read_text() + "\n")  # other bytes
    monkeypatch.setenv(CACHE_ENV, str(REPO / ".cache" / "engine"))
    monkeypatch.setenv("NO_MKDOCS_2_WARNING", "1")
    monkeypatch.chdir(root)
    site = tmp_path / "served"
    warnings = []

    class Count(logging.Handler):
        def emit(self, record):
            if record.levelno >= logging.WARNING:
                warnings.append(record.getMessage())

    handler = Count()
    logging.getLogger("mkdocs").addHandler(handler)
    first = load_config(str(root / "mkdocs.yml"), site_dir=str(site))
    first.plugins.on_startup(command="serve", dirty=True)

    def rebuild(config=None) -> set[str]:
        """One rebuild; the pages MkDocs rendered (src_uris: those whose
        on_page_context ran)."""
        config = config or load_config(
            str(root / "mkdocs.yml"), site_dir=str(site)
        )
        mkdocs_build(config, serve_url="", dirty=True)  # strict: true
        return set(first.plugins["lesson"].build.rebuild.rendered)

    rebuild.root, rebuild.site, rebuild.warnings = root, site, warnings
    # What `mkdocs serve` watches (on_serve), to be asked for a rebuild.
    plugin = first.plugins["lesson"]
    rebuild.trigger = plugin.build.trigger = tmp_path / "asked" / "now"
    try:
        rebuild(first)
        yield rebuild
    finally:
        first.plugins.on_shutdown()
        logging.getLogger("mkdocs").removeHandler(handler)


def clean_build(root: Path, dest: Path) -> Path:
    done = build(root, "-q", "-d", str(dest))
    assert done.returncode == 0, done.stderr[-3000:]
    return dest


def test_an_edit_renders_its_pages_and_leaves_a_clean_builds_site(
    serve, tmp_path
):
    root, site = serve.root, serve.site
    assert not serve.warnings  # not even MkDocs' "dirty build" warning

    # Prose on one slide: that page alone.
    edit(root / "docs" / EDITED, "what was the main idea", "the main idea")
    assert serve() == {EDITED}
    assert "the main idea" in (site / page_of(EDITED)).read_text()

    # A comment in a snippet's shown part: the slides that include it,
    # and the deck notebook, which shows that code.
    show = "# --8<-- [start:show]\n"
    edit(root / SNIPPET, show, show + "# touched\n")
    including = {
        p.relative_to(root / "docs").as_posix()
        for p in (root / "docs" / "slides").glob("*.md")
        if SNIPPET in p.read_text(encoding="utf-8")
    }
    assert including
    # The deck notebook shows the code too, but converting it takes
    # seconds: this rebuild keeps its last render and asks serve for
    # one more rebuild, which renders it.
    notebook = "notebooks/lesson-81.ipynb"
    assert not serve.trigger.exists()
    assert serve() == including
    assert "touched" not in (site / page_of(notebook)).read_text()
    assert serve.trigger.is_file()  # the rebuild asked for
    assert serve() == {notebook}
    assert "touched" in (site / page_of(notebook)).read_text()

    # The search index too: every page's entries, in order.
    assert differing(site, clean_build(root, tmp_path / "clean-1")) == []
    assert not serve.warnings

    # A page deleted: its HTML goes too.
    extra = root / "docs" / "extra.md"
    extra.write_text("# An extra page\n\nFor a moment.\n", encoding="utf-8")
    assert "extra.md" in serve()  # and every page, whose nav lists it
    assert (site / "extra.html").is_file()
    extra.unlink()
    serve()
    assert not (site / "extra.html").exists()


def test_a_save_while_pages_render_waits_for_the_next_rebuild(
    serve, monkeypatch
):
    """A slide saved after MkDocs read the pages and before it renders
    them (an editor's second save, a git checkout): MkDocs asks the file
    again, finds it newer than its kept page and renders a page it never
    read (a TypeError in the search plugin, and every page rendered
    again). The rebuild keeps the last render; the next renders the edit."""
    import os
    import time

    from lessonbuild.build import Build

    path = serve.root / "docs" / EDITED
    env, saved = Build.env, []

    def env_then_save(self, *args, **kwargs):
        env(self, *args, **kwargs)  # every page read, none rendered yet
        if not saved:
            saved.append(path)
            edit(path, "what was the main idea", "the main idea")
            later = time.time() + 5  # newer than any page written now
            os.utime(path, (later, later))

    monkeypatch.setattr(Build, "env", env_then_save)
    assert serve() == set()  # raised a TypeError
    assert saved
    assert serve() == {EDITED}
    assert "the main idea" in (serve.site / page_of(EDITED)).read_text()


@pytest.mark.parametrize("serve", [True], indirect=True)
def test_homework_run_by_the_first_build_is_not_rendered_again(serve):
    """The first build ran the homework: its notebooks were written after
    the rebuild planned its pages. An edit then renders its own page and
    asks for no further rebuild (the notebooks did not change since)."""
    edit(serve.root / "docs" / EDITED, "what was the main idea", "the idea")
    assert serve() == {EDITED}
    assert not serve.trigger.exists()
    assert serve() == set()


def test_a_new_title_renders_every_page_and_a_failure_shows_on_all(
    serve, tmp_path
):
    root, site = serve.root, serve.site
    # Every page's nav shows every title.
    slide = root / "docs" / EDITED
    title = next(
        line
        for line in slide.read_text(encoding="utf-8").split("\n")
        if line.startswith("title:")
    )
    edit(slide, title, 'title: "Renamed slide"')
    heading = "# " + title.removeprefix("title:").strip().strip('"')
    edit(slide, heading + "\n", "# Renamed slide\n")  # the two agree
    slides = {
        p.relative_to(root / "docs").as_posix()
        for p in (root / "docs" / "slides").glob("*.md")
    }
    assert slides <= serve()
    clean = clean_build(root, tmp_path / "clean")
    assert differing(site, clean) == []
    others = slides - {EDITED}
    assert any(
        "Renamed slide" in (site / page_of(p)).read_text() for p in others
    )

    # A drifted Output block: serve shows the problems on every page,
    # those the edit did not touch too.
    slide = next(
        p
        for p in sorted((root / "docs" / "slides").glob("*.md"))
        if 'title="Output"' in p.read_text(encoding="utf-8")
    )
    good = slide.read_text(encoding="utf-8")
    lines = good.split("\n")
    at = next(i for i, line in enumerate(lines) if 'title="Output"' in line)
    lines[at + 1] = "drifted " + lines[at + 1]
    slide.write_text("\n".join(lines), encoding="utf-8")
    serve()
    for page in (site / "slides").glob("*.html"):
        assert "The build failed" in page.read_text(), page

    # Fixed: the lesson is back on every page, as a clean build has it.
    slide.write_text(good, encoding="utf-8")
    serve()
    assert differing(site, clean) == []


@pytest.mark.parametrize(
    ("command", "dirty"), [("serve", False), ("build", True)]
)
def test_only_serve_dirty_skips_pages(command, dirty):
    """Plain ``mkdocs serve`` renders every page (MkDocs cleans the site
    first); so does ``mkdocs build --dirty``, which has no earlier
    render to keep."""
    from lessonbuild.plugin import LessonPlugin

    plugin = LessonPlugin()
    plugin.on_startup(command=command, dirty=dirty)
    assert plugin.build.rebuild is None
