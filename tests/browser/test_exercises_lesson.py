"""The lesson's own exercises in the built site: every widget comes alive
without errors and gives nothing away, and a few real ones answer.

(axe checks the widgets as part of every page: test_site_a11y.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from lessonbuild.deck import read_deck
from tests.browser.sweep import SLIDES, label

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def untouched(desktop_sweep):
    """Every slide as first opened, nothing touched (sweep.py; any
    JavaScript error on any page fails the sweep): {slide label:
    {"verdicts": [...], "widgets": [...], "expected": count}}."""
    deck = read_deck(ROOT)
    assert len(deck.slides) == 55
    assert not desktop_sweep["errors"], (
        f"JavaScript errors: {desktop_sweep['errors']}"
    )
    found = {}
    paths = dict(SLIDES)
    for slide in deck.slides:
        seen = desktop_sweep["pages"][label(slide.number, paths[slide.number])]
        found[f"slide {slide.number} ({slide.path})"] = {
            "verdicts": seen["verdicts"],
            "widgets": seen["widgets"],
            "expected": len(slide.exercises),
        }
    return found


def test_every_lesson_exercise_initialises(untouched):
    """Each slide's widgets initialise: one section per exercise, each
    marked ready with its controls shown."""
    assert any(s["expected"] for s in untouched.values())
    broken = {
        label: seen["widgets"]
        for label, seen in untouched.items()
        if len(seen["widgets"]) != seen["expected"]
        or not all(w["ready"] and w["actions"] for w in seen["widgets"])
    }
    assert not broken, f"widgets not initialised: {broken}"


SLIDE_37 = "slides/37-check-yourself-parameter-count.html"


def test_lesson_check(lesson_pages):
    """Slide 37: a wrong pick shows its 'why it tempts' and nothing of
    the right answer. (Fill-ins: test_exercises_assess.py.)"""
    page = lesson_pages.open(SLIDE_37)
    ex = page.locator("section.ex-check")
    ex.locator('.ex-option[data-ex-option="A"] label').click()
    ex.get_by_role("button", name="Check", exact=True).click()
    feedback = ex.locator(".ex-feedback")
    expect(feedback).to_contain_text("Why A tempts people")
    # Its heading names the option as the option reads (the numbers
    # drawn for this page included): the feedback lies under all four.
    drawn = ex.locator('.ex-option[data-ex-option="A"] .ex-var').first
    title = feedback.locator(".ex-excerpt__title")
    expect(title).to_contain_text(
        f"Why A tempts people — {drawn.inner_text()}"
    )
    # The explanation ("Total = ... = 1,048,576") is not given away.
    expect(feedback).not_to_contain_text("Total")
    expect(feedback).not_to_contain_text("1,048,576")
    # Nor what tempts towards the other options.
    expect(feedback).not_to_contain_text("Counts one matrix")


def test_no_verdict_before_interaction(untouched):
    """On every slide, before anything is touched, nothing visible says
    "Correct" or shows a right-answer mark."""
    found = {label: s["verdicts"] for label, s in untouched.items()}
    found = {label: hits for label, hits in found.items() if hits}
    assert not found, (
        "verdict text visible before any answer (hide it until the "
        f"student has tried): {found}"
    )


def test_reset_leaves_the_exercise_title_below_the_header(lesson_pages):
    """Reset focuses the exercise's title. Pressed at the foot of an
    exercise taller than the screen (the buckets), the browser left the
    title on screen but under the sticky header, where a keyboard user
    could not see where the focus went."""
    tall = [
        Path(s.path).with_suffix(".html").name
        for s in read_deck(ROOT).slides
        if any("kind: buckets" in fence.content for fence in s.exercises)
    ]
    assert tall
    for name in tall:
        page = lesson_pages.open(
            f"slides/{name}", viewport={"width": 1280, "height": 800}
        )
        reset = page.locator('section.exercise [data-ex-action="reset"]')
        reset = reset.first
        # Shown and at the foot of the window, as after sorting the items.
        reset.evaluate("b => { b.hidden = false; b.disabled = false; }")
        reset.evaluate(
            "b => window.scrollBy(0, b.getBoundingClientRect().bottom"
            " - innerHeight + 4)"
        )
        reset.click()
        focused = page.locator("section.exercise .ex-label:focus")
        expect(focused).to_have_count(1)
        title = focused.bounding_box()
        header = page.locator(".md-header").bounding_box()
        assert title["y"] >= header["y"] + header["height"], (name, title)
