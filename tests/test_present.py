"""The deck (present.html): what lessonbuild.present makes of the pages.

The first tests feed present.py small rendered pages; the rest read the
built site (tests/conftest.py builds it once, or LESSON_SITE_DIR) and
check it against the deck model (lessonbuild.deck), never against
present.py's own output.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from lessonbuild import present
from lessonbuild.deck import read_deck

ROOT = Path(__file__).resolve().parents[1]

CODE = (
    '<div class="highlight"><span class="filename">snippets/x.py</span>'
    "<pre><code>print(1)\n</code></pre></div>"
)
OUTPUT = (
    '<div class="highlight"><span class="filename">Output</span>'
    "<pre><code>1\n</code></pre></div>"
)
NOTES = (
    '<details class="instructor"><summary>Instructor notes</summary>'
    "<p><strong>Ask:</strong> what prints?</p>"
    "<p><strong>Time:</strong> 3 min</p></details>"
)


def _slide(html: str, minutes: float | None = 3) -> present.DeckSlide:
    return present.DeckSlide(
        number=7,
        title="A <title>",
        kind="Concept",
        url="slides/07-a.html",
        html=html,
        minutes=minutes,
    )


def _soup(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def test_output_and_table_after_code_are_steps_but_code_is_not():
    html = f"<h1>T</h1><table id=a></table>{CODE}{OUTPUT}<table id=b></table>"
    out = _soup(present.slide_sections(_slide(html), 55))
    steps = out.select(".fragment")
    assert [s.get("id") or s.find("span").get_text() for s in steps] == [
        "Output",
        "b",
    ], "expected the Output block and the table after the code as steps"
    assert "fragment" not in out.select_one("#a").get("class", []), (
        "a table before any code is the slide's own content, not a step"
    )


def test_trap_fix_prediction_answer_and_check_explanation_are_steps():
    html = (
        '<div class="admonition failure"><p class="admonition-title">'
        "The trap</p></div>"
        '<div class="admonition success"><p class="admonition-title">'
        "The fix</p></div>"
        '<section class="exercise ex-predict">'
        '<details class="tip ex-key ex-key--hint"><summary>h</summary>'
        '</details><details class="success ex-key ex-key--answer" id=ans>'
        "</details></section>"
        '<section class="exercise ex-check">'
        '<details class="success ex-key" id=why></details></section>'
    )
    out = _soup(present.slide_sections(_slide(html), 55))
    steps = out.select(".fragment")
    assert len(steps) == 3, f"expected 3 steps, got {len(steps)}: {steps}"
    assert "success" in steps[0]["class"]
    assert [s.get("id") for s in steps[1:]] == ["ans", "why"]
    assert not out.select(".failure.fragment, .ex-key--hint.fragment"), (
        "the trap itself and hints stay on screen from the start"
    )


def test_notes_move_to_speaker_view_with_timing():
    out = _soup(present.slide_sections(_slide(f"<h1>T</h1>{NOTES}"), 55))
    assert not out.select(".deck-body details.instructor"), (
        "instructor notes must not be on the slide itself"
    )
    aside = out.select_one("section > section > aside.notes")
    assert aside is not None and "what prints?" in aside.get_text()
    assert "Instructor notes" not in aside.get_text(), "summary left in"
    assert out.select_one("section > section")["data-timing"] == "180"


def test_h2_sections_become_sub_slides_sharing_the_time():
    html = "<h1>T</h1><p>a</p><h2>One</h2><p>b</p><h2>Two</h2><p>c</p>"
    out = _soup(present.slide_sections(_slide(html, minutes=5), 55))
    stack = out.select_one("section[data-slide]")
    subs = stack.find_all("section", recursive=False)
    assert [s.select_one(".deck-body").get_text() for s in subs] == [
        "Ta",
        "Oneb",
        "Twoc",
    ]
    assert sum(int(s["data-timing"]) for s in subs) == 300
    assert stack["data-reading"] == "slides/07-a.html"
    assert stack["data-title"] == "A <title>", "title must be escaped"


def test_notes_are_excluded_from_search():
    assert (
        present.exclude_notes_from_search(NOTES).count("data-search-exclude")
        == 1
    )


# --- the deck's slides, parsed in two processes -------------------------


def _deck(n: int) -> list[present.DeckSlide]:
    """``n`` different slides, of different lengths."""
    return [
        present.DeckSlide(
            number=i + 1,
            title=f"Slide {i}",
            kind="Concept",
            url=f"slides/{i:02d}-s.html",
            html=f"<h1>S{i}</h1>{CODE}{OUTPUT}" + "<p>more</p>" * (i % 5),
            minutes=2,
        )
        for i in range(n)
    ]


@pytest.fixture
def forks(monkeypatch):
    """The pids of the children ``all_sections`` forked (fresh cache)."""
    monkeypatch.setattr(present, "_kept", {})
    pids: list[int] = []
    fork = present._fork

    def counted(work):
        child = fork(work)
        pids.append(child[0])
        return child

    monkeypatch.setattr(present, "_fork", counted)
    return pids


def _alone(slides: list[present.DeckSlide]) -> list[str]:
    """Each slide's sections parsed here, one at a time, nothing kept."""
    return [present._parse_sections(s, 55) for s in slides]


