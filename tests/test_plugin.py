"""The lesson plugin in real builds: nav from front matter, one reader."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys

import pytest

from tests.lesson_site import build, copy_lesson

NEW_SLIDE = """\
---
title: "One more thing"
slide: 56
kind: Recap
part: "Closing"
---

# One more thing
"""


@pytest.fixture(scope="module")
def built_with_new_slide(tmp_path_factory):
    """One real build of a lesson copy with a slide 56 added, watched by
    an audit hook that records every open() of a slide: (root, reads)."""
    root = copy_lesson(tmp_path_factory.mktemp("new-slide"))
    (root / "docs" / "slides" / "56-one-more-thing.md").write_text(
        NEW_SLIDE, encoding="utf-8"
    )
    result = build(root, code=READ_COUNTER)
    assert result.returncode == 0, result.stderr
    return root, json.loads(result.stdout.strip().splitlines()[-1])


def test_a_new_slide_appears_in_its_part_without_editing_mkdocs_yml(
    built_with_new_slide,
):
    """docs/slides/56-x.md shows up in the nav, in Closing, numbered /56."""
    root, _ = built_with_new_slide
    page = (root / "site" / "slides" / "56-one-more-thing.html").read_text()
    # Material's sidebar: the open section is the Closing part, and its
    # list of slides ends with the new one.
    section = re.search(
        r'<nav class="md-nav" data-md-level="1" aria-labelledby="[^"]+" '
        r'aria-expanded="true">\s*<label class="md-nav__title"[^>]*>'
        r"\s*<span[^>]*></span>\s*(?P<part>[^<]+?)\s*</label>"
        r"(?P<list>.*?)</nav>",
        page,
        re.S,
    )
    assert section and section["part"] == "Closing"
    links = re.findall(r'href="([^"]+\.html)"', section["list"])
    assert links[-1] == "56-one-more-thing.html"
    assert links[0] == "53-show-it-off.html"
    assert "Slide 56 of 56" in page


def test_a_bad_slide_stops_the_build_at_its_line(tmp_path):
    """A wrong kind aborts the build naming file and line; no site left."""
    root = copy_lesson(tmp_path)
    slide = root / "docs" / "slides" / "01-multi-head-attention.md"
    slide.write_text(
        slide.read_text().replace("kind: Title", "kind: Lecture", 1)
    )
    result = build(root)
    assert result.returncode != 0
    assert re.search(
        r"docs/slides/01-multi-head-attention\.md:\d+: kind: 'Lecture'",
        result.stderr,
    )
    assert not (root / "site").exists()


READ_COUNTER = """\
import json, sys
from collections import Counter
from pathlib import Path

slides = str(Path("docs/slides").resolve())
readers = Counter()

def hook(event, args):
    if event == "open" and isinstance(args[0], str) and (
        args[0].startswith(slides) or args[0].startswith("docs/slides")
    ) and args[0].endswith(".md"):
        frame, stack = sys._getframe(1), []
        while frame is not None:
            stack.append(frame.f_code.co_filename)
            frame = frame.f_back
        ours = [f for f in stack if "lessonbuild" in f]
        who = ours[0] if ours else stack[0]
        readers[(Path(args[0]).name, who)] += 1

sys.addaudithook(hook)
from mkdocs.__main__ import cli
try:
    cli(["build", "--strict", "-q"])
except SystemExit as exc:
    assert not exc.code, exc.code
