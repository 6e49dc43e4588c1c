"""MkDocs adapter for lessonbuild.slides: stop the build on a malformed deck.

Runs before any page is rendered, so a wrong kind, part, number, gap or
duplicate is reported with its file, all problems together, and no page of
a broken deck is written.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.exceptions import PluginError

from lessonbuild.slides import load_deck


def on_files(files, config):
    slide_dir = Path(config["docs_dir"]) / "slides"
    if not slide_dir.is_dir():
        return files
    _, problems = load_deck(slide_dir)
    if problems:
        root = Path(config["config_file_path"]).parent
        lines = [p.replace(f"{root}/", "") for p in problems]
        raise PluginError(
            "the deck's front matter has problems:\n  " + "\n  ".join(lines)
        )
    return files