def _reaped(pid: int) -> bool:
    return not Path(f"/proc/{pid}").exists()


def test_a_deck_is_parsed_in_two_processes_as_one_would(forks):
    slides = _deck(present.FORK_FROM + 5)
    assert present.all_sections(slides, 55) == _alone(slides)
    assert len(forks) == 1 and _reaped(forks[0])
    # Kept: the next build parses nothing, and forks nothing.
    assert present.all_sections(slides, 55) == _alone(slides)
    assert len(forks) == 1


def test_a_few_slides_are_parsed_without_a_fork(forks):
    slides = _deck(present.FORK_FROM - 1)
    assert present.all_sections(slides, 55) == _alone(slides)
    assert forks == []


def test_a_child_that_fails_costs_time_not_slides(forks, monkeypatch):
    parent = os.getpid()
    parse = present._parse_sections

    def failing_in_the_child(slide, total):
        if os.getpid() != parent:
            raise RuntimeError("a child that breaks")
        return parse(slide, total)

    monkeypatch.setattr(present, "_parse_sections", failing_in_the_child)
    slides = _deck(present.FORK_FROM + 2)
    assert present.all_sections(slides, 55) == _alone(slides)
    assert len(forks) == 1 and _reaped(forks[0])


def test_a_child_too_slow_is_killed(forks, monkeypatch):
    parent = os.getpid()
    parse = present._parse_sections

    def stuck_in_the_child(slide, total):
        while os.getpid() != parent:
            time.sleep(1)
        return parse(slide, total)

    monkeypatch.setattr(present, "_parse_sections", stuck_in_the_child)
    monkeypatch.setattr(present, "FORK_LIMIT", 0.5)
    slides = _deck(present.FORK_FROM + 2)
    assert present.all_sections(slides, 55) == _alone(slides)
    assert len(forks) == 1 and _reaped(forks[0])


# --- the built site ----------------------------------------------------


