"""The lesson's own exercises in the built site: every widget comes alive
without errors, and a few real ones answer and pass axe."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from lessonbuild.deck import read_deck
from tests.browser.axe import serious_violations

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]


def slides_with_exercises() -> list[str]:
    deck = read_deck(ROOT)
    return [
        deck.docs_rel(slide)[: -len(".md")] + ".html"
        for slide in deck.slides
        if slide.exercises
    ]


def test_every_lesson_exercise_initialises(lesson_pages):
    """Each slide's widgets initialise (controls shown, no JS error)."""
    names = slides_with_exercises()
    assert names
    page = None
    for name in names:
        if page is None:
            page = lesson_pages.open(name)
        else:
            page.goto(lesson_pages.base + name)
            page.wait_for_selector("section.exercise[data-ex-ready]")
        sections = page.locator("section.exercise")
        expect(sections.locator(".ex-actions").first).to_be_visible()
        assert sections.count() == page.locator("[data-ex-ready]").count()


def test_lesson_check_and_fill_in(lesson_pages):
    """Slide 37: a wrong pick shows its 'why it tempts'; slide 24: the
    engine's table values are what the cells are checked against."""
    page = lesson_pages.open("slides/37-check-yourself-parameter-count.html")
    ex = page.locator("section.ex-check")
    ex.locator('.ex-option[data-ex-option="C"] label').click()
    ex.get_by_role("button", name="Check", exact=True).click()
    expect(ex.locator(".ex-feedback")).to_contain_text("Why C tempts people")
    page.goto(
        lesson_pages.base
        + "slides/24-what-each-one-costs-verify-param-count-for.html"
    )
    ex = page.locator("section.ex-fill-in[data-ex-ready]")
    cells = ex.locator("input.ex-cell")
    for i in range(cells.count()):
        cells.nth(i).fill("1048576")
    ex.get_by_role("button", name="Check", exact=True).click()
    expect(ex.locator(".ex-feedback")).to_contain_text(
        re.compile(r"All \d+ cells are right")
    )


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_lesson_exercises_pass_axe(lesson_pages, scheme):
    for name in slides_with_exercises():
        if not re.search(r"/(16|24|29|33|36|41)-", name):
            continue
        page = lesson_pages.open(name, color_scheme=scheme)
        serious = serious_violations(page, "section.exercise")
        assert not serious, f"{name} {scheme}: {serious}"
