"""Ask, then reveal: the project slides hold their reference code back.

In Chromium, on the slides that ask the student to write the module, no
reference implementation shows until the student opens "Show the
reference — after you have tried"; in the deck it is not on the slide's
first step. The slides are found from the lesson's sources (which blocks
are the references: those that include mha_ref/mha.py or the full
program), not from a list typed here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from lessonbuild.deck import read_deck
from tests.browser.conftest import (
    attempt_nothing_then_something,
    wait_for_widgets,
)

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
#: What a reference block includes: the module, or the whole program.
REFERENCE = ("mha_ref/mha.py", "snippets/51_full_program.py")


def project_slides_with_references() -> list[tuple[int, str]]:
    deck = read_deck(ROOT)
    found = []
    for slide in deck.slides:
        if not 42 <= slide.number <= 51:
            continue
        if any(inc.path in REFERENCE for inc in slide.includes):
            page = deck.docs_rel(slide)[: -len(".md")] + ".html"
            found.append((slide.number, page))
    return found


def test_the_project_has_reference_slides():
    numbers = [number for number, _ in project_slides_with_references()]
    assert {45, 47, 51} <= set(numbers)


#: For each reference fold on the page: the kind of the nearest exercise
#: above it (None: no exercise above, nothing to answer first).
ANSWERED_FIRST = """() => {
    const exercises = [...document.querySelectorAll(".exercise")];
    return [...document.querySelectorAll("details.reference")].map((d) => {
        const above = exercises.filter((ex) => ex.compareDocumentPosition(d)
            & Node.DOCUMENT_POSITION_FOLLOWING).pop();
        return above ? above.getAttribute("data-ex-kind") : null;
    });
}"""


@pytest.mark.parametrize(
    ("number", "page"),
    project_slides_with_references(),
    ids=lambda value: str(value),
)
def test_reference_shows_only_when_asked(browser, built_site, number, page):
    """No reference code shows until the student opens its fold; a fold
    under an exercise is not even there until that exercise had a real
    attempt ("after you have tried"), with one line saying so per row
    of folds."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    tab = context.new_page()
    tab.goto((built_site / page).as_uri())
    wait_for_widgets(tab)
    folds = tab.locator("details.reference")
    assert folds.count() >= 1
    names = re.compile("|".join(map(re.escape, REFERENCE)))
    code = tab.locator(".highlight").filter(
        has=tab.locator(".filename").filter(has_text=names)
    )
    assert code.count() >= 1
    for i in range(code.count()):
        expect(code.nth(i)).to_be_hidden()
    first = tab.evaluate(ANSWERED_FIRST)
    notes = tab.locator("p.ex-locked").filter(has_text="The reference opens")
    for i, kind in enumerate(first):
        if kind:
            expect(folds.nth(i)).to_be_hidden()
    if any(first):
        # One line for the row of folds, where they will be.
        expect(notes).to_have_count(1)
        expect(notes).to_have_text(
            "The reference opens here once you have answered the "
            "exercise above."
        )
        for kind in dict.fromkeys(filter(None, first)):
            section = tab.locator(f"section.ex-{kind}").first
            attempt_nothing_then_something(tab, section, kind)
        expect(notes).to_be_hidden()
    else:
        expect(notes).to_have_count(0)
    for i in range(folds.count()):
        summary = folds.nth(i).locator("summary")
        expect(summary).to_contain_text("Show the reference")
        summary.click()
    for i in range(code.count()):
        expect(code.nth(i)).to_be_visible()
    context.close()


@pytest.mark.parametrize(
    ("number", "page"),
    project_slides_with_references(),
    ids=lambda value: str(value),
)
def test_deck_does_not_open_on_the_reference(
    browser, built_site, number, page
):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    tab = context.new_page()
    tab.goto(built_site.as_uri() + f"/present.html#/{number}")
    tab.wait_for_selector(
        "html[data-deck-ready]", state="attached", timeout=180_000
    )
    current = tab.locator(".reveal .slides section.present")
    filenames = current.locator(".filename")
    for i in range(filenames.count()):
        name = filenames.nth(i).inner_text()
        if name in REFERENCE:
            expect(filenames.nth(i)).to_be_hidden()
    context.close()