@pytest.fixture(scope="module")
def deck_doc(built_site):
    path = built_site / present.DECK
    assert path.is_file(), f"{path} missing: the lesson plugin writes it"
    return _soup(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def lesson():
    return read_deck(ROOT)


def test_one_stack_per_slide_in_order(deck_doc, lesson):
    stacks = deck_doc.select(".reveal .slides > section")
    assert [int(s["data-slide"]) for s in stacks] == [
        s.number for s in lesson.slides
    ], "present.html must hold one <section> per slide, in deck order"


def test_timing_comes_from_the_notes(deck_doc, lesson):
    wrong = []
    for slide, stack in zip(
        lesson.slides,
        deck_doc.select(".reveal .slides > section"),
        strict=True,
    ):
        minutes = sum(n.minutes for n in slide.notes if n.minutes)
        got = sum(
            int(s.get("data-timing", 0)) for s in stack.find_all("section")
        )
        if round(minutes * 60) != got:
            wrong.append(f"slide {slide.number}: {minutes} min, {got} s")
    assert not wrong, "data-timing differs from the notes' Time:\n" + (
        "\n".join(wrong)
    )


def test_every_note_is_in_the_speaker_view_only(deck_doc, lesson):
    stacks = deck_doc.select(".reveal .slides > section")
    assert not deck_doc.select(".deck-body details.instructor")
    for slide, stack in zip(lesson.slides, stacks, strict=True):
        if slide.notes:
            aside = stack.select_one("aside.notes")
            assert aside is not None, f"slide {slide.number}: notes lost"


def test_deck_loads_nothing_from_another_host(deck_doc, built_site):
    tags = deck_doc(["script", "link"])
    urls = [el.get("src") or el.get("href") for el in tags]
    urls = [u for u in urls if u]
    remote = [u for u in urls if re.match(r"^(\w+:)?//", u)]
    assert not remote, f"present.html loads from other hosts: {remote}"
    missing = [u for u in urls if not (built_site / u).is_file()]
    assert not missing, f"present.html links to missing files: {missing}"


def test_reveal_is_the_pinned_vendored_version():
    reveal = ROOT / "docs/assets/vendor/reveal"
    head = (reveal / "reveal.js").read_text(encoding="utf-8")[:400]
    assert "reveal.js" in head and (reveal / "LICENSE").is_file()
    notice = (reveal / "NOTICE.txt").read_text(encoding="utf-8")
    assert "6.0.2" in notice, "NOTICE.txt must name the vendored version"


def test_search_index_has_no_instructor_notes(built_site, lesson):
    index = json.loads(
        (built_site / "search" / "search_index.json").read_text("utf-8")
    )
    text = " ".join(d["text"] + " " + d["title"] for d in index["docs"])
    leaked, checked = [], 0
    for slide in lesson.slides:
        for note in slide.notes:
            # A distinctive line of each note, markup stripped.
            for line in note.text.splitlines():
                words = re.sub(r"[*`\\]|\\\(|\\\)", "", line).strip()
                if len(words) > 40 and "$" not in line and "\\" not in line:
                    checked += 1
                    if words[:40] in text:
                        leaked.append(f"slide {slide.number}: {words[:40]}")
                    break
    assert checked >= 10, f"only {checked} notes had a plain line to look for"
    assert not leaked, "instructor notes found in search_index.json:\n" + (
        "\n".join(leaked)
    )


def test_links_and_images_are_rebased_to_the_deck():
    html = (
        '<p><a href="../index.html#top">home</a> <a href="#x">here</a>'
        ' <a href="https://pytorch.org/">torch</a>'
        ' <a href="16-next.html">next</a></p>'
        '<img src="../figures/a.svg" loading="lazy" alt="a">'
    )
    out = _soup(present.slide_sections(_slide(html), 55))
    hrefs = [a["href"] for a in out.select(".deck-body a")]
    assert hrefs == [
        "index.html#top",
        "#x",
        "https://pytorch.org/",
        "slides/16-next.html",
    ], "links of slides/07-a.html must resolve from the site root"
    img = out.select_one("img")
    assert img["src"] == "figures/a.svg"
    assert not img.has_attr("loading"), "images load before measuring"


def test_exercises_are_not_sections_in_the_deck():
    # reveal.js takes every <section> under .slides for a slide.
    html = '<section class="exercise ex-check" data-ex-kind="check"></section>'
    out = _soup(present.slide_sections(_slide(html), 55))
    ex = out.select_one(".exercise")
    assert ex.name == "div" and ex["role"] == "region"
    assert ex["data-ex-kind"] == "check"
    assert len(out.find_all("section")) == 2, "one stack, one sub-slide"
