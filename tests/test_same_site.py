"""A change that claims to leave the site as it was (a refactor of the
machinery) proves it: this builds a base revision and this tree, each
from a clean state, and compares every file, byte for byte.

Opt-in, since most changes do change the site::

    LESSON_SAME_SITE_BASE=main pytest tests/test_same_site.py

The base must build with this checkout's environment (the plugins its
mkdocs.yml names installed). Both builds share one run cache (its keys
hash every input) and one build date (``SOURCE_DATE_EPOCH``: the
sitemap's dates).
"""

from __future__ import annotations

import filecmp
import os
import shutil
from pathlib import Path

import pytest

from lessonbuild.sitediff import build_revision, build_tree
from tests.lesson_site import REPO

BASE = os.environ.get("LESSON_SAME_SITE_BASE")


def differing(a: Path, b: Path) -> list[str]:
    """Every file that differs, or is in one site only."""
    files = {p.relative_to(a) for p in a.rglob("*") if p.is_file()}
    files |= {p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    return [
        rel.as_posix()
        for rel in sorted(files)
        if not ((a / rel).is_file() and (b / rel).is_file())
        or not filecmp.cmp(a / rel, b / rel, shallow=False)
    ]


def test_differing_finds_a_changed_a_missing_and_an_extra_file(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for site in (a, b):
        (site / "sub").mkdir(parents=True)
        (site / "same.html").write_text("same")
    (a / "sub" / "page.html").write_text("old")
    (b / "sub" / "page.html").write_text("new")
    (a / "gone.html").write_text("x")
    (b / "new.html").write_text("x")
    assert differing(a, b) == ["gone.html", "new.html", "sub/page.html"]


@pytest.mark.skipif(BASE is None, reason="set LESSON_SAME_SITE_BASE=<rev>")
def test_the_site_is_byte_identical_to_the_base(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    cache = tmp_path / "cache"
    if (REPO / ".cache" / "engine").is_dir():  # warm: the project's runs
        shutil.copytree(REPO / ".cache" / "engine", cache)
    base = build_revision(REPO, BASE, tmp_path / "builds", cache, True)
    build_tree(REPO, tmp_path / "head", cache, minify=True)
    files = sum(1 for p in (tmp_path / "head").rglob("*") if p.is_file())
    assert files > 100
    # build_revision marks a finished build with a file of its own.
    (base / ".complete").unlink()
    assert differing(base, tmp_path / "head") == []