print(json.dumps([[n, w, c] for (n, w), c in readers.items()]))
"""


def test_slide_files_are_read_once_by_the_deck_module(built_with_new_slide):
    """An audit hook sees every open() of a slide during a real build."""
    root, reads = built_with_new_slide
    slides = sorted((root / "docs" / "slides").glob("*.md"))
    assert len(slides) == 56
    assert len(reads) == len(slides)
    assert {who.rsplit("/", 1)[-1] for _, who, _ in reads} == {"deck.py"}
    assert {count for _, _, count in reads} == {1}


def test_a_serve_rebuild_renders_again_only_the_exercises_an_edit_changed(
    tmp_path, monkeypatch
):
    """The plugin (kept across serve rebuilds) reuses each page's rendered
    exercises when nothing they render from changed, and renders the
    edited page again."""
    from mkdocs.config import load_config

    from lessonbuild.settings import CACHE_ENV
    from tests.lesson_site import REPO

    root = copy_lesson(tmp_path)
    # The project's run cache: the copy's snippets are the same files.
    monkeypatch.setenv(CACHE_ENV, str(REPO / ".cache" / "engine"))
    monkeypatch.setenv("NO_MKDOCS_2_WARNING", "1")
    first = load_config(str(root / "mkdocs.yml"))
    plugin = first.plugins["lesson"]
    plugin.on_startup(command="serve", dirty=False)
    build = plugin.build
    edited = "slides/03-what-survived-from-scaled-dot-product.md"
    try:
        plugin.on_config(first)
        before = dict(build.widgets)
        assert before[edited]  # the page has an exercise
        slide = root / "docs" / edited
        slide.write_text(
            slide.read_text(encoding="utf-8").replace(
                "what was the main idea", "what was the central idea", 1
            ),
            encoding="utf-8",
        )
        plugin.on_config(load_config(str(root / "mkdocs.yml")))
        after = build.widgets
    finally:
        plugin.on_shutdown()
    assert "central idea" in "".join(after[edited].values())
    assert "central idea" not in "".join(before[edited].values())
    others = [uri for uri in before if uri != edited and before[uri]]
    assert others
    for uri in others:
        assert after[uri] is before[uri], f"{uri} was rendered again"


def test_a_save_during_a_rebuild_that_ran_nothing_is_not_blamed_on_snippets(
    tmp_path, monkeypatch
):
    """Under serve, an editor saving a slide while a fully cached rebuild
    reads the pages is the next rebuild's edit: no snippet ran, so none
    is blamed for it (the guard compares only around code that ran)."""
    from mkdocs.config import load_config

    from lessonbuild import build as build_module
    from lessonbuild.settings import CACHE_ENV
    from tests.lesson_site import REPO

    root = copy_lesson(tmp_path)
    monkeypatch.setenv(CACHE_ENV, str(REPO / ".cache" / "engine"))
    monkeypatch.setenv("NO_MKDOCS_2_WARNING", "1")
    saved = "docs/slides/03-what-survived-from-scaled-dot-product.md"
    real = build_module.fingerprint
    calls = []

    def saved_meanwhile(where):
        found = real(where)
        calls.append(saved)
        if len(calls) > 1:  # after the pages were read: the editor saved
            found[saved] = "saved by the editor"
        return found

    monkeypatch.setattr(build_module, "fingerprint", saved_meanwhile)
    config = load_config(str(root / "mkdocs.yml"))
    plugin = config.plugins["lesson"]
    plugin.on_startup(command="serve", dirty=False)
    try:
        plugin.on_config(config)
        assert plugin.build.result.ran == 0  # every snippet was cached
        assert plugin.build.failure is None, plugin.build.failure
    finally:
        plugin.on_shutdown()


@pytest.mark.parametrize(
    ("block", "name", "expected"),
    [
        ({"snippet_timeout": "soon"}, "snippet_timeout", "expected float"),
        ({"parts": ["A", 2]}, "parts", "expected a list of str"),
        ({"output_max_lines": 0}, "output_max_lines", "positive whole"),
        ({"colour": "red"}, "colour", "unknown setting"),
    ],
)
def test_the_plugin_and_the_cli_refuse_a_bad_setting_alike(
    tmp_path, block, name, expected
):
    """One schema (settings.Settings): MkDocs reports the plugin's error
    against the setting; the CLI's reader raises the same message."""
    import yaml

    from lessonbuild.plugin import LessonPlugin
    from lessonbuild.settings import SettingsError, read_settings

    errors, _ = LessonPlugin().load_config(block)
    assert [key for key, _ in errors] == [name]
    assert expected in str(errors[0][1])
    config = {"site_name": "x", "plugins": [{"lesson": block}]}
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    with pytest.raises(SettingsError, match=expected) as raised:
        read_settings(tmp_path)
    assert str(raised.value) == str(errors[0][1])


def test_settings_defaults_and_help_come_from_one_definition():
    from lessonbuild.settings import Settings

    assert Settings.from_mapping({}) == Settings()
    assert Settings.from_mapping({"snippet_timeout": 5}).timeout() == 5.0
    assert "seconds" in Settings.help("snippet_timeout")


def test_serve_on_an_address_in_use_says_so_before_building(tmp_path):
    """A second ``make serve`` built for 22 s, then died with MkDocs'
    traceback ("Address already in use") and no word of PORT=. The
    address is tried first: one line naming it and the way out."""
    root = copy_lesson(tmp_path)
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "mkdocs", "serve", "--dirty"]
            + ["-a", f"127.0.0.1:{port}"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=300,
        )
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert f"cannot serve on 127.0.0.1:{port}: Address already in use" in out
    assert f"make serve PORT={port + 1}" in out, out
    assert "Traceback" not in out, out
    assert "Documentation built" not in out, out
