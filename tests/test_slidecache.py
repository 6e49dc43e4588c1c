"""lessonbuild.slidecache: a slide is parsed again only when it changed."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lessonbuild import deck as deck_mod
from lessonbuild.deck import read_deck
from lessonbuild.slidecache import SlideCache

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def site(tmp_path):
    """The lesson's docs/ (a real deck of 56 pages), copied."""
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    return tmp_path


@pytest.fixture
def parses(monkeypatch):
    """The rel path of every slide parsed from its text."""
    seen = []
    real = deck_mod.parse_slide

    def counting(rel, *args, **kwargs):
        seen.append(rel)
        return real(rel, *args, **kwargs)

    monkeypatch.setattr(deck_mod, "parse_slide", counting)
    return seen


def test_an_unchanged_deck_is_read_from_the_file_without_parsing(site, parses):
    plain = read_deck(site)
    n = len(parses)
    file = site / "cache" / "slides.pickle"
    first = read_deck(site, cache=SlideCache(file))
    assert len(parses) == 2 * n and file.is_file()
    again = read_deck(site, cache=SlideCache(file))  # a new process
    assert len(parses) == 2 * n  # nothing parsed
    assert again.pages == first.pages == plain.pages
    assert again.problems == plain.problems


def test_an_edited_slide_alone_is_parsed_again(site, parses):
    cache = SlideCache(site / "slides.pickle")
    read_deck(site, cache=cache)
    slide = sorted((site / "docs" / "slides").glob("*.md"))[4]
    slide.write_text(slide.read_text().replace("title:", "title: Edited", 1))
    parses.clear()
    deck = read_deck(site, cache=cache)
    rel = slide.relative_to(site).as_posix()
    assert parses == [rel]
    assert deck.page(rel).meta["title"].startswith("Edited")


def test_problems_come_back_from_the_cache_at_their_lines(site, parses):
    slide = sorted((site / "docs" / "slides").glob("*.md"))[2]
    slide.write_text(slide.read_text().replace("kind:", "kind: Nonsense #", 1))
    plain = read_deck(site).problems
    assert any("kind" in p.message for p in plain)
    file = site / "slides.pickle"
    read_deck(site, cache=SlideCache(file))
    parses.clear()
    cached = read_deck(site, cache=SlideCache(file)).problems
    assert parses == [] and cached == plain


def test_a_caller_cannot_change_the_cached_parse(site):
    cache = SlideCache(site / "slides.pickle")
    deck = read_deck(site, cache=cache)
    i = next(i for i, s in enumerate(deck.slides) if s.fences)
    deck.slides[i].meta["title"] = "changed by a caller"
    deck.slides[i].fences.clear()
    again = read_deck(site, cache=cache)
    assert again.slides[i].meta["title"] != "changed by a caller"
    assert again.slides[i].fences


def test_a_deleted_slide_leaves_the_file(site):
    file = site / "slides.pickle"
    read_deck(site, cache=SlideCache(file))
    before = len(pickle.loads(file.read_bytes()))
    victim = sorted((site / "docs" / "slides").glob("*.md"))[-1]
    victim.unlink()
    read_deck(site, cache=SlideCache(file))
    assert len(pickle.loads(file.read_bytes())) == before - 1


@pytest.mark.parametrize(
    "content",
    [b"", b"not a pickle", pickle.dumps([1, 2]), pickle.dumps({b"k": 3})],
)
def test_a_damaged_file_is_a_miss(site, parses, content):
    file = site / "slides.pickle"
    file.write_bytes(content)
    deck = read_deck(site, cache=SlideCache(file))
    assert deck.pages == read_deck(site).pages
    assert len(parses) == 2 * len(deck.pages)


class _Planted:
    """Unpickling this runs a command: what a planted cache file could
    try."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_planted_file_runs_no_code(site, tmp_path):
    marker = tmp_path / "ran"
    file = site / "slides.pickle"
    read_deck(site, cache=SlideCache(file))
    entries = pickle.loads(file.read_bytes())
    # As the whole file, and as one slide's entry.
    for planted in (
        pickle.dumps(_Planted(marker)),
        pickle.dumps({k: pickle.dumps(_Planted(marker)) for k in entries}),
    ):
        file.write_bytes(planted)
        deck = read_deck(site, cache=SlideCache(file))
        assert not marker.exists()
        assert deck.pages == read_deck(site).pages


def test_an_unwritable_cache_only_costs_a_parse(site):
    blocker = site / "blocker"
    blocker.write_text("a file where the cache folder would be")
    deck = read_deck(site, cache=SlideCache(blocker / "slides.pickle"))
    assert deck.pages == read_deck(site).pages


def test_a_second_check_imports_no_markdown_parser(site):
    """The CLI reads unchanged slides from the cache file. (The copied
    deck has no snippets/: each check reports them missing, and runs
    nothing.)"""
    args = ["check", "--root", str(site), "--cache-dir", str(site / "c")]
    probe = (
        "import sys\n"
        "from lessonbuild.cli import main\n"
        f"code = main({args!r})\n"
        "print('PARSED', code, 'markdown_it' in sys.modules)\n"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", probe],
            capture_output=True,
            text=True,
            cwd=site,
        )
        for _ in range(2)
    ]
    first, second = (run.stdout + run.stderr for run in runs)
    assert "PARSED 1 True" in first, first  # missing snippets: exit 1
    assert "PARSED 1 False" in second, second
    assert second.count("snippet") == first.count("snippet")
