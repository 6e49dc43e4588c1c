"""lessonbuild.themeenv: the theme's environments list the same static
files as MkDocs' own, and see a new override at once."""

from __future__ import annotations

import jinja2
from mkdocs.config import load_config
from mkdocs.structure.files import Files

from lessonbuild import themeenv
from tests.lesson_site import copy_lesson


def theme_files(config) -> list[tuple[str, str]]:
    """What MkDocs adds from the theme: (path, folder it came from)."""
    files = Files([])
    files.add_files_from_theme(config.theme.get_env(), config)
    return sorted((f.src_uri, f.abs_src_path) for f in files)


def test_the_theme_files_are_mkdocs_own_and_a_new_override_shows(tmp_path):
    root = copy_lesson(tmp_path)
    (root / "overrides").unlink()  # a folder of its own, to add to
    custom = root / "overrides"
    custom.mkdir()
    (custom / "main.html").write_text('{% extends "base.html" %}\n')
    plain = load_config(str(root / "mkdocs.yml"))
    expected = theme_files(plain)

    listings: dict = {}
    kept = load_config(str(root / "mkdocs.yml"))
    themeenv.keep(kept, tmp_path / "compiled", listings)
    assert theme_files(kept) == expected
    assert listings  # the installed theme, listed once

    # A static file added to the project's overrides while serving.
    (custom / "extra.css").write_text("body { color: black }\n")
    again = load_config(str(root / "mkdocs.yml"))
    themeenv.keep(again, tmp_path / "compiled", listings)
    added = dict(theme_files(again))
    assert added["extra.css"] == str(custom / "extra.css")
    assert theme_files(again) == theme_files(
        load_config(str(root / "mkdocs.yml"))
    )


def test_templates_are_compiled_once_into_the_folder(tmp_path):
    root = copy_lesson(tmp_path)
    config = load_config(str(root / "mkdocs.yml"))
    themeenv.keep(config, tmp_path / "compiled", {})
    env = config.theme.get_env()
    assert isinstance(env.bytecode_cache, jinja2.FileSystemBytecodeCache)
    env.get_template("main.html")
    assert any((tmp_path / "compiled").iterdir())
