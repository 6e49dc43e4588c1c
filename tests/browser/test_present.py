"""The deck (present.html) in Chromium, served and opened from disk.

A teacher opens the deck from a reading page, steps through a slide,
jumps around with reveal.js's keys, runs the speaker view on a second
window, answers an exercise on the projector and goes back to reading.
Every check here is what that teacher would see; the expectations come
from the lesson's sources (lessonbuild.deck), not from present.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from lessonbuild.deck import read_deck
from tests.browser.axe import serious_violations
from tests.browser.conftest import (
    attempt_nothing_then_something,
    smallest_label,
)
from tests.test_present import plain_phrase

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
WIDTH, HEIGHT = 1280, 720
#: Debian's Chromium, as the Makefile passes it to ``make pdf``.
CHROMIUM = "/usr/bin/chromium"
SLIDE = 15
CHECK_SLIDE = 37  # a "check" exercise: options A-D and a Check button


@pytest.fixture(scope="module")
def lesson():
    return read_deck(ROOT)


def reading_page(lesson, number: int) -> str:
    slide = lesson.slides[number - 1]
    assert slide.number == number
    return lesson.docs_rel(slide)[: -len(".md")] + ".html"


def note_line(lesson, number: int) -> str:
    """A plain phrase of the slide's instructor notes (no markup)."""
    notes = lesson.slides[number - 1].notes
    return plain_phrase("\n".join(note.text for note in notes))


class Deck:
    """One browser context on the site, recording every request's host."""

    def __init__(self, browser, base: str):
        self.base = base
        self.context = browser.new_context(
            viewport={"width": WIDTH, "height": HEIGHT}
        )
        self.context.set_default_timeout(20_000)
        # A whole deck loads in well under a second on a quiet machine;
        # eight engineers' builds on two cores make it many times that.
        self.context.set_default_navigation_timeout(120_000)
        self.errors: list[str] = []
        self.foreign: list[str] = []
        local = urlsplit(base).netloc
        # Seen, not intercepted: routing sends every request through
        # Python and back before Chromium may load it.
        self.context.on("request", lambda r: self._note(r.url, local))
        self.context.on("page", self._watch)

    def _note(self, address: str, local: str):
        url = urlsplit(address)
        if url.scheme in ("http", "https") and url.netloc != local:
            self.foreign.append(address)

    def _watch(self, page):
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on(
            "console",
            lambda m: m.type == "error" and self.errors.append(m.text),
        )

    def open(self, path: str):
        page = self.context.new_page()
        page.goto(self.base + path)
        return page

    def close(self):
        self.context.close()
        assert not self.foreign, f"requests to other hosts: {self.foreign}"
        assert not self.errors, f"JavaScript errors: {self.errors}"


@pytest.fixture(params=["http", "file"])
def deck(request, browser, built_site):
    if request.param == "http":
        base = request.getfixturevalue("lesson_server")
    else:
        base = built_site.as_uri() + "/"
    opened = Deck(browser, base)
    yield opened
    opened.close()


def wait_ready(page):
    page.wait_for_selector("html[data-deck-ready]", state="attached")


def on_slide(page) -> int:
    """The lesson slide number of the deck's current slide."""
    return int(
        page.evaluate(
            "Reveal.getCurrentSlide().closest('[data-slide]').dataset.slide"
        )
    )


def test_a_phone_gets_no_present_link(browser, lesson_server, lesson):
    """The deck is a projector's 1280x720 stage: on a phone it shrank to
    a third (7 px text), and its steps show answers without an attempt.
    A laptop's reading page offers it; a phone's does not, nor its home
    page (its "present the deck" stayed)."""
    for width, shown in ((1280, True), (390, False)):
        context = browser.new_context(viewport={"width": width, "height": 844})
        try:
            page = context.new_page()
            for path in (reading_page(lesson, SLIDE), "index.html"):
                page.goto(lesson_server + path)
                link = page.locator(
                    "article a[href^='present.html'], "
                    "article a[href*='/present.html'], .present-link"
                )
                expect(link).to_have_count(1)
                if shown:
                    expect(link).to_be_visible()
                else:
                    expect(link).to_be_hidden()
        finally:
            context.close()


def test_present_step_jump_speaker_view_and_back(deck, lesson):
    page = deck.open(reading_page(lesson, SLIDE))
    expect(page.locator(".present-link")).to_be_visible()
    page.keyboard.press("Shift+P")
    expect(page).to_have_url(re.compile(rf"present\.html#/{SLIDE}$"))
    wait_ready(page)
    assert on_slide(page) == SLIDE, f"Shift+P must open slide {SLIDE}"

    # Steps: the Output block of the trace is held back, then shown.
    output = page.locator(
        f'[data-slide="{SLIDE}"] .highlight.fragment',
        has=page.locator(".filename", has_text="Output"),
    ).first
    expect(output).not_to_have_class(re.compile(r"\bvisible\b"))
    for _ in range(6):
        if "visible" in (output.get_attribute("class") or ""):
            break
        page.keyboard.press("Space")
    expect(output).to_have_class(re.compile(r"\bvisible\b"))
    assert on_slide(page) == SLIDE, "the steps must not leave the slide"

    # reveal.js's keys: Home, End, and G (jump to slide) with a number.
    page.keyboard.press("Home")
    assert on_slide(page) == 1
    page.keyboard.press("End")
    assert on_slide(page) == len(lesson.slides)
    page.keyboard.press("g")
    page.keyboard.type(str(SLIDE))
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(rf"#/{SLIDE}(/1(/\d+)?)?$"))
    assert on_slide(page) == SLIDE

    # Speaker view: notes of this slide, a pacing figure, kept in step.
    with deck.context.expect_page() as popup:
        page.keyboard.press("s")
    speaker = popup.value
    notes = speaker.locator(".speaker-controls-notes")
    expect(notes).to_contain_text(note_line(lesson, SLIDE), timeout=90_000)
    assert on_slide(page) == SLIDE, "opening the speaker view moved the deck"
    # reveal.js's own timer, from each screen's share of the minutes.
    pacing = speaker.locator(".speaker-controls-time .pacing")
    expect(pacing).to_be_visible(timeout=90_000)
    expect(pacing).to_have_text(re.compile(r"\d+:\d\d"))
    page.bring_to_front()
    page.evaluate("Reveal.slide(Reveal.getIndices().h + 1)")
    expect(notes).to_contain_text(note_line(lesson, SLIDE + 1))
    speaker.bring_to_front()
    speaker.locator("body").press("ArrowLeft")
    page.wait_for_function(
        f"Reveal.getCurrentSlide().closest('[data-slide]')"
        f".dataset.slide === '{SLIDE}'"
    )
    expect(notes).to_be_visible()
    expect(notes).to_contain_text(note_line(lesson, SLIDE), timeout=90_000)

    # R: back to the reading page of the slide on screen.
    page.bring_to_front()
    page.locator("body").press("r")
    expect(page).to_have_url(
        re.compile(re.escape(reading_page(lesson, SLIDE)) + "(#[-\\w]+)?$")
    )


def _longest_notes(lesson) -> int:
    """The number of the slide whose notes are longest."""
    return max(
        (s for s in lesson.slides if s.notes),
        key=lambda s: sum(len(note.text) for note in s.notes),
    ).number


def _notes_fit(speaker) -> None:
    """Wait until the speaker view's notes panel holds its notes."""
    speaker.wait_for_function(
        """() => {
            const panel = document.getElementById("speaker-controls");
            return panel.scrollHeight <= panel.clientHeight;
        }"""
    )


def test_the_speaker_view_shows_the_longest_notes_whole(deck, lesson):
    """At 1280x720 reveal.js's speaker view set every slide's notes past
    the foot of their panel (slide 41's: 850 px in 432), out of a
    clicker's reach: "Watch for" and the pacing line never showed. The
    longest notes of the lesson now fit, in the window reveal.js opens
    (1100x700) and in type no smaller than 0.9 of the view's: shrunk to
    fit under the clocks, they were at 0.6 (10.8 px)."""
    number = _longest_notes(lesson)
    page = deck.open(f"present.html#/{number}")
    wait_ready(page)
    with deck.context.expect_page() as popup:
        page.keyboard.press("s")
    speaker = popup.value
    speaker.set_viewport_size({"width": 1100, "height": 700})
    notes = speaker.locator(".speaker-controls-notes .value")
    expect(notes).to_contain_text(note_line(lesson, number), timeout=90_000)
    _notes_fit(speaker)
    size = speaker.evaluate(
        """() => parseFloat(getComputedStyle(document.querySelector(
            ".speaker-controls-notes .value")).fontSize) /
            parseFloat(getComputedStyle(document.body).fontSize)"""
    )
    assert size >= 0.9, size
    box = notes.bounding_box()
    assert box["y"] + box["height"] <= 700, box
    # Another layout: the notes fit its panel at once, or take the least
    # size (they kept the old layout's, past the foot, until a slide
    # change: a re-check).
    for layout in ("wide", "tall"):
        speaker.select_option("select.speaker-layout-dropdown", layout)
        speaker.wait_for_function(
            """() => {
                const panel = document.getElementById("speaker-controls");
                const notes = document.querySelector(
                    ".speaker-controls-notes .value");
                return panel.scrollHeight <= panel.clientHeight ||
                    notes.style.fontSize === "0.6em";
            }"""
        )
    speaker.close()


def test_the_speaker_view_shows_each_formula_once(deck, lesson):
    """The notes' formulas in the speaker view, from disk as over http:
    one layer of each shows (from file:// the window could not load
    KaTeX's CSS, and every formula read twice: "T T", "h h")."""
    number = next(
        s.number
        for s in lesson.slides
        if any("\\(" in n.text for n in s.notes)
    )
    # A window that gets no rules from the sheet (from disk under
    # Playwright's routing it could not load it): the notes still hide
    # KaTeX's MathML copy.
    deck.context.route(
        "**/katex.min.css",
        lambda route: (
            route.fulfill(content_type="text/css", body="")
            if route.request.frame.page.url == "about:blank"
            else route.continue_()
        ),
    )
    page = deck.open(f"present.html#/{number}")
    wait_ready(page)
    with deck.context.expect_page() as popup:
        page.keyboard.press("s")
    speaker = popup.value
    notes = speaker.locator(".speaker-controls-notes .value")
    expect(notes).to_contain_text(note_line(lesson, number), timeout=90_000)
    layers = notes.evaluate(
        """(value) => [...value.querySelectorAll('.katex')].map((k) =>
          [...k.querySelectorAll(
            ':scope > .katex-mathml, :scope > .katex-html')]
            .filter((layer) => layer.getBoundingClientRect().width > 2)
            .length)"""
    )
    assert layers, f"no formula in slide {number}'s notes"
    assert set(layers) == {1}, f"layers shown per formula: {layers}"
    speaker.close()


def test_reading_page_hides_notes_until_the_switch(deck, lesson):
    page = deck.open(reading_page(lesson, SLIDE))
    notes = page.locator("details.instructor")
    assert notes.count() >= 1
    expect(notes.first).to_be_hidden()
    switch = page.locator(".instructor-switch")
    switch.click()
    expect(notes.first).to_be_visible()
    expect(switch).to_have_attribute("aria-pressed", "true")
    page.reload()
    expect(page.locator("details.instructor").first).to_be_visible()
    page.locator(".instructor-switch").click()
    expect(page.locator("details.instructor").first).to_be_hidden()


def _kind(fence) -> str:
    return next(
        line.split(":", 1)[1].strip()
        for line in fence.content
        if line.startswith("kind:")
    )


def test_the_notes_wait_for_every_exercise_on_the_reading_page(deck, lesson):
    """The switch is one click for a student too, and notes give answers
    away (a show of hands "for (1, 2, 4, 4)") or leave one by elimination
    ("Watch for" naming the wrong options): with the notes shown, they
    stay back until every exercise of the page is tried (a line says so,
    and that the speaker view shows them), as the page's Verify folds do.
    The first slide of each exercise kind with notes, and every slide
    with two exercises (one tried is not enough)."""
    first, pairs = {}, set()
    for slide in lesson.slides:
        if slide.notes and slide.exercises:
            for fence in slide.exercises:
                first.setdefault(_kind(fence), slide.number)
            if len(slide.exercises) > 1:
                pairs.add(slide.number)
    assert len(first) >= 5 and pairs, (first, pairs)
    for number in sorted({*first.values(), *pairs}):
        page = deck.open(reading_page(lesson, number))
        switch = page.locator(".instructor-switch")
        line = page.locator("p.ex-locked--notes")
        if switch.get_attribute("aria-pressed") == "true":  # remembered
            switch.click()
        expect(line).to_be_hidden()  # a student who did not ask: nothing
        switch.click()
        notes = page.locator("details.instructor").first
        phrase = note_line(lesson, number)
        article = page.locator("article")
        sections = page.locator(".exercise[data-ex-kind]").all()
        assert len(sections) == len(lesson.slides[number - 1].exercises)
        for section in sections:
            expect(notes).to_be_hidden()
            # (Not where else they show: "the deck's speaker view, S,
            # always shows them" told a student how to read answers.)
            expect(line).to_contain_text("answered this page's exercises")
            expect(line).not_to_contain_text("speaker view")
            assert phrase not in article.inner_text(), number
            kind = section.get_attribute("data-ex-kind")
            attempt_nothing_then_something(page, section, kind)
        expect(notes).to_be_visible()
        expect(line).to_be_hidden()
        notes.evaluate("(d) => { d.open = true; }")
        assert phrase in article.inner_text(), number
        page.close()


def test_reading_page_without_javascript_shows_no_notes(browser, built_site):
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        lesson = read_deck(ROOT)
        page.goto(built_site.as_uri() + "/" + reading_page(lesson, SLIDE))
        expect(page.locator("details.instructor").first).to_be_hidden()
    finally:
        context.close()


def test_an_exercise_inside_the_deck_by_mouse_and_keyboard(deck):
    page = deck.open(f"present.html#/{CHECK_SLIDE}")
    wait_ready(page)
    ex = page.locator(f'[data-slide="{CHECK_SLIDE}"] .ex-check').first
    expect(ex).to_have_attribute("data-ex-ready", re.compile(".*"))
    where = page.evaluate("JSON.stringify(Reveal.getIndices())")

    # Mouse: pick C, press Check, read the verdict.
    ex.locator('.ex-option[data-ex-option="C"] label').click()
    ex.get_by_role("button", name="Check", exact=True).click()
    expect(ex.locator(".ex-feedback")).to_contain_text("Why C tempts people")

    # Enter presses a focused button and does not move the deck.
    ex.locator('.ex-option[data-ex-option="B"] label').click()
    ex.get_by_role("button", name="Check", exact=True).focus()
    page.keyboard.press("Enter")
    expect(ex.locator(".ex-feedback")).not_to_contain_text("Why C tempts")
    assert page.evaluate("JSON.stringify(Reveal.getIndices())") == where, (
        "Enter on an exercise button moved the deck"
    )

    # Space and the arrows always move the deck, whatever has the focus:
    # a clicker's "next" never re-presses a button or picks an option.
    ex.locator('.ex-option[data-ex-option="A"] input').focus()
    before = page.evaluate("Reveal.getProgress()")
    page.keyboard.press("Space")
    page.wait_for_function(f"Reveal.getProgress() > {before}")
    expect(
        ex.locator('.ex-option[data-ex-option="A"] input')
    ).not_to_be_checked()
    page.keyboard.press("ArrowLeft")
    page.wait_for_function(f"Reveal.getProgress() === {before}")


def _first_slide_of(lesson, kind: str) -> int:
    return next(
        s.number
        for s in lesson.slides
        if any(_kind(fence) == kind for fence in s.exercises)
    )


def test_a_click_on_an_exercise_leaves_the_clicker_the_deck(deck, lesson):
    """A presenter clicks Strike (an eliminate exercise): the widget put
    the focus in the new reason box, and the clicker's → and Space typed
    there or did nothing. In the deck the widget no longer moves the
    focus into a field; the presenter clicks into it to type. And ↓ in
    a bucket list changes its pick: reveal.js stepped the deck instead."""
    number = _first_slide_of(lesson, "eliminate")
    page = deck.open(f"present.html#/{number}")
    wait_ready(page)
    ex = page.locator(f'[data-slide="{number}"] .ex-eliminate').first
    expect(ex).to_have_attribute("data-ex-ready", re.compile(".*"))
    ex.locator('[data-ex-action="strike"]').first.click()
    expect(ex.locator(".ex-reason textarea").first).to_be_visible()
    before = page.evaluate("Reveal.getProgress()")
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"Reveal.getProgress() > {before}")
    # reveal.js writes the move into the address up to a second late: a
    # write still pending could land after the goto below and undo it
    # (seen under load). Once the address names the step, none is.
    page.wait_for_function("location.hash === '#' + Reveal.getSlidePath()")

    number = _first_slide_of(lesson, "buckets")
    page.goto(page.url.split("#")[0] + f"#/{number}")
    page.wait_for_function(f"Reveal.getIndices().h === {number - 1}")
    select = page.locator(f'[data-slide="{number}"] select.ex-select').first
    expect(select).to_be_visible()
    select.focus()
    picked = select.input_value()
    before = page.evaluate("JSON.stringify(Reveal.getIndices())")
    page.keyboard.press("ArrowDown")
    expect(select).not_to_have_value(picked)
    assert page.evaluate("JSON.stringify(Reveal.getIndices())") == before
    # A clicker's → and Space on a list left focused move the deck and
    # leave its pick (→ changed the class's answer unseen, Space did
    # nothing: a rehearsal from disk).
    for key in ("ArrowRight", "Space"):
        page.evaluate("(i) => Reveal.slide(i.h, i.v, i.f)", json.loads(before))
        page.wait_for_function(
            f"JSON.stringify(Reveal.getIndices()) === {json.dumps(before)}"
        )
        other = page.locator(f'[data-slide="{number}"] select.ex-select').last
        other.focus()
        picked = other.input_value()
        page.keyboard.press(key)
        page.wait_for_function(
            f"JSON.stringify(Reveal.getIndices()) !== {json.dumps(before)}"
        )
        assert other.input_value() == picked, key


def _on_first_check(deck, lesson):
    """The deck at the first check exercise's screen, its widget ready:
    (the page, the exercise's selector)."""
    number = _first_slide_of(lesson, "check")
    page = deck.open(f"present.html#/{number}")
    wait_ready(page)
    ex = f'[data-slide="{number}"] .ex-check'
    expect(page.locator(ex).first).to_have_attribute(
        "data-ex-ready", re.compile(".*")
    )
    _show_screen_of(page, ex)
    return page, ex


def test_the_keyboard_picks_options_and_buckets_on_stage(deck, lesson):
    """At a keyboard (Tab), Space on an option picked nothing and stepped
    the deck to the answer, and Space on Check did the same; a bucket's
    list lost the focus once its ↓ moved the item, and the next ↓ opened
    the answer (a rehearsal). Reached by Tab, an option and a button
    keep Space and an option its ↑ and ↓; clicked with the mouse, Space
    is the clicker's and moves the deck; a list keeps the focus."""
    page, ex = _on_first_check(deck, lesson)
    before = _indices(page)
    radio = f"{ex} input.ex-radio"
    for _ in range(40):
        if page.evaluate(f"document.activeElement.matches('{radio}')"):
            break
        page.keyboard.press("Tab")
    first = page.locator(radio).first
    expect(first).to_be_focused()
    page.keyboard.press("Space")
    expect(first).to_be_checked()
    page.keyboard.press("ArrowDown")
    expect(page.locator(radio).nth(1)).to_be_checked()
    assert _indices(page) == before
    assert not page.locator(f"{ex} details.ex-key[open]").count()
    # Escape leaves the option, and Space is the clicker's again.
    page.keyboard.press("Escape")
    page.keyboard.press("Space")
    page.wait_for_function(
        f"JSON.stringify(Reveal.getIndices()) !== {before!r}"
    )
    # reveal.js's own ‹ arrow, reached by Tab, is no exercise's: Space on
    # it goes forward (it pressed the arrow, a step back each time).
    _show_screen_of(page, ex)
    arrow = page.locator(".reveal .controls .navigate-left").first
    arrow.focus()
    progress = page.evaluate("Reveal.getProgress()")
    page.keyboard.press("Space")
    page.wait_for_function(f"Reveal.getProgress() > {progress}")
    _show_screen_of(page, ex)
    page.locator(radio).first.focus()
    check = page.locator(ex).first.get_by_role("button", name="Check")
    for _ in range(20):
        if page.evaluate("document.activeElement.textContent.trim()") == (
            "Check"
        ):
            break
        page.keyboard.press("Tab")
    expect(check).to_be_focused()
    page.keyboard.press("Space")
    expect(page.locator(f"{ex} .ex-feedback").first).not_to_be_empty()
    # Clicked with the mouse, an option leaves Space to the clicker.
    _show_screen_of(page, ex)
    page.locator(radio).first.click()
    progress = page.evaluate("Reveal.getProgress()")
    page.keyboard.press("Space")
    page.wait_for_function(f"Reveal.getProgress() > {progress}")

    number = _first_slide_of(lesson, "buckets")
    _show_screen_of(page, f'[data-slide="{number}"] select.ex-select')
    first = page.locator(f'[data-slide="{number}"] select.ex-select').first
    item = first.evaluate("s => s.closest('[data-ex-item]').dataset.exItem")
    # (By its item: a move changes which list comes first.)
    select = page.locator(
        f'[data-slide="{number}"] [data-ex-item="{item}"] select'
    )
    select.focus()
    before = _indices(page)
    for _ in range(2):
        picked = select.input_value()
        page.keyboard.press("ArrowDown")
        expect(select).not_to_have_value(picked)
        # The list, moved into its bucket with its item, keeps the focus.
        expect(select).to_be_focused()
    assert _indices(page) == before


@pytest.mark.parametrize("deck", ["file"], indirect=True)
def test_a_bucket_list_moved_by_the_keyboard_stays_in_sight(deck, lesson):
    """Every item sorted by the keyboard into the last bucket: the list
    that keeps the focus moves with its item, down a screen that grows,
    and sat under the "more below" cue, where the next arrow changed a
    pick the class could not see (a re-check). It is scrolled clear."""
    numbers = [
        s.number
        for s in lesson.slides
        if any(_kind(fence) == "buckets" for fence in s.exercises)
    ]
    page = deck.open("present.html")
    wait_ready(page)
    for number in numbers:
        lists = f'[data-slide="{number}"] select.ex-select'
        _show_screen_of(page, lists)
        items = page.eval_on_selector_all(
            lists,
            "ls => ls.map(l => l.closest('[data-ex-item]').dataset.exItem)",
        )
        for item in items:
            select = page.locator(
                f'[data-slide="{number}"] [data-ex-item="{item}"] select'
            )
            last = select.evaluate("s => s.options.length - 1")
            select.focus()
            for _ in range(last):
                page.keyboard.press("ArrowDown")
            expect(select).to_be_focused()
            page.wait_for_function(
                """(s) => {
                  const screen = s.closest('section.present');
                  const scale = screen.getBoundingClientRect().height /
                    screen.offsetHeight;
                  return s.getBoundingClientRect().bottom <=
                    screen.getBoundingClientRect().bottom - 50 * scale;
                }""",
                arg=select.element_handle(),
            )


def test_the_arrow_past_a_fill_in_cell_goes_to_the_next_cell(deck, lesson):
    """A presenter typed the class's first cell and pressed →: the next
    step, the whole key, opened over three empty cells (a fresh-eyes
    check; a clicker has no Tab). Past a cell's text → goes to the next
    cell and ← to the one before; past the last cell, → moves the deck."""
    number = _first_slide_of(lesson, "fill-in")
    page = deck.open(f"present.html#/{number}")
    wait_ready(page)
    ex = page.locator(f'[data-slide="{number}"] .ex-fill-in').first
    expect(ex).to_have_attribute("data-ex-ready", re.compile(".*"))
    cells = ex.locator("input.ex-cell")
    assert cells.count() >= 2
    where = "JSON.stringify(Reveal.getIndices())"
    before = page.evaluate(where)
    cells.first.click()
    page.keyboard.type("24")
    page.keyboard.press("ArrowRight")
    expect(cells.nth(1)).to_be_focused()
    page.keyboard.press("ArrowLeft")
    expect(cells.first).to_be_focused()
    assert page.evaluate(where) == before
    cells.last.click()
    page.keyboard.press("End")
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"{where} !== {json.dumps(before)}")
    expect(cells.first).to_have_value("24")


def test_a_fill_in_cell_shows_the_keys_longest_answer_whole(deck, lesson):
    """A presenter typing the class's answer in the lesson's symbols saw
    13 characters of it ("(B, h, T_q, 1" for "(B, h, T_q, T_k)"): each
    cell shows its exercise's longest key formula whole, on the stage."""
    numbers = [
        s.number
        for s in lesson.slides
        if any(_kind(fence) == "fill-in" for fence in s.exercises)
    ]
    page = deck.open(f"present.html#/{numbers[0]}")
    wait_ready(page)
    for number in numbers:
        page.evaluate(f"Reveal.slide({number - 1}, 0, -1)")
        ex = page.locator(f'[data-slide="{number}"] .ex-fill-in').first
        expect(ex).to_be_visible()
        # The key's table: each quantity's formula, then its numbers.
        forms = ex.locator(".ex-key tr > td:first-of-type").all_inner_texts()
        longest = max((" ".join(f.split()) for f in forms), key=len)
        cells = ex.locator("input.ex-cell")
        for i in range(cells.count()):
            cells.nth(i).fill(longest)
            width = cells.nth(i).evaluate(
                "c => [c.scrollWidth, c.clientWidth]"
            )
            assert width[0] <= width[1], (number, longest, width)
        right = cells.first.evaluate(
            """c => c.closest("table").getBoundingClientRect().right -
            document.querySelector(".reveal .slides")
                .getBoundingClientRect().right"""
        )
        assert right <= 0, (number, right)


def test_an_options_radio_button_is_seen_from_the_back(deck, lesson):
    """On stage the page's 1rem radio buttons were 13 px (slides 37, 39,
    41: a rehearsal): which option is picked could not be seen from the
    back of a room. They are at least the stage's smallest text, 20 px."""
    number = _first_slide_of(lesson, "check")
    page = deck.open(f"present.html#/{number}")
    wait_ready(page)
    radio = page.locator(f'[data-slide="{number}"] .ex-radio').first
    expect(radio).to_be_visible()
    box = radio.bounding_box()
    assert box["height"] >= 20 and box["width"] >= 20, box


def test_the_arrow_past_a_fields_text_moves_the_deck(deck, lesson):
    """A presenter clicks into a discussion's notes and types the class's
    answer: Space types a space and an arrow moves the caret, but → with
    the caret after the last character moves the deck (and ← before the
    first moves it back), the text kept. Only Esc left the box, and a
    clicker that sends → and Space has no Esc (a rehearsal)."""
    number = _first_slide_of(lesson, "discussion")
    page = deck.open(f"present.html#/{number}")
    wait_ready(page)
    ex = page.locator(f'[data-slide="{number}"] .ex-discussion').first
    expect(ex).to_have_attribute("data-ex-ready", re.compile(".*"))
    box = ex.locator("textarea").first
    expect(box).to_be_visible()
    box.click()
    page.keyboard.type("two heads")
    where = "JSON.stringify(Reveal.getIndices())"
    before = page.evaluate(where)
    page.keyboard.press("Space")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowRight")  # over the space just typed
    expect(box).to_have_value("two heads ")
    expect(box).to_be_focused()
    assert page.evaluate(where) == before
    page.keyboard.press("ArrowRight")  # past the end: the deck's
    page.wait_for_function(f"{where} !== {json.dumps(before)}")
    expect(box).not_to_be_focused()
    page.keyboard.press("ArrowLeft")
    page.wait_for_function(f"{where} === {json.dumps(before)}")
    expect(box).to_have_value("two heads ")
    # Before the first character, ← is the deck's too.
    box.click()
    page.keyboard.press("Home")
    page.keyboard.press("ArrowLeft")
    page.wait_for_function(f"{where} !== {json.dumps(before)}")
    expect(box).to_have_value("two heads ")


def test_a_buckets_explanations_are_stage_sized(browser, built_site, lesson):
    """Every item sorted right, each bucket shows why its items belong
    there: at the stage's sizes (the page's 0.75rem was 12 px there,
    unreadable from the back of a room)."""
    number = _first_slide_of(lesson, "buckets")
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    try:
        page = context.new_page()
        page.goto(built_site.as_uri() + f"/present.html#/{number}")
        wait_ready(page)
        ex = page.locator(f'[data-slide="{number}"] .ex-buckets').first
        expect(ex).to_have_attribute("data-ex-ready", re.compile(".*"))
        # The right bucket of each item, from the answer key in the page.
        for group in ex.locator(".ex-key__group").all():
            bucket = group.get_attribute("data-ex-bucket")
            for item in group.locator("li[data-ex-item]").all():
                n = item.get_attribute("data-ex-item")
                ex.locator(
                    f'.ex-item[data-ex-item="{n}"] select.ex-select'
                ).select_option(bucket)
        ex.get_by_role("button", name="Check", exact=True).click()
        why = ex.locator(".ex-zone__explanation")
        expect(why.first).to_be_visible()
        small = page.evaluate(SIZES_JS)
    finally:
        context.close()
    assert not small, small


def _show_screen_of(page, selector: str) -> None:
    """The screen holding the first ``selector``, from its first step."""
    page.evaluate(
        """(sel) => {
        const screen = document.querySelector(sel).closest('section');
        const i = Reveal.getIndices(screen);
        Reveal.slide(i.h, i.v, -1);
    }""",
        selector,
    )


def _indices(page) -> str:
    return page.evaluate("JSON.stringify(Reveal.getIndices())")


def test_a_committed_prediction_shows_its_answer_then_its_why(deck):
    """Commit opens the answer and the why: the class sees the answer,
    the forward key shows the why under it (the answer stays in view),
    and back the answer alone again."""
    page = deck.open("present.html")
    wait_ready(page)
    _show_screen_of(page, ".reveal .exercise.ex-predict")
    ex = page.locator(".reveal section.present .exercise.ex-predict").first
    answer, why = (
        ex.locator("details.ex-key--answer"),
        ex.locator("details.ex-key--why"),
    )
    ex.locator("textarea").fill("my guess: one map per head")
    ex.locator('[data-ex-action="commit"]').click()
    expect(answer).to_have_js_property("open", True)
    expect(why).to_have_js_property("open", False)
    seen = """(d) => {
        const r = d.getBoundingClientRect();
        const top = document.elementFromPoint(r.x + r.width / 2, r.y + 20);
        return d.contains(top);
    }"""
    assert answer.evaluate(seen), "the answer is covered"
    screen = "((i) => [i.h, i.v])(Reveal.getIndices())"
    where = page.evaluate(screen)
    page.keyboard.press("ArrowRight")
    expect(why).to_have_js_property("open", True)
    assert why.evaluate(seen), "the why is covered"
    assert answer.evaluate(seen), "the why hid the answer it explains"
    assert answer.evaluate("(d) => d.getBoundingClientRect().bottom") <= (
        why.evaluate("(d) => d.getBoundingClientRect().top") + 1
    ), "the answer is not above its why"
    assert page.evaluate(screen) == where
    page.keyboard.press("ArrowLeft")
    expect(why).to_have_js_property("open", False)
    assert answer.evaluate(seen), "the answer is covered"


# From disk only, as at a projector with no network: stepping runs the
# same script over http (the other tests here run both), and this walk
# through every exercise is one of the suite's longest browser tests.
@pytest.mark.parametrize("deck", ["file"], indirect=True)
def test_the_forward_key_shows_every_answer_after_its_exercise(deck):
    """Answers in the deck are steps (issue 27): on every screen with an
    exercise, with nothing answered, the forward keys open each of its
    answer panels in turn, filled in and on stage; a hint is a step
    before them (a rehearsal with → alone never opened the discussion
    slides' hints: only a mouse did)."""
    page = deck.open("present.html")
    wait_ready(page)
    # Every fade still runs, and is waited for below, ten times faster
    # (DevTools' animation speed): the walk waited 33 of its 40 s on them.
    cdp = page.context.new_cdp_session(page)
    cdp.send("Animation.enable")
    cdp.send("Animation.setPlaybackRate", {"playbackRate": 10})
    found = page.evaluate(
        """() => [...document.querySelectorAll('.reveal .exercise')]
        .map((ex) => [Reveal.getIndices(ex.closest('section')),
            ex.querySelectorAll('details.ex-key:not(.ex-key--hint)').length,
            [...ex.querySelectorAll('details.ex-key--hint')].map((hint) =>
              hint.matches('.fragment') && [...ex.querySelectorAll(
                'details.ex-key:not(.ex-key--hint)')].every((key) =>
                +key.dataset.fragmentIndex > +hint.dataset.fragmentIndex))])"""
    )
    assert found and all(n and all(hints) for _, n, hints in found), found
    assert any(hints for _, _, hints in found), "no exercise has a hint"
    shown = """() => [...Reveal.getCurrentSlide().querySelectorAll(
        '.exercise details.ex-key[open]')]
        .filter((d) => d.checkVisibility({visibilityProperty: true}))
        .map((d) => { const r = d.getBoundingClientRect();
            return [d.className, r.top >= 0 && r.bottom <= innerHeight,
                    d.innerText.trim().split('\\n').length > 1]; })"""
    problems, seen, questions_seen, pairs_seen = [], set(), 0, 0
    for i, _, _ in found:
        page.evaluate(f"Reveal.slide({i['h']}, {i['v']}, -1)")
        while page.evaluate("Reveal.availableFragments().next"):
            page.keyboard.press("ArrowRight")
            # (Once the toggle events ran and reveal.js's fade ended.)
            page.evaluate(
                "() => new Promise((done) => requestAnimationFrame(() =>"
                " Promise.all(document.getAnimations().map((a) => a.finished))"
                ".then(done)))"
            )
            for name, inside, filled in page.evaluate(shown):
                seen.add((i["h"], i["v"], name))
                if not (inside and filled):
                    problems.append((i, name, inside, filled))
            if not page.evaluate(ON_TOP):
                problems.append((i, "the last step's panel is covered"))
            asked = page.evaluate(QUESTION_IN_VIEW)
            if asked is False:
                problems.append((i, "a short panel covers the question"))
            questions_seen += asked is True
            # Laid out again once every fade has ended, a panel is as
            # tall as it came up (it grew over a panel fading out).
            if page.evaluate(RELAID) > 1:
                problems.append((i, "the panel's height hangs on a fade"))
            paired = page.evaluate(ANSWER_WITH_WHY)
            if paired is False:
                problems.append(
                    (i, "the why hides its answer, or a band parts them")
                )
            pairs_seen += paired is True
    assert len(seen) >= sum(n for _, n, _ in found), seen
    assert not problems, problems
    # Most answers and hints are a few lines: the class still reads the
    # question above them (the panels covered the whole stage), and an
    # answer with its why (the why covered the answer).
    assert questions_seen >= 20, questions_seen
    whys = page.evaluate(
        "document.querySelectorAll('.reveal details.ex-key--why').length"
    )
    assert whys and pairs_seen >= whys / 2, (pairs_seen, whys)


#: The panel of the screen's latest step shown is what the class sees:
#: on slides 45, 47 and 49 a hint opened a step earlier covered the answer.
ON_TOP = """() => {
  const open = [...Reveal.getCurrentSlide().querySelectorAll(
    'details.deck-fold.fragment.visible')];
  if (!open.length) return true;
  const step = (d) => Number(d.getAttribute('data-fragment-index'));
  const last = open.reduce((a, b) => (step(a) > step(b) ? a : b));
  const r = last.getBoundingClientRect();
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + 20);
  return last.contains(hit);
}"""


#: With the latest step's panel open: null if there is room for the
#: panels shown below the exercise's question only without the question
#: (a tall panel may lay over it), else whether the question is seen.
QUESTION_IN_VIEW = """() => {
  const screen = Reveal.getCurrentSlide();
  const top = screen.querySelector('details.deck-fold--top[open]');
  const prompt = screen.querySelector('.exercise .ex-prompt');
  if (!top || !prompt) return null;
  const stage = document.querySelector('.reveal .slides')
    .getBoundingClientRect();
  const p = prompt.getBoundingClientRect();
  const room = stage.bottom - p.bottom;
  const shown = [...screen.querySelectorAll('details.deck-fold[open]')]
    .filter((d) => d.checkVisibility({visibilityProperty: true}));
  const reach = Math.min(...shown.map((d) => d.getBoundingClientRect().top));
  if (stage.bottom - reach > room) return null;
  const hit = document.elementFromPoint(p.left + 10, p.top + p.height / 2);
  return prompt.contains(hit);
}"""


#: How much the latest step's panel changes height when present.js
#: lays the screen's panels out again, now that nothing is fading.
RELAID = """() => {
  const top = Reveal.getCurrentSlide()
    .querySelector('details.deck-fold--top[open]');
  if (!top) return 0;
  const before = top.getBoundingClientRect().height;
  document.querySelector('.reveal').dispatchEvent(new Event('fragmentshown'));
  return Math.abs(top.getBoundingClientRect().height - before);
}"""


#: With an exercise's why the latest step: null if its answer and it
#: are together taller than the stage's room for a panel (the meta line
#: down), else whether the answer is seen, whole and just above the why
#: (its last line at its foot: a blank band lay between them).
ANSWER_WITH_WHY = """() => {
  const screen = Reveal.getCurrentSlide();
  const why = screen.querySelector('details.ex-key--why.deck-fold--top[open]');
  const answer = why?.closest('.exercise')
    .querySelector('details.ex-key--answer[open]');
  if (!answer) return null;
  const room = parseFloat(getComputedStyle(why).maxHeight);
  if (answer.offsetHeight + why.offsetHeight > room) return null;
  const a = answer.getBoundingClientRect();
  const w = why.getBoundingClientRect();
  const hit = document.elementFromPoint(a.left + a.width / 2, a.bottom - 20);
  const foot = answer.lastElementChild.getBoundingClientRect().bottom;
  return answer.contains(hit) && a.bottom <= w.top + 1 && a.top >= 0
    && a.bottom - foot <= 24;
}"""


def test_the_deck_starts_each_exercise_on_its_first_numbers(deck):
    """A reading page draws an exercise's numbers at random; the deck
    starts on the first set, the author's, which the slides around it
    use (slide 39 asks about slide 38's layer)."""
    page = deck.open("present.html")
    wait_ready(page)
    shown = page.evaluate(
        """() => [...document.querySelectorAll('.reveal .exercise')]
        .filter((ex) => ex.hasAttribute('data-ex-spec'))
        .map((ex) => {
          const vars = JSON.parse(ex.getAttribute('data-ex-spec')).vars;
          const spans = [...ex.querySelectorAll('[data-ex-var]')];
          return [ex.id, vars.findIndex((v) => spans.every((s) =>
            s.textContent === v[s.getAttribute('data-ex-var')]))];
        })"""
    )
    assert len(shown) >= 5, shown
    assert all(index == 0 for _, index in shown), shown


def test_blacked_out_or_in_the_overview_the_clicker_moves_nothing_unseen(deck):
    """B blacks the screen: a next or back key (PageDown, Space, →,
    PageUp) brings it back and moves nothing (the class comes back to
    the screen it left; a press that did nothing read as a dead
    clicker). In the overview the arrows move between screens, not
    through a screen's hidden steps."""
    page = deck.open("present.html")
    wait_ready(page)
    _show_screen_of(page, ".reveal .slides section .fragment")
    where = _indices(page)
    # Black at once, with no lit button on it (reveal.js faded it in over
    # a second, and its Resume button shone on the black).
    black = """() => new Promise((done) => requestAnimationFrame(() => {
        const overlay = document.querySelector('.reveal .pause-overlay');
        const button = overlay.querySelector('.resume-button');
        done([Reveal.isPaused(), getComputedStyle(overlay).opacity,
              Number(getComputedStyle(button).opacity) <= 0.3]);
    }))"""
    for key in ("PageDown", "Space", "ArrowRight", "PageUp"):
        page.keyboard.press("b")
        assert page.evaluate(black) == [True, "1", True], key
        page.keyboard.press(key)
        page.wait_for_function("!Reveal.isPaused()")
        assert _indices(page) == where, key
    page.keyboard.press("b")
    page.wait_for_function("Reveal.isPaused()")
    page.keyboard.press("b")
    page.wait_for_function("!Reveal.isPaused()")
    page.keyboard.press("o")
    page.wait_for_function("Reveal.isOverview()")
    page.keyboard.press("ArrowRight")
    page.wait_for_function(
        f"Reveal.getIndices().h === {json.loads(where)['h']} + 1"
    )
    # A clicker's keys there (PageUp, PageDown; Space on a keyboard) move
    # a screen too, and show none of its steps: they stepped through the
    # hidden steps, and an answer was open when the overview closed.
    for key in ("PageUp", "PageDown", "Space", "PageUp"):
        before = json.loads(_indices(page))
        page.keyboard.press(key)
        page.wait_for_function(
            "([h, v]) => Reveal.getIndices().h !== h"
            " || Reveal.getIndices().v !== v",
            arg=[before["h"], before["v"]],
        )
        steps = page.evaluate(
            "Reveal.getCurrentSlide().querySelectorAll('.fragment.visible')"
            ".length"
        )
        assert steps == 0, (key, _indices(page))
    shown = (
        "document.querySelectorAll("
        "'.reveal section.present .fragment.visible').length"
    )
    page.keyboard.press("Escape")
    page.wait_for_function("!Reveal.isOverview()")
    assert page.evaluate(shown) == 0, _indices(page)
    # Left on an earlier screen, by ← (reveal.js shows a passed screen
    # with every step taken) or a click on its thumbnail, the deck shows
    # it from its first step: its answers were open before the class was
    # asked. Left on the screen it was opened from, it is as it was.
    target = page.evaluate(
        """() => Reveal.getHorizontalSlides().findIndex((s, h) => h > 0
          && s.querySelector(':scope > section:first-child .fragment'))"""
    )
    page.evaluate(f"Reveal.slide({target + 1}, 0, -1)")
    page.keyboard.press("o")
    page.wait_for_function("Reveal.isOverview()")
    page.keyboard.press("ArrowLeft")
    page.wait_for_function(f"Reveal.getIndices().h === {target}")
    page.keyboard.press("Escape")
    page.wait_for_function("!Reveal.isOverview()")
    page.wait_for_function(f"{shown} === 0")
    page.keyboard.press("ArrowRight")  # a step taken on this screen
    page.wait_for_function(f"{shown} === 1")
    page.keyboard.press("o")
    page.wait_for_function("Reveal.isOverview()")
    page.keyboard.press("Escape")
    page.wait_for_function("!Reveal.isOverview()")
    assert page.evaluate(shown) == 1, _indices(page)
    page.evaluate(f"Reveal.slide({target + 1}, 0, -1)")
    page.keyboard.press("o")
    page.wait_for_function("Reveal.isOverview()")
    page.locator(
        f".reveal .slides > section:nth-child({target + 1})"
        " > section:first-child"
    ).click()
    page.wait_for_function("!Reveal.isOverview()")
    page.wait_for_function(
        f"Reveal.getIndices().h === {target} && {shown} === 0"
    )


def test_verdict_marks_are_stage_sized_and_the_arrows_whole(deck):
    """After a real Check, each item's mark ("✗ wrong bucket") is body
    text on the stage (the page's size was 12 px there); the navigation
    arrows lie wholly inside the window (their tips were cut off)."""
    page = deck.open("present.html")
    wait_ready(page)
    _show_screen_of(page, ".reveal .exercise.ex-buckets")
    ex = page.locator(".reveal section.present .exercise.ex-buckets").first
    picks = ex.locator("select")
    for i in range(picks.count()):  # sorted (all in one bucket is no try)
        picks.nth(i).select_option(index=1 + i % 2)
    ex.get_by_role("button", name="Check", exact=True).click()
    sizes = ex.evaluate(
        """(el) => [...el.querySelectorAll('.ex-mark')]
        .filter((m) => m.textContent.trim())
        .map((m) => parseFloat(getComputedStyle(m).fontSize))"""
    )
    assert sizes and min(sizes) >= 24, sizes
    tops = page.evaluate(
        """() => [...document.querySelectorAll('.reveal .controls button')]
        .filter((b) => b.checkVisibility())
        .map((b) => b.getBoundingClientRect().top)"""
    )
    assert tops and min(tops) >= 0, tops


def test_the_deck_keeps_its_own_answers_and_resets_them(deck, lesson):
    """Answers typed on a reading page never show on the projector; the
    deck's own last through reloads of the lecture, and "Reset all
    answers" clears them (the reading page's stay)."""
    option = '.ex-option[data-ex-option="C"] input'
    reading = deck.open(reading_page(lesson, CHECK_SLIDE))
    page_ex = reading.locator(".ex-check").first
    expect(page_ex).to_have_attribute("data-ex-ready", re.compile(".*"))
    page_ex.locator('.ex-option[data-ex-option="C"] label').click()
    page_ex.get_by_role("button", name="Check", exact=True).click()

    page = deck.open(f"present.html#/{CHECK_SLIDE}")
    wait_ready(page)
    ex = page.locator(f'[data-slide="{CHECK_SLIDE}"] .ex-check').first
    expect(ex).to_have_attribute("data-ex-ready", re.compile(".*"))
    expect(ex.locator(option)).not_to_be_checked()
    ex.locator('.ex-option[data-ex-option="B"] label').click()
    ex.get_by_role("button", name="Check", exact=True).click()
    page.reload()
    wait_ready(page)
    expect(ex.locator('.ex-option[data-ex-option="B"] input')).to_be_checked()

    reset = page.locator(
        ".reveal .slides > section > section.present .deck-reset"
    )
    expect(reset).to_be_visible()
    # It asks first: declined, nothing is cleared; accepted, all is.
    asked = []

    def answer(dialog, accept):
        asked.append(dialog.message)
        dialog.accept() if accept else dialog.dismiss()

    page.once("dialog", lambda d: answer(d, False))
    reset.click()
    assert asked == ["Clear every answer given in this deck?"]
    expect(ex.locator('.ex-option[data-ex-option="B"] input')).to_be_checked()
    page.once("dialog", lambda d: answer(d, True))
    reset.click()
    wait_ready(page)
    expect(
        ex.locator('.ex-option[data-ex-option="B"] input')
    ).not_to_be_checked()
    reading.reload()
    expect(reading.locator(".ex-check").first.locator(option)).to_be_checked()


def test_a_second_deck_tab_is_a_new_lecture_that_leaves_the_first(deck):
    """A new tab starts with the deck's exercises empty, and the answers
    given in the first tab are still there when it reloads (R and back):
    opening the deck again cleared every tab's answers."""
    option = '.ex-option[data-ex-option="B"] input'
    first = deck.open(f"present.html#/{CHECK_SLIDE}")
    wait_ready(first)
    ex = first.locator(f'[data-slide="{CHECK_SLIDE}"] .ex-check').first
    expect(ex).to_have_attribute("data-ex-ready", re.compile(".*"))
    ex.locator('.ex-option[data-ex-option="B"] label').click()
    ex.get_by_role("button", name="Check", exact=True).click()
    expect(ex.locator(option)).to_be_checked()

    second = deck.open(f"present.html#/{CHECK_SLIDE}")  # a tab beside it
    wait_ready(second)
    other = second.locator(f'[data-slide="{CHECK_SLIDE}"] .ex-check').first
    expect(other).to_have_attribute("data-ex-ready", re.compile(".*"))
    expect(other.locator(option)).not_to_be_checked()

    first.reload()
    wait_ready(first)
    expect(ex).to_have_attribute("data-ex-ready", re.compile(".*"))
    expect(ex.locator(option)).to_be_checked()


def test_r_and_shift_p_keep_the_place(deck, lesson):
    """R opens the reading page at the heading of the screen on stage;
    Shift+P there comes back to the same screen and step."""
    stack = f'[data-slide="{SLIDE}"]'
    page = deck.open(f"present.html#/{SLIDE}")
    wait_ready(page)
    screens = page.locator(f"{stack} > section").count()
    assert screens > 1, f"slide {SLIDE} is expected to have several screens"
    page.evaluate(f"Reveal.slide({SLIDE - 1}, {screens - 1}, 0)")
    heading = page.locator(f"{stack} > section.present .deck-body h2").first
    anchor = heading.get_attribute("id").split("-", 1)[1]
    page.locator("body").press("r")
    expect(page).to_have_url(re.compile(f"#{re.escape(anchor)}$"))
    expect(page.locator(f"h2#{anchor}")).to_be_in_viewport()
    page.keyboard.press("Shift+P")
    wait_ready(page)
    page.wait_for_function(
        f"Reveal.getIndices().v === {screens - 1} && "
        "Reveal.getIndices().f === 0"
    )
    assert on_slide(page) == SLIDE


def test_back_after_r_returns_to_the_step_just_reached(deck, lesson):
    """R pressed at once after a move (reveal.js writes the address a
    second late), then the browser's Back: the deck opens at that step,
    not the one before it."""
    page = deck.open(f"present.html#/{SLIDE}")
    wait_ready(page)
    body = page.locator("body")
    body.press("ArrowRight")  # a step: the address names screen and step
    page.wait_for_function(
        "location.hash === '#' + Reveal.getSlidePath() && "
        "location.hash.split('/').length === 4"
    )
    for _ in range(2):
        before = page.evaluate("JSON.stringify(Reveal.getIndices())")
        body.press("ArrowRight")
        page.wait_for_function(
            "(w) => JSON.stringify(Reveal.getIndices()) !== w", arg=before
        )
    where = page.evaluate("JSON.stringify(Reveal.getIndices())")
    body.press("r")
    expect(page).to_have_url(
        re.compile(re.escape(reading_page(lesson, SLIDE)))
    )
    page.go_back()
    wait_ready(page)
    assert page.evaluate("JSON.stringify(Reveal.getIndices())") == where


def test_after_r_a_reader_who_scrolled_gets_the_screen_read(deck, lesson):
    """R from slide 15's last screen, then the reader scrolls back to the
    top by hand: Shift+P opens the first screen, not the one R left."""
    page = deck.open(f"present.html#/{SLIDE}")
    wait_ready(page)
    screens = page.locator(f'[data-slide="{SLIDE}"] > section').count()
    page.evaluate(f"Reveal.slide({SLIDE - 1}, {screens - 1}, 0)")
    page.locator("body").press("r")
    page.wait_for_function("window.scrollY > 0")
    page.mouse.move(640, 400)
    while page.evaluate("window.scrollY") > 0:
        page.mouse.wheel(0, -2000)
    page.keyboard.press("Shift+P")
    wait_ready(page)
    page.wait_for_function("Reveal.getIndices().v === 0")
    assert on_slide(page) == SLIDE


def test_shift_p_on_a_fresh_reading_page_opens_the_screen_read(deck, lesson):
    """A reading page opened on its own (no deck visited), scrolled to a
    heading: Shift+P opens the deck on the screen that shows it, and the
    Present link does the same."""
    page = deck.open(reading_page(lesson, SLIDE))
    anchors = page.eval_on_selector_all(
        "article h2[id]", "(hs) => hs.map((h) => h.id)"
    )
    assert anchors, f"slide {SLIDE}'s reading page has no section heading"
    for i, anchor in enumerate(anchors):
        page.goto(page.url.split("#")[0])
        page.evaluate("window.sessionStorage.clear()")
        page.locator(f"h2#{anchor}").evaluate(
            "(h) => window.scrollTo(0, h.getBoundingClientRect().top + "
            "window.scrollY - document.querySelector('.md-header')"
            ".getBoundingClientRect().bottom)"
        )
        if i % 2:
            page.locator(".present-link").click()
        else:
            page.locator("body").press("Shift+P")
        wait_ready(page)
        shown = page.locator(
            f'[data-slide="{SLIDE}"] > section.present #s{SLIDE}-{anchor}'
        )
        expect(shown).to_have_count(1)
        assert on_slide(page) == SLIDE


#: The keys a clicker or a keyboard sends for "next".
NEXT_KEYS = ("ArrowRight", "Space", "PageDown")


def test_next_keys_step_through_every_screen_and_step(browser, built_site):
    """From the first screen to the last by "next" keys only: every
    screen and every step, in order, each step showing something, no
    screen opening on a hidden step. The keys take turns (→, Space,
    PageDown, →, ...), so each is seen to move exactly one step, at a
    third of the deck's places, in one pass."""
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    try:
        page = context.new_page()
        page.goto(built_site.as_uri() + "/present.html#/1")
        wait_ready(page)
        expected = page.evaluate(
            "Reveal.getTotalSlides() + "
            "document.querySelectorAll('.reveal .slides .fragment').length"
        )
        seen, problems, pressed = [], [], []
        while True:
            state = page.evaluate(STATE_JS)
            seen.append(state["where"])
            problems += state["problems"]
            if state["last"]:
                break
            key = NEXT_KEYS[len(pressed) % len(NEXT_KEYS)]
            pressed.append(key)
            page.keyboard.press(key)
            page.wait_for_function(
                "(w) => JSON.stringify(Reveal.getIndices()) !== w",
                arg=json.dumps(state["indices"]),
            )
    finally:
        context.close()
    assert len(set(seen)) == len(seen), "a key went back or stood still"
    assert len(seen) == expected, (
        f"next keys visited {len(seen)} screens and steps of {expected}"
    )
    assert set(pressed) == set(NEXT_KEYS)
    assert not problems, "\n".join(problems)


def test_a_fold_step_on_stage_is_open_however_it_was_reached(
    browser, built_site
):
    """Backwards from the last screen to the first, then by a reload at
    a fold's step: every fold that is a shown step is open (its panel
    never comes up empty), every hidden one closed."""
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    try:
        page = context.new_page()
        page.goto(built_site.as_uri() + "/present.html#/1")
        wait_ready(page)
        page.keyboard.press("End")
        page.wait_for_function("Reveal.isLastSlide()")
        wrong, folds = [], []
        while True:
            state = page.evaluate(FOLDS_JS)
            wrong += state["wrong"]
            folds += [state["hash"]] * state["shown"]
            if state["first"]:
                break
            page.keyboard.press("ArrowLeft")
            page.wait_for_function(
                "(w) => JSON.stringify(Reveal.getIndices()) !== w",
                arg=json.dumps(state["indices"]),
            )
        assert folds, "no fold step found on the way back"
        page.goto(built_site.as_uri() + "/present.html" + folds[0])
        page.reload()
        wait_ready(page)
        wrong += page.evaluate(FOLDS_JS)["wrong"]
    finally:
        context.close()
    assert not wrong, "\n".join(wrong)


def test_a_hint_on_a_screen_reached_by_the_clicker_shows(browser, built_site):
    """Every exercise's hint, on a screen reached by → from the one before
    at its last step, then stepped to with →: its panel shows, open and
    on stage. (A panel a step left on top in screen 1 of slides 24 and
    48 hid a hint opened on screen 2; hints were then opened by a click,
    out of a clicker's reach.)"""
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    try:
        page = context.new_page()
        page.goto(built_site.as_uri() + "/present.html#/1")
        wait_ready(page)
        every = screens(page)
        wrong, seen = [], 0
        for (h0, v0, _), (h, v, name) in zip(every, every[1:], strict=False):
            count = page.evaluate(
                f"document.querySelectorAll('.reveal .slides > section')[{h}]"
                f".querySelectorAll(':scope > section')[{v}]"
                ".querySelectorAll('details.ex-key--hint').length"
            )
            if not count:
                continue
            page.evaluate(f"Reveal.slide({h0}, {v0})")
            page.evaluate(LAST_STEP_JS)
            page.keyboard.press("ArrowRight")
            page.wait_for_function(
                "([h, v]) => { const i = Reveal.getIndices();"
                " return i.h === h && i.v === v; }",
                arg=[h, v],
            )
            hints = page.locator(
                ".reveal .slides > section > section.present "
                "details.ex-key--hint"
            )
            for i in range(count):
                hint = hints.nth(i)
                for _ in range(20):  # the screen's steps, at most
                    if "visible" in (hint.get_attribute("class") or ""):
                        break
                    page.keyboard.press("ArrowRight")
                else:
                    wrong.append(f"{name}: → never showed hint {i + 1}")
                    continue
                # (Once its toggle ran and reveal.js's fade ended.)
                page.evaluate(
                    "() => new Promise((done) => requestAnimationFrame(() =>"
                    " Promise.all(document.getAnimations().map((a) =>"
                    " a.finished)).then(done)))"
                )
                seen += 1
                problem = hint.locator("summary").evaluate(
                    CLICKED_JS, [WIDTH, HEIGHT]
                )
                if problem:
                    wrong.append(f"{name}: {problem}")
    finally:
        context.close()
    assert seen, "no exercise hint found in the deck"
    assert not wrong, "\n".join(wrong)


#: A fold just opened: is its panel shown, and on stage?
CLICKED_JS = """(summary, [width, height]) => {
  const fold = summary.parentElement;
  const title = summary.textContent.trim().slice(0, 40);
  if (!fold.open) return `"${title}" did not open`;
  if (!fold.checkVisibility({visibilityProperty: true, opacityProperty: true}))
    return `"${title}" opened hidden`;
  const r = fold.getBoundingClientRect();
  if (r.top < 0 || r.left < 0 || r.bottom > height + 1 ||
      r.right > width + 1)
    return `"${title}" off stage (${Math.round(r.top)}` +
      `-${Math.round(r.bottom)})`;
  return "";
}"""


#: The current screen's fold steps: which are shown but closed, or
#: hidden but open.
FOLDS_JS = """() => {
  const i = Reveal.getIndices();
  const screen = Reveal.getCurrentSlide();
  const wrong = [];
  let shown = 0;
  for (const fold of screen.querySelectorAll('details.deck-fold.fragment')) {
    const visible = fold.classList.contains('visible');
    shown += visible;
    const state = visible ? 'shown but closed' : 'hidden but open';
    if (visible !== fold.open)
      wrong.push(`#${Reveal.getSlidePath()}: a fold ${state}`);
  }
  // (The address bar follows a second late: reveal.js's own path.)
  const hash = '#' + Reveal.getSlidePath();
  return {indices: i, hash, wrong, shown,
          first: Reveal.isFirstSlide() && !Reveal.availableFragments().prev};
}"""


#: Where the deck is, and what is wrong with what is on stage now.
STATE_JS = """() => {
  const i = Reveal.getIndices();
  const screen = Reveal.getCurrentSlide();
  const name = 'slide ' + screen.closest('[data-slide]').dataset.slide +
    ', screen ' + (i.v + 1);
  const problems = [];
  const first = screen.querySelector('.deck-body > *');
  if (i.f === undefined || i.f < 0) {
    if (first && first.classList.contains('fragment'))
      problems.push(name + ' opens on a hidden step');
  } else {
    const step = screen.querySelector('.fragment.current-fragment');
    const r = step && step.getBoundingClientRect();
    if (!step || !step.checkVisibility() || r.height < 2 ||
        !step.textContent.trim())
      problems.push(name + `, step ${i.f}: nothing new on screen`);
  }
  return {indices: i, where: `${i.h}/${i.v}/${i.f}`, problems,
          last: Reveal.isLastSlide() && !Reveal.availableFragments().next};
}"""


def test_the_help_overlay_fits(deck):
    page = deck.open("present.html#/1")
    wait_ready(page)
    page.keyboard.press("Shift+Slash")  # "?"
    rows = page.locator(".r-overlay-help table tr")
    expect(rows.first).to_be_visible()
    bottom = max(
        r["y"] + r["height"]
        for r in (rows.nth(i).bounding_box() for i in range(rows.count()))
    )
    assert bottom <= HEIGHT, f"the help overlay ends at {bottom}px"
    # And in a window with the browser's bars on a 720 px screen.
    page.set_viewport_size({"width": WIDTH, "height": 600})
    box = rows.last.bounding_box()
    assert box["y"] + box["height"] <= 600, box
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    help_ = page.locator(".r-overlay-help")
    expect(help_).to_contain_text("Reading page")
    expect(help_).to_contain_text("Shift+P there: back")  # the way back
    # A clicker's → in an answer box types: the way out is listed.
    expect(help_).to_contain_text("ESC in an answer box")
    # In this deck's words: → is a step, a clicker's keys are named, and
    # Shift+↑/↓ is the slide's screens (reveal.js's lines were shown).
    expect(help_).to_contain_text("Next step (clicker: PageDown)")
    expect(help_).to_contain_text("screen of this slide")
    expect(help_).not_to_contain_text("Jump to first/last slide")
    expect(help_).not_to_contain_text("Next slide")
    # A clicker's → closes the help and moves nothing behind it.
    where = page.evaluate("JSON.stringify(Reveal.getIndices())")
    page.keyboard.press("ArrowRight")
    expect(help_).to_have_count(0)
    assert page.evaluate("JSON.stringify(Reveal.getIndices())") == where
    # "?" again closes it too (reveal.js's help took Esc alone); a "?"
    # of another keyboard (no Shift on the US key) opens it, and blacked
    # out the screen.
    for key in ("Shift+Slash", "?"):
        page.keyboard.press(key)
        expect(help_).to_be_visible()
        page.keyboard.press(key)
        expect(help_).to_have_count(0)
        assert not page.evaluate("Reveal.isPaused()")


def test_a_reload_right_after_a_step_keeps_that_step(deck):
    """reveal.js writes a move into the address a second late: a reload
    within that second went back to the step before (a rehearsal). The
    address names each step as it is taken."""
    page = deck.open("present.html#/20")
    wait_ready(page)
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    taken = page.evaluate("JSON.stringify(Reveal.getIndices())")
    assert page.evaluate("location.hash") == page.evaluate(
        "'#' + Reveal.getSlidePath()"
    )
    page.reload()
    wait_ready(page)
    page.wait_for_function(
        f"JSON.stringify(Reveal.getIndices()) === {taken!r}"
    )


def test_shift_arrows_jump_to_the_first_and_last_slide(deck):
    """As the help overlay says (reveal.js's own keys)."""
    page = deck.open("present.html#/20")
    wait_ready(page)
    page.keyboard.press("Shift+ArrowLeft")
    page.wait_for_function("Reveal.isFirstSlide()")
    page.keyboard.press("Shift+ArrowRight")
    page.wait_for_function("Reveal.isLastSlide()")


def test_a_link_to_a_slide_moves_the_deck_not_the_tab(deck):
    """ "(slide 17)" on the projector, clicked, put the reading page in
    the deck's tab, and in the speaker view a notes link took the notes
    and the timer's window (a rehearsal). In the deck a slide's link
    goes to that slide's first screen, nothing of it shown yet; in the
    notes a link opens a tab, and one to the slide itself ("#", which
    sent the deck to slide 1) is plain text."""
    page = deck.open("present.html#/3")
    wait_ready(page)
    found = page.evaluate(
        """() => {
          const stacks = [
            ...document.querySelectorAll('.reveal .slides > section')];
          const at = (path) =>
            stacks.findIndex((s) => s.dataset.reading === path);
          for (const [h, stack] of stacks.entries()) {
            for (const link of stack.querySelectorAll('a[href]')) {
              const to = at(link.getAttribute('href'));
              if (to >= 0 && to !== h) {
                link.setAttribute('data-test-link', '');
                return { h, to };
              }
            }
          }
          return null;
        }"""
    )
    assert found, "no screen links to another slide"
    page.evaluate("document.querySelector('[data-test-link]').click()")
    page.wait_for_function(f"Reveal.getIndices().h === {found['to']}")
    assert page.evaluate("Reveal.getIndices().v") == 0
    shown = "Reveal.getCurrentSlide().querySelectorAll('.fragment.visible')"
    assert page.evaluate(f"{shown}.length") == 0
    assert page.url.split("#")[0].endswith("present.html"), page.url
    page.wait_for_selector(".reveal aside.notes", state="attached")
    links = page.evaluate(
        """[...document.querySelectorAll('.reveal aside.notes a')].map(
          (a) => [a.getAttribute('href'), a.target])"""
    )
    assert links, "no links in the notes"
    wrong = [
        (h, t)
        for h, t in links
        if h is not None
        and (h.startswith("#") or t != "_blank" or "://" not in h)
    ]
    assert wrong == [], wrong[:5]
    # A slide's own "Reading page" link still opens its reading page (a
    # fresh check: the first version took it for a link into the deck).
    reading = page.evaluate(
        "Reveal.getCurrentSlide().querySelector('a.deck-reading')"
        ".getAttribute('href')"
    )
    page.evaluate(
        "Reveal.getCurrentSlide().querySelector('a.deck-reading').click()"
    )
    page.wait_for_url(f"**/{reading}*")


def test_the_next_key_enters_a_slide_at_its_first_screen(deck):
    """A slide once left from a later screen (G back to the slide before
    it, mid-lecture) is entered again at its first screen: reveal.js
    went back to the screen last shown, skipping the ones before it,
    and the deck's "12 / 55" said nothing of it (a rehearsal)."""
    page = deck.open("present.html")
    wait_ready(page)
    h = page.evaluate(
        """() => Reveal.getHorizontalSlides().findIndex((s, i) =>
             i > 0 && s.querySelectorAll(':scope > section').length > 2)"""
    )
    assert h > 0
    last = page.evaluate(
        f"Reveal.getHorizontalSlides()[{h}]"
        ".querySelectorAll(':scope > section').length - 1"
    )
    page.evaluate(f"Reveal.slide({h}, {last}, -1)")
    page.keyboard.press("g")
    page.keyboard.type(str(h))  # the slide before it (numbers from 1)
    page.keyboard.press("Enter")
    page.wait_for_function(f"Reveal.getIndices().h === {h - 1}")
    for _ in range(60):
        if page.evaluate("Reveal.getIndices().h") == h:
            break
        page.keyboard.press("ArrowRight")
    indices = page.evaluate("Reveal.getIndices()")
    assert (indices["h"], indices["v"]) == (h, 0), indices
    assert indices["f"] in (-1, None), indices


@pytest.mark.parametrize("deck", ["file"], indirect=True)
def test_a_jump_lands_on_its_first_step_and_escape_goes_back(deck, lesson):
    """G, then a slide's number: reveal.js showed a slide behind the
    current one with every step taken (a rehearsal: "back to slide 30"
    gave the class its answer), and moved there as the number was
    typed. The jump lands on the screen's first step, nothing of its
    exercise shown, and only on Enter; Escape in the box, which the
    deck's own Escape (leave a text field) swallowed, closes it where
    the jump began."""
    target = next(
        s.number for s in lesson.slides if s.number > 2 and s.exercises
    )
    page = deck.open(f"present.html#/{target + 3}")
    wait_ready(page)
    page.keyboard.press("ArrowRight")
    page.keyboard.press("g")
    page.keyboard.type(str(target))
    page.keyboard.press("Enter")
    page.wait_for_function(f"Reveal.getIndices().h === {target - 1}")
    shown = (
        "Reveal.getCurrentSlide().querySelectorAll('.fragment.visible').length"
    )
    assert page.evaluate("Reveal.getIndices().f") == -1
    assert page.evaluate(shown) == 0
    opened = (
        "Reveal.getCurrentSlide().querySelectorAll('details[open]').length"
    )
    assert page.evaluate(opened) == 0
    landed = page.evaluate("Reveal.getIndices()")
    page.keyboard.press("g")
    page.keyboard.type(str(target + 2))
    page.keyboard.press("Escape")
    page.wait_for_selector(".reveal .jump-to-slide", state="detached")
    assert page.evaluate("Reveal.getIndices()") == landed
    assert page.evaluate(opened) == 0
    assert not page.evaluate("Reveal.isOverview()")
    assert not page.locator(".reveal .jump-to-slide").count()
    # A number past the last slide goes to the last (it did nothing).
    page.keyboard.press("g")
    page.keyboard.type("999")
    page.keyboard.press("Enter")
    page.wait_for_function("Reveal.isLastSlide()")
    assert page.evaluate("Reveal.getIndices().v") == 0


#: Every screen of the deck laid out one under the other, every step
#: shown and every fold open, so that one axe run sees all of them.
ALL_SCREENS_JS = """() => {
  const style = document.createElement('style');
  style.textContent = `
    .reveal .slides, .reveal .slides section, .reveal .deck-fold {
      position: static !important; display: block !important;
      transform: none !important; height: auto !important;
      width: auto !important; }
    .reveal .slides .fragment { opacity: 1 !important;
      visibility: visible !important; }`;
  document.head.appendChild(style);
  for (const s of document.querySelectorAll('.reveal .slides section')) {
    for (const a of ['hidden', 'aria-hidden', 'inert']) s.removeAttribute(a);
  }
  for (const d of document.querySelectorAll('.reveal details')) d.open = true;
}"""


def test_the_deck_passes_axe_on_every_screen(browser, built_site):
    """axe: no serious or critical violation on any screen, every step
    shown and every fold open, nor on reveal's controls."""
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    try:
        page = context.new_page()
        page.goto(built_site.as_uri() + "/present.html#/1")
        wait_ready(page)
        found = serious_violations(page, ".reveal .controls")
        page.evaluate(ALL_SCREENS_JS)
        found += serious_violations(page, ".reveal .slides")
    finally:
        context.close()
    assert not found, "axe: serious or critical in the deck:\n" + "\n".join(
        found
    )


# --- every screen fits ------------------------------------------------------

#: Every screen of the deck: [h, v, "slide N, screen M: title"].
SCREENS_JS = """() => [
  ...document.querySelectorAll('.reveal .slides > section')]
  .flatMap((stack, h) => [...stack.querySelectorAll(':scope > section')]
    .map((s, v, all) => [h, v, `slide ${stack.dataset.slide}` +
      (all.length > 1 ? `, screen ${v + 1}` : '') +
      ` (${stack.dataset.title})`]))"""

#: An exercise's own step (a later fold is a panel over it), folds shut.
EXERCISE_STEP_JS = """(ex) => {
  const idx = Reveal.getIndices();
  const step = ex.closest('.fragment')?.dataset.fragmentIndex;
  Reveal.slide(idx.h, idx.v, step === undefined ? -1 : Number(step));
  for (const d of Reveal.getCurrentSlide().querySelectorAll('details'))
    d.open = false;
}"""
#: Every step of the current screen shown.
LAST_STEP_JS = """() => {
  const idx = Reveal.getIndices();
  Reveal.slide(idx.h, idx.v,
    Reveal.getCurrentSlide().querySelectorAll('.fragment').length);
}"""
#: The last step's panel, risen from the stage's bottom, cuts no title,
#: paragraph, list, formula or code block of its screen across: each is
#: whole above the panel's edge or under it (to a few pixels: a title's
#: box starts above its letters).
CUT_JS = """() => {
  const top = Reveal.getCurrentSlide().querySelector(
    'details.deck-fold--top[open]');
  if (!top) return [];
  const edge = top.getBoundingClientRect().top;
  const blocks = '.deck-body > :is(h1, h2, h3, p, ul, ol, table, ' +
    '.arithmatex, .highlight)';
  return [...Reveal.getCurrentSlide().querySelectorAll(blocks)]
    .filter((b) => { const r = b.getBoundingClientRect();
      return r.top < edge - 6 && edge + 6 < r.bottom; })
    .map((b) => `the panel cuts "${b.textContent.trim().slice(0, 40)}"`);
}"""
#: Every step shown and every fold open: the screen's tallest state
#: (each fold is a panel over the stage).
OPEN_ALL_JS = f"""() => {{
  ({LAST_STEP_JS})();
  const screen = Reveal.getCurrentSlide();
  for (const d of screen.querySelectorAll('details')) d.open = true;
  for (const f of screen.querySelectorAll('.fragment'))
    f.classList.add('visible');
}}"""

#: Problems on the current screen: boxes outside the 1280x720 stage,
#: boxes whose content is cut off or scrolls, and controls under reveal's
#: arrows. Closed <details> content and the speaker notes are not on
#: screen; steps not yet shown still count.
OVERFLOW_JS = """(width) => {
  const stage = document.querySelector('.reveal .slides')
    .getBoundingClientRect();
  const arrows = document.querySelector('.reveal .controls')
    .getBoundingClientRect();
  const scale = stage.width / width;
  const found = [];
  const name = (el) => el.tagName.toLowerCase() +
    [...el.classList].map((c) => '.' + c).join('');
  for (const el of Reveal.getCurrentSlide().querySelectorAll('*')) {
    if (el.closest('aside.notes') || !el.checkVisibility()) continue;
    if (el.closest('.katex') && !el.classList.contains('katex')) continue;
    const r = el.getBoundingClientRect();
    // Also skips visually hidden text for screen readers (.ex-sr).
    if (r.width <= 1 || r.height <= 1) continue;
    const out = Math.max(r.bottom - stage.bottom, r.right - stage.right,
                         stage.left - r.left, stage.top - r.top) / scale;
    if (out > 1) found.push(`${name(el)} ${Math.round(out)}px outside`);
    const st = getComputedStyle(el);
    const cut = (axis, over, size) =>
      /auto|scroll|hidden|clip/.test(axis) && over - size > 1;
    // An inline formula read across two lines ("i =" / "0, ..., h-1").
    if (el.classList.contains('katex') && el.getClientRects().length > 1)
      found.push(`formula across lines: "${el.textContent.slice(0, 30)}"`);
    if (el.tagName !== 'DETAILS' &&
        (cut(st.overflowY, el.scrollHeight, el.clientHeight) ||
         cut(st.overflowX, el.scrollWidth, el.clientWidth)))
      found.push(`${name(el)} clipped or scrolling`);
    if (el.matches('a, button, input, select, textarea, summary, label') &&
        r.right > arrows.left && r.left < arrows.right &&
        r.bottom > arrows.top && r.top < arrows.bottom)
      found.push(`${name(el)} under the navigation arrows`);
  }
  // The screen itself, with its margins: taller than the stage, present.js
  // shows it grown, scrolling under a "more below" cue that covers its
  // last line (slide 43 was, every element inside the stage).
  const screen = Reveal.getCurrentSlide();
  const grown = screen.classList.contains('deck-grown');
  screen.classList.remove('deck-grown');
  const over = screen.scrollHeight - Reveal.getConfig().height;
  screen.classList.toggle('deck-grown', grown);
  if (over > 1)
    found.push(`the screen is ${over}px taller than the stage`);
  return found;
}"""

#: Text on the current screen below its stage size (in stage pixels):
#: body text 24, code, tables and controls 20; math 16, KaTeX's script
#: size of 23 px text (an underbrace's or an arrow's label in script of
#: script was 13.7 px on slides 12 and 20: unreadable at the back).
SIZES_JS = """() => {
  const found = [];
  const least = (el) => el.closest('.katex') ? 16 : el.closest(
    'pre, code, table, .filename, button, label, select, .ex-actions,' +
    '.ex-field-hint, .ex-zone__name, .ex-label, .deck-meta,' +
    'figcaption') ? 20 : 24;
  for (const el of Reveal.getCurrentSlide().querySelectorAll('*')) {
    if (el.closest('aside.notes, .katex-mathml') || !el.checkVisibility())
      continue;
    if (el.closest('.ex-sr')) continue;
    const text = [...el.childNodes].some(  // not KaTeX's zero-width struts
      (n) => n.nodeType === 3 && /[^\\s\u200b]/.test(n.nodeValue));
    if (!text) continue;
    const size = parseFloat(getComputedStyle(el).fontSize);
    if (size < least(el) - 0.01)
      found.push(`${el.tagName.toLowerCase()} "${el.textContent.trim()
        .slice(0, 30)}" at ${size}px (at least ${least(el)})`);
  }
  return found;
}"""


def screens(page) -> list:
    return page.evaluate(SCREENS_JS)


def test_every_screen_and_step_fits_the_stage(full_chromium, built_site):
    """Every screen at its tallest (every step shown, every fold open),
    then again after each exercise's first Check or Commit: nothing
    outside the 1280x720 stage, cut off, scrolling, under the arrows or
    below its stage size, in the Chromium an instructor presents with."""
    context = full_chromium.new_context(
        viewport={"width": WIDTH, "height": HEIGHT}
    )
    try:
        page = context.new_page()
        page.goto(built_site.as_uri() + "/present.html#/1")
        wait_ready(page)
        bad: list[str] = []
        every = screens(page)
        for h, v, name in every:
            page.evaluate(f"Reveal.slide({h}, {v}, -1)")
            # Every step shown, the folds and keys still closed (their
            # summary lines in the flow), then every fold open.
            page.evaluate(LAST_STEP_JS)
            found = [
                f"folds closed: {f}" for f in page.evaluate(OVERFLOW_JS, WIDTH)
            ]
            found += page.evaluate(CUT_JS)
            page.evaluate(OPEN_ALL_JS)
            found += page.evaluate(OVERFLOW_JS, WIDTH)
            found += page.evaluate(SIZES_JS)
            found += figure_labels(page, built_site)
            found += [f"after Check: {f}" for f in answered(page)]
            if found:
                bad.append(f"{name}: " + "; ".join(found[:3]))
    finally:
        context.close()
    assert len(every) <= MAX_SCREENS, (
        f"{len(every)} screens for {len(read_deck(ROOT).slides)} slides: at "
        f"most {MAX_SCREENS}, one idea a screen for one class. Move depth "
        'into the reading page (<div class="reading" markdown>) rather '
        'than add a <div class="screen-break">, or raise MAX_SCREENS in '
        "tests/browser/test_present.py with the slides a new screen adds."
    )
    assert not bad, (
        f"{len(bad)} screens do not fit the {WIDTH}x{HEIGHT} stage; mark "
        'what is reading-only in the slide (<div class="reading" '
        'markdown>) or break the screen (<div class="screen-break">):\n'
        + "\n".join(bad)
    )


def test_a_grown_screen_scrolls_to_its_verdict_and_shrinks_on_reset(
    browser, built_site
):
    """The first sorting exercise of the deck, every item put into one
    bucket and checked: taller than the stage, its screen scrolls with
    the cue and shows the verdict; Reset makes it fit again, cue gone."""
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    try:
        page = context.new_page()
        page.goto(built_site.as_uri() + "/present.html#/1")
        wait_ready(page)
        page.evaluate(
            """() => {
              const ex = document.querySelector('.exercise.ex-buckets');
              const screen = ex.closest('.slides > section > section');
              Reveal.slide(...Object.values(Reveal.getIndices(screen)));
            }"""
        )
        ex = page.locator("section.present .exercise.ex-buckets").first
        attempt_nothing_then_something(page, ex, "buckets")
        screen = page.locator(".slides > section > section.present")
        expect(screen).to_have_class(re.compile(r"(^|\s)deck-grown(\s|$)"))
        grown = ex.evaluate(GROWN_JS)
        assert grown == {"found": [], "grown": True}, grown
        cue = screen.evaluate(
            "(s) => getComputedStyle(s, '::after').visibility"
        )
        assert cue == "visible"
        ex.locator("[data-ex-action=reset]").click()
        expect(screen).not_to_have_class(re.compile(r"(^|\s)deck-grown(\s|$)"))
        assert screen.evaluate("(s) => s.scrollTop") == 0
    finally:
        context.close()


def figure_labels(page, site: Path) -> list[str]:
    """Figures on the current screen whose smallest label is under 20
    stage pixels."""
    found = []
    for src, width in page.evaluate(
        """() => [...Reveal.getCurrentSlide().querySelectorAll(
          '.deck-body img[src$=".svg"]')].map(
          (i) => [i.getAttribute('src'), i.offsetWidth])"""
    ):
        least = smallest_label(site, src, width)
        if least < 20:
            found.append(
                f"{src}: labels at {least:.1f}px (at least 20), drawn "
                f"{width}px wide: what else is on its screen leaves it "
                "too little room"
            )
    return found


#: Screens the deck may have (issue 27: at most 80 for the lesson's 55
#: slides, one class).
MAX_SCREENS = 80


def answered(page) -> list[str]:
    """Each exercise of the screen answered as a student would (an empty
    try, then every field filled, every item sorted into one bucket,
    every option but one struck with a reason: the tallest it gets) and
    its Check or Commit pressed: what then does not fit. A screen the
    answer made taller than the stage must scroll inside it, with its
    verdict in view and the stage unmoved; then every fold opened must
    fit as a panel."""
    found = []
    exercises = page.locator(
        ".reveal .slides > section > section.present .exercise[data-ex-ready]"
    )
    for i in range(exercises.count()):
        ex = exercises.nth(i)
        ex.evaluate(EXERCISE_STEP_JS)
        attempt_nothing_then_something(
            page, ex, ex.get_attribute("data-ex-kind")
        )
        # present.js looks a frame after the click.
        page.evaluate("() => new Promise(requestAnimationFrame)")
        grown = ex.evaluate(GROWN_JS)
        found += grown["found"]
        if not grown["grown"]:
            found += page.evaluate(OVERFLOW_JS, WIDTH)
        page.evaluate(OPEN_ALL_JS)
        if grown["grown"]:
            page.wait_for_function(
                "() => Reveal.getCurrentSlide().scrollTop === 0"
            )
            found += page.evaluate(PANELS_JS)
        else:
            found += page.evaluate(OVERFLOW_JS, WIDTH)
    return found


#: After an answer, on the current screen: is it taller than the stage
#: without scrolling, is the exercise's verdict out of view, has the
#: stage itself moved? {"found": [...], "grown": scrolls inside}.
GROWN_JS = """(ex) => {
  const found = [];
  const screen = Reveal.getCurrentSlide();
  const grown = screen.classList.contains('deck-grown');
  if (screen.scrollHeight > 721 && !grown)
    found.push(`${screen.scrollHeight}px tall, and it does not scroll`);
  for (const box of document.querySelectorAll('.reveal, .reveal .slides'))
    if (box.scrollTop || box.scrollLeft) found.push('the stage moved');
  const stage = document.querySelector('.reveal .slides')
    .getBoundingClientRect();
  const verdict = ex.querySelector('.ex-feedback:not([hidden])');
  const r = verdict?.getBoundingClientRect();
  if (r && (r.top < stage.top - 1 || r.bottom > stage.bottom + 1))
    found.push('the verdict is out of view');
  // Nor under the "more below" cue at the stage's foot.
  const cue = getComputedStyle(screen, '::after');
  const scale = screen.getBoundingClientRect().height / screen.offsetHeight;
  const covered = grown && cue.visibility === 'visible' ?
    parseFloat(cue.height) * scale : 0;
  if (r && covered && r.bottom > stage.bottom - covered + 1)
    found.push('the verdict is under the "more below" cue');
  return {found, grown};
}"""

#: Open folds on a grown screen: each panel inside the stage.
PANELS_JS = """() => {
  const stage = document.querySelector('.reveal .slides')
    .getBoundingClientRect();
  return [...Reveal.getCurrentSlide().querySelectorAll(
      'details.deck-fold[open]')].filter((d) => {
    const r = d.getBoundingClientRect();
    return r.top < stage.top - 1 || r.bottom > stage.bottom + 1 ||
      d.scrollHeight > d.clientHeight + 1;
  }).map((d) => `the open fold "${d.querySelector('summary')
    ?.textContent.trim()}" is not inside the stage`);
}"""


# --- handout --------------------------------------------------------------


def pdf_pages(path: Path) -> int:
    """Pages of a PDF: its ``/Type /Page`` objects (Chromium writes them
    uncompressed; ``/Type /Pages`` are the page tree's inner nodes)."""
    return len(re.findall(rb"/Type\s*/Page\b(?!s)", path.read_bytes()))


def media_widths(path: Path) -> set[float]:
    """The widths (pt) of the PDF's pages."""
    return {
        float(w)
        for w in re.findall(
            rb"/MediaBox\s*\[\s*0\s+0\s+([\d.]+)", path.read_bytes()
        )
    }


#: The print view (?print-pdf), page by page: its scale, what is cut off
#: its pages, and controls or closed answers left on it.
PRINT_JS = """(stage) => {
  const found = [];
  let pages = 0, least = 1;
  const pageHeight = document.querySelector('.pdf-page').offsetHeight;
  const notesPages = document.querySelectorAll('.speaker-notes-pdf').length;
  for (const notes of document.querySelectorAll('.speaker-notes-pdf')) {
    pages += 1;
    if (notes.offsetHeight > pageHeight + 2)
      found.push(`notes "${notes.textContent.trim().slice(0, 40)}" run ` +
                 'over their page');
  }
  for (const pdfPage of document.querySelectorAll('.pdf-page')) {
    const section = pdfPage.querySelector(':scope > section');
    if (!section) continue;
    const name = section.closest('[data-slide]')?.dataset.slide ??
      section.dataset.slide ?? '?';
    const scale = section.getBoundingClientRect().width / stage *
      parseFloat(getComputedStyle(section).zoom || 1);
    least = Math.min(least, scale);
    const n = Math.round(pdfPage.offsetHeight / pageHeight);
    pages += n;
    // From the page's top: reveal.js sets a screen 14 px down, and a
    // last line 3 px over the page went to a page never printed.
    if (section.offsetTop + section.scrollHeight > pdfPage.offsetHeight)
      found.push(`slide ${name}: cut at the bottom of its ${n} page(s)`);
    for (const el of section.querySelectorAll(
        'button, input, textarea, select'))
      if (el.checkVisibility()) found.push(`slide ${name}: a visible ${
        el.tagName.toLowerCase()} in the handout`);
    for (const d of section.querySelectorAll('details:not([open])'))
      found.push(`slide ${name}: a closed fold in the handout`);
    // An answer's page names its question: its slide's title in the
    // meta line, whole (the title of the last page before it that is no
    // answer page).
    const title = (p) => p?.querySelector('.deck-body > h1')?.textContent;
    let screen = pdfPage;
    while (screen?.querySelector(':scope > .deck-fold-page'))
      screen = screen.previousElementSibling;
    while (screen && !title(screen)) screen = screen.previousElementSibling;
    const of = section.querySelector('.deck-meta .deck-fold-of');
    if (section.matches('.deck-fold-page') && n > 1)
      found.push(`"${title(screen)}": an answer page runs onto a second, ` +
                 'which shows no slide number');
    if (section.matches('.deck-fold-page') && (of?.textContent !==
        title(screen) || of.scrollWidth > of.clientWidth))
      found.push(`"${title(screen)}": an answer page without its title`);
    for (const d of section.querySelectorAll('details[open]')) {
      if (!d.checkVisibility())  // an exercise's key, still hidden
        found.push(`slide ${name}: a fold that prints blank`);
      // Its last line below its border (slide 29's answer: the stage's
      // height limit of a panel, kept in print).
      else if (d.scrollHeight > d.clientHeight + 1)
        found.push(`"${title(screen)}": a fold's text runs out of its box`);
    }
  }
  return {found, pages, least, notesPages};
}"""


@pytest.mark.parametrize(
    "edition",
    [
        "slides",
        "notes",
    ],
)
def test_the_handout_prints_every_page_readable(
    browser, built_site, tmp_path, edition
):
    """``make pdf`` (and ``make pdf-notes``): every page at full scale
    (never below 60 %), long screens over two pages rather than shrunk,
    answers open and shown (45 answer pages printed blank), no empty
    fields or buttons."""
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    try:
        page = context.new_page()
        query = "?print-pdf" + (
            "&showNotes=separate-page" if edition == "notes" else ""
        )
        page.goto(built_site.as_uri() + "/present.html" + query)
        wait_ready(page)
        printed = page.evaluate(PRINT_JS, WIDTH)
    finally:
        context.close()
    assert printed["least"] >= 0.6, (
        f"a page prints at {printed['least']:.0%} of the stage"
    )
    assert not printed["found"], "\n".join(printed["found"])
    # Each slide's notes once, not after every one of its screens.
    slides = len(read_deck(ROOT).slides)
    assert printed["notesPages"] == (slides if edition == "notes" else 0)

    out = tmp_path / f"lesson-{edition}.pdf"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "lessonbuild.present",
            str(built_site),
            out,
            "--chromium",
            CHROMIUM,
            "--edition",
            edition,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, f"make pdf failed:\n{run.stderr[-3000:]}"
    assert pdf_pages(out) == printed["pages"], (
        f"{out}: {pdf_pages(out)} pages, the print view has {printed['pages']}"
    )
    widths = media_widths(out)
    assert len(widths) == 1, f"pages of different widths: {widths}"


def test_a_phone_opens_the_deck_at_the_slide_it_asked_for(browser, built_site):
    """A reading page's Present link on a phone (390 px wide) opens the
    deck at that slide, one slide at a time, as on a laptop."""
    context = browser.new_context(viewport={"width": 390, "height": 844})
    try:
        page = context.new_page()
        page.goto(built_site.as_uri() + f"/present.html#/{SLIDE}")
        wait_ready(page)
        assert on_slide(page) == SLIDE
        assert page.evaluate("Reveal.isScrollView()") is False
        # Upright, the stage is a third of its size: a line says how to
        # read it, above the slide; sideways (half size) there is none.
        turn = page.locator(".deck-turn")
        expect(turn).to_be_visible()
        note = turn.bounding_box()
        stage = page.locator(".reveal .slides").bounding_box()
        assert note["y"] + note["height"] <= stage["y"], (note, stage)
        page.set_viewport_size({"width": 844, "height": 390})
        expect(turn).to_be_hidden()
    finally:
        context.close()


# WCAG's relative luminance and contrast ratio, in the page.
DIMMED_CONTRAST = """() => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = (c) => {
    const f = (v) => (v /= 255) <= 0.03928 ? v / 12.92
      : ((v + 0.055) / 1.055) ** 2.4;
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  };
  const found = [];
  const screen = Reveal.getCurrentSlide();
  for (const pre of screen.querySelectorAll(
      'pre:has(.code-step.current-fragment)')) {
    let bg = [];
    for (let a = pre; a && !(bg.length === 3 || bg[3] === 1);
         a = a.parentElement) bg = rgb(getComputedStyle(a).backgroundColor);
    for (const line of pre.querySelectorAll(
        'code > :not(.current-fragment)')) {
      const alpha = Number(getComputedStyle(line).opacity);
      for (const el of [line, ...line.querySelectorAll('*')]) {
        if (![...el.childNodes].some((n) => n.nodeType === 3
            && n.data.trim())) continue;
        const shown = rgb(getComputedStyle(el).color).slice(0, 3)
          .map((v, i) => v * alpha + bg[i] * (1 - alpha));
        const [a, b] = [lum(shown), lum(bg)];
        found.push([(Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05),
                    el.textContent.trim().slice(0, 30),
                    el.matches('.c, .c1')]);
      }
    }
  }
  return found;
}"""


@pytest.mark.parametrize("deck", ["file"], indirect=True)
def test_dimmed_code_lines_stay_readable(deck):
    """On a code step the other lines dim, but every word of them keeps
    3:1 against the code's background (WCAG's large-text minimum): at
    40 % opacity keywords and comments fell to 1.7:1, gone on a
    washed-out projector. Comments, which carry the shapes the lesson
    teaches (``# (B, h, T_q, d_k)``), keep 4.5:1 (a rehearsal measured
    3.5:1 dimmed)."""
    page = deck.open("present.html")
    wait_ready(page)
    screens = page.evaluate(
        """() => [...new Set([...document.querySelectorAll(
            '.reveal .code-step')].map((s) => s.closest('section')))]
          .map((s) => Reveal.getIndices(s))"""
    )
    assert screens
    low, seen = [], 0
    for i in screens:
        page.evaluate(f"Reveal.slide({i['h']}, {i['v']}, 0)")
        found = page.evaluate(DIMMED_CONTRAST)
        seen += len(found)
        low += [
            (i["h"], round(r, 2), text)
            for r, text, comment in found
            if r < (4.5 if comment else 3)
        ]
    assert seen > 50, seen
    assert not low, low[:10]


def test_a_clicked_option_leaves_the_deck_its_keys(deck, lesson):
    """reveal.js takes no key while an input has the focus: after a
    click on the class's option, B (black screen), G, S and F did
    nothing (a rehearsal). A letter or sign leaves the option to the
    deck, and Escape leaves it without opening the overview; the next
    key after B brings the screen back and moves nothing."""
    page, ex = _on_first_check(deck, lesson)
    radio = page.locator(f"{ex} input.ex-radio").first
    radio.click()
    expect(radio).to_be_focused()
    before = _indices(page)
    page.keyboard.press("b")
    page.wait_for_function("Reveal.isPaused()")
    page.keyboard.press("PageDown")
    page.wait_for_function("!Reveal.isPaused()")
    assert _indices(page) == before
    radio.click()
    page.keyboard.press("Escape")
    expect(radio).not_to_be_focused()
    assert not page.evaluate("Reveal.isOverview()")
    radio.click()
    page.keyboard.press("g")
    expect(page.locator(".reveal .jump-to-slide-input")).to_be_focused()


def test_the_jump_box_gives_a_clicker_its_keys_and_finds_words(deck, lesson):
    """G pressed by mistake left the clicker dead: PageDown, and → in
    an empty box, went nowhere until someone reached the keyboard. They
    close the box and step. A word and Enter go to the next screen that
    says it, from its first step (reveal.js read the word as a regular
    expression: "view(B" threw; and it always took the deck's first
    match); a word no screen says leaves the box open, marked."""
    page = deck.open("present.html#/3")
    wait_ready(page)
    box = page.locator(".reveal .jump-to-slide-input")
    for key in ("PageDown", "ArrowRight"):
        progress = page.evaluate("Reveal.getProgress()")
        page.keyboard.press("g")
        expect(box).to_be_focused()
        page.keyboard.press(key)
        page.wait_for_function(f"Reveal.getProgress() > {progress}")
        expect(box).to_have_count(0)
    # A later slide's title: the jump lands on a later screen that says
    # it, from its first step.
    here = page.evaluate("Reveal.getIndices().h")
    words = next(s.title for s in lesson.slides if s.number > here + 5)
    page.keyboard.press("g")
    page.keyboard.type(words)
    page.keyboard.press("Enter")
    page.wait_for_function(f"Reveal.getIndices().h > {here}")
    expect(box).to_have_count(0)
    assert page.evaluate("Reveal.getIndices().f") in (-1, None)
    said = "Reveal.getCurrentSlide().textContent.toLowerCase()"
    assert words.lower() in " ".join(page.evaluate(said).split())
    # Signs are words too (no error: Deck.close checks), found or not.
    page.keyboard.press("g")
    page.keyboard.type("view(B")
    page.keyboard.press("Enter")
    page.wait_for_function(
        """() => {
        const box = document.querySelector('.reveal .jump-to-slide-input');
        return !box || box.getAttribute('aria-invalid') === 'true';
    }"""
    )
    if box.count():
        page.keyboard.press("Escape")
    page.keyboard.press("g")
    page.keyboard.type("zq zq zq")
    page.keyboard.press("Enter")
    expect(box).to_have_attribute("aria-invalid", "true")
    page.keyboard.press("Escape")
    expect(box).to_have_count(0)


#: Whether the deck is at ``want`` (its indices as JSON): a screen's
#: place before its first step reads {h, v} or f: -1.
AT = """(want) => {
    const [at, to] = [Reveal.getIndices(), JSON.parse(want)];
    return at.h === to.h && at.v === to.v && (at.f ?? -1) === (to.f ?? -1);
}"""


def _steps(page, presses: int) -> None:
    """→ ``presses`` times, each once the deck has taken the one before."""
    for _ in range(presses):
        here = _indices(page)
        page.keyboard.press("ArrowRight")
        page.wait_for_function(
            f"JSON.stringify(Reveal.getIndices()) !== {here!r}"
        )


def _open_speaker_view(deck, page):
    """S: the speaker window, and the frame of the preview it steps."""
    with deck.context.expect_page() as popup:
        page.keyboard.press("s")
    speaker = popup.value
    preview = speaker.locator("#current-slide iframe")
    expect(preview).to_have_count(1)
    return speaker, preview.element_handle().content_frame()


def test_the_speaker_view_brings_a_blacked_out_screen_back(deck):
    """Blacked out (B from the speaker window), the speaker's → did
    nothing until B again (reveal.js drops a step key while paused). A
    next or back key brings the screen back and moves nothing, as in
    the deck; the next one steps. What comes next stays in view."""
    page = deck.open("present.html#/4")
    wait_ready(page)
    speaker, frame = _open_speaker_view(deck, page)
    frame.wait_for_selector("html[data-deck-ready]", state="attached")
    before = _indices(page)
    upcoming = speaker.locator("#upcoming-slide iframe")
    upcoming = upcoming.element_handle().content_frame()
    # The view sends it a place, then "next": counted, the place is taken.
    upcoming.evaluate(
        """() => { window.places = 0; addEventListener("message", (e) => {
            if (String(e.data).includes('"next"')) window.places++; }); }"""
    )
    for key in ("ArrowRight", "PageDown", "ArrowLeft"):
        told = upcoming.evaluate("window.places")
        speaker.keyboard.press("b")
        page.wait_for_function("Reveal.isPaused()")
        # The current preview goes black with the projector; what comes
        # next stays in view (it went black too).
        frame.wait_for_function("Reveal.isPaused()")
        upcoming.wait_for_function(f"window.places > {told}")
        assert not upcoming.evaluate("Reveal.isPaused()")
        speaker.keyboard.press(key)
        page.wait_for_function("!Reveal.isPaused()")
        assert _indices(page) == before
    speaker.keyboard.press("ArrowRight")
    page.wait_for_function(
        f"JSON.stringify(Reveal.getIndices()) !== {before!r}"
    )
    speaker.close()


def test_fast_keys_in_the_speaker_view_each_take_a_step(deck):
    """The speaker view's keys moved its preview, whose place the deck
    took and sent back (reveal.js's notes plugin, both ways throttled):
    a clicker pressed 0.1-0.25 s apart crossed that echo, and 12 presses
    went 6 or 7 steps on both screens (a rehearsal). At a clicker's
    pace, every key is a step, forward and back, on
    the projector and in the preview; the deck's own keys too, with the
    speaker view open (the preview's late echo took the deck back)."""
    page = deck.open("present.html#/3")
    wait_ready(page)
    start = _indices(page)
    _steps(page, 9)
    ahead = _indices(page)  # where nine → go in the deck itself
    page.evaluate("(at) => Reveal.slide(at.h, at.v, at.f)", json.loads(start))
    speaker, frame = _open_speaker_view(deck, page)
    frame.wait_for_function(
        "(want) => window.Reveal?.isReady() && "
        "JSON.stringify(Reveal.getIndices()) === want",
        arg=start,
    )
    # The speaker's keys, then the deck's own with the speaker view open.
    for keyboard, want, key in (
        (speaker.keyboard, ahead, "ArrowRight"),
        (speaker.keyboard, start, "ArrowLeft"),
        (page.keyboard, ahead, "ArrowRight"),
    ):
        for _ in range(9):  # a clicker's pace: each press held 0.15 s
            keyboard.press(key, delay=150)
        for window in (page, frame):
            window.wait_for_function(AT, arg=want)
    speaker.close()


def test_the_speaker_views_keys_move_the_deck_wherever_its_focus_is(deck):
    """A click in the speaker's preview (or G there) left the focus in
    it, and its keys went the old way: 10 presses lost 1 to 3 steps, and
    after a click on an option they changed the option, not the deck.
    In the preview's overview (O), → stepped the projector into the
    answers; Shift + an arrow went one step; a picked layout list took
    the arrows (a rehearsal)."""
    page = deck.open("present.html#/3")
    wait_ready(page)
    start = _indices(page)
    _steps(page, 10)
    ahead = _indices(page)
    page.evaluate("(at) => Reveal.slide(at.h, at.v, at.f)", json.loads(start))
    speaker, frame = _open_speaker_view(deck, page)
    frame.wait_for_function(
        "(want) => window.Reveal?.isReady() && (" + AT + ")(want)", arg=start
    )
    frame.locator(".controls .navigate-right").click()  # one step
    for _ in range(9):  # a clicker's pace, the focus in the preview
        speaker.keyboard.press("ArrowRight", delay=150)
    for window in (page, frame):
        window.wait_for_function(AT, arg=ahead)
    # The preview's overview: → moves the deck a screen, no step shown.
    speaker.keyboard.press("o")
    frame.wait_for_function("Reveal.isOverview()")
    screen = json.dumps([json.loads(ahead)["h"], json.loads(ahead)["v"]])
    speaker.keyboard.press("ArrowRight")
    page.wait_for_function(
        "(was) => { const i = Reveal.getIndices();"
        " return JSON.stringify([i.h, i.v]) !== was; }",
        arg=screen,
    )
    assert page.evaluate("Reveal.getIndices().f ?? -1") == -1
    speaker.keyboard.press("Escape")
    # Shift + ← and →: the first and the last slide, as in the deck;
    # with the deck's help open, the key closes it and moves nothing.
    speaker.locator("#speaker-controls").click()  # the focus off the preview
    page.keyboard.press("Shift+Slash")
    page.wait_for_selector(".reveal .r-overlay")
    here = _indices(page)
    speaker.keyboard.press("Shift+ArrowRight")
    page.wait_for_selector(".reveal .r-overlay", state="detached")
    assert _indices(page) == here
    last = page.evaluate("Reveal.getHorizontalSlides().length - 1")
    for key, h in (("Shift+ArrowLeft", 0), ("Shift+ArrowRight", last)):
        speaker.keyboard.press(key)
        page.wait_for_function(f"Reveal.getIndices().h === {h}")
    # A picked layout keeps its layout; the clicker moves the deck.
    layouts = speaker.locator("select.speaker-layout-dropdown")
    picked = layouts.input_value()
    layouts.focus()
    here = _indices(page)
    speaker.keyboard.press("ArrowUp")
    page.wait_for_function(f"JSON.stringify(Reveal.getIndices()) !== {here!r}")
    assert layouts.input_value() == picked
    speaker.close()


def test_a_field_in_the_speaker_preview_is_left_as_in_the_deck(deck, lesson):
    """Typed into in the speaker's preview, a fill-in cell kept → past its
    text and Escape, where the deck's own cell gives them up: the
    clicker stayed dead until a mouse reached the preview."""
    number = _first_slide_of(lesson, "fill-in")
    page = deck.open(f"present.html#/{number}")
    wait_ready(page)
    before = _indices(page)
    speaker, frame = _open_speaker_view(deck, page)
    frame.wait_for_function(
        "(want) => window.Reveal?.isReady() && (" + AT + ")(want)", arg=before
    )
    cell = frame.locator(f'[data-slide="{number}"] input.ex-cell').last
    cell.click()
    speaker.keyboard.type("7")
    speaker.keyboard.press("Escape")
    frame.wait_for_function("document.activeElement === document.body")
    assert _indices(page) == before
    cell.click()
    speaker.keyboard.press("End")
    speaker.keyboard.press("ArrowRight")
    page.wait_for_function(
        f"JSON.stringify(Reveal.getIndices()) !== {before!r}"
    )
    speaker.close()


def test_the_speaker_view_opened_mid_screen_keeps_the_step(deck):
    """Its preview loads at the screen's first step and, before it had
    connected, sent that place to the deck: S pressed with an answer on
    show took the projector back to the screen's start and hid it (a
    rehearsal). Both show the deck's step."""
    page = deck.open("present.html#/3")
    wait_ready(page)
    _steps(page, 2)  # into the screen's steps
    before = _indices(page)
    assert json.loads(before).get("f", -1) >= 0, before
    speaker, frame = _open_speaker_view(deck, page)
    frame.wait_for_function(
        "(want) => window.Reveal?.isReady() && "
        "JSON.stringify(Reveal.getIndices()) === want",
        arg=before,
    )
    # Connected (the preview shows the deck's step): the deck never moved.
    assert _indices(page) == before
    speaker.close()


def test_the_speaker_view_drives_the_deck_after_the_deck_reloads(deck):
    """A reloaded deck takes its speaker window back (reveal.js's notes
    plugin, by the window's heartbeat), which never says "connected"
    again: the speaker's keys must still move the projector (a re-check
    of the check above found them moving only the speaker's preview)."""
    page = deck.open("present.html#/3")
    wait_ready(page)
    speaker, frame = _open_speaker_view(deck, page)
    frame.wait_for_selector("html[data-deck-ready]", state="attached")
    page.reload()
    wait_ready(page)
    # Taken back: a step on the deck reaches the speaker's preview.
    _steps(page, 1)
    after = _indices(page)
    frame.wait_for_function(
        "(want) => JSON.stringify(Reveal.getIndices()) === want", arg=after
    )
    speaker.keyboard.press("ArrowRight")
    page.wait_for_function(
        f"JSON.stringify(Reveal.getIndices()) !== {after!r}"
    )
    # Its calls (the pacing timer's, each second) are answered again.
    speaker.evaluate(
        """() => { window.answers = 0; addEventListener("message", (e) => {
            if (String(e.data).includes('"type":"return"')) window.answers++;
        }); }"""
    )
    speaker.wait_for_function("window.answers > 0")
    speaker.close()


def test_the_speaker_windows_fit_and_shift_keys_outlive_a_reloaded_deck(
    deck, lesson
):
    """The notes' fit and the speaker window's Shift keys were this
    page's listeners on the window: with the deck reloaded (or R and
    back) reveal.js took the window back without them, the longest notes
    ran past the panel's foot at 1.2em and Shift + → went one step."""
    number = _longest_notes(lesson)
    page = deck.open("present.html#/3")
    wait_ready(page)
    speaker, frame = _open_speaker_view(deck, page)
    speaker.set_viewport_size({"width": 1100, "height": 700})
    frame.wait_for_selector("html[data-deck-ready]", state="attached")
    page.reload()
    wait_ready(page)
    _steps(page, 1)  # taken back: the preview follows the deck again
    frame.wait_for_function(
        "(want) => JSON.stringify(Reveal.getIndices()) === want",
        arg=_indices(page),
    )
    page.evaluate(f"Reveal.slide({number - 1}, 0, -1)")
    notes = speaker.locator(".speaker-controls-notes .value")
    expect(notes).to_contain_text(note_line(lesson, number), timeout=90_000)
    _notes_fit(speaker)
    speaker.locator("#speaker-controls").click()  # the focus off the preview
    last = page.evaluate("Reveal.getHorizontalSlides().length - 1")
    for key, h in (("Shift+ArrowLeft", 0), ("Shift+ArrowRight", last)):
        speaker.keyboard.press(key)
        page.wait_for_function(f"Reveal.getIndices().h === {h}")
    speaker.close()


def test_s_opens_the_speaker_view_again_after_it_was_reloaded(deck):
    """The speaker view is a page the deck writes: reloaded, it is
    blank, and S in the deck only brought the blank window to the front
    (reveal.js's notes plugin opens its window once). S opens a working
    speaker view again, whose keys move the deck; blacked out too."""
    page = deck.open("present.html#/4")
    wait_ready(page)
    speaker, frame = _open_speaker_view(deck, page)
    frame.wait_for_selector("html[data-deck-ready]", state="attached")
    speaker.reload()
    expect(speaker.locator("#current-slide iframe")).to_have_count(0)
    page.bring_to_front()
    again, frame = _open_speaker_view(deck, page)
    frame.wait_for_selector("html[data-deck-ready]", state="attached")
    assert speaker.is_closed()
    here = _indices(page)
    again.keyboard.press("ArrowRight")
    page.wait_for_function(f"JSON.stringify(Reveal.getIndices()) !== {here!r}")
    again.close()
    # Blacked out, S still opens it (reveal.js takes no S then).
    page.bring_to_front()
    page.keyboard.press("b")
    page.wait_for_function("Reveal.isPaused()")
    third, frame = _open_speaker_view(deck, page)
    frame.wait_for_selector("html[data-deck-ready]", state="attached")
    third.close()


def test_the_speaker_view_gets_no_answer_to_another_windows_call(deck):
    """reveal.js's notes plugin answers each call in the speaker view it
    opened last, whoever made it: a call the view S replaced sent (before
    a reload, answered after it) reached the new view, which threw
    "pendingCalls[data.callId] is not a function" (or took another
    call's answer). The deck answers its own speaker view only."""
    page = deck.open("present.html#/4")
    wait_ready(page)
    speaker, frame = _open_speaker_view(deck, page)
    frame.wait_for_selector("html[data-deck-ready]", state="attached")
    speaker.evaluate(
        """() => { window.states = 0; addEventListener("message", (e) => {
            if (String(e.data).includes('"type":"state"')) window.states++;
        }); }"""
    )
    # A window of the deck's origin that is not the speaker view (a frame
    # of one of its files) calls the deck's API; its marker comes after.
    page.evaluate(
        """() => new Promise((loaded) => {
            const other = document.createElement("iframe");
            other.id = "lesson-test-other";
            other.onload = loaded;
            other.src = "assets/present.min.css";
            document.body.append(other);
        })"""
    )
    marked = page.evaluate_handle(  # an object: not waited for here
        """() => ({ seen: new Promise((done) => addEventListener("message",
            (e) => e.data === "lesson-test-marker" && done())) })"""
    )
    other = page.locator("#lesson-test-other").element_handle()
    other = other.content_frame()
    other.evaluate(
        """() => { parent.postMessage(JSON.stringify({
            namespace: "reveal-notes", type: "call", callId: 1,
            methodName: "getSlidePastCount", arguments: []}), "*");
          parent.postMessage("lesson-test-marker", "*"); }"""
    )
    page.evaluate("(marked) => marked.seen", marked)
    # Any answer went out before this step's state (one sender, in order).
    page.evaluate("Reveal.next()")
    speaker.wait_for_function("window.states > 0")
    assert deck.errors == []
    # The view's own calls are still answered: its pacing (from calls).
    pacing = speaker.locator(".speaker-controls-time .pacing")
    expect(pacing).to_have_text(re.compile(r"\d+:\d\d"), timeout=90_000)


def test_a_speaker_view_opened_mid_lecture_keeps_the_plans_time(deck):
    """reveal.js starts the speaker view's timer at 0 whenever the
    window opens: opened (or reopened, after it was closed or reloaded)
    at slide 41, the timer read 0:00:11 and the pacing line counted
    every earlier slide's minutes as still to come, "1:32:49 to finish
    current slide" (a rehearsal). It starts where the plan puts the
    screen, so the pacing line is this screen's own time."""
    page = deck.open("present.html#/41")
    wait_ready(page)
    # The minutes the plan gives every screen before this one.
    before = page.evaluate(
        """() => {
            const past = Reveal.getSlidePastCount();
            return Reveal.getSlidesAttributes().slice(0, past)
                .reduce((s, a) => s + Number(a["data-timing"] || 0), 0);
        }"""
    )
    assert before > 60 * 60, before  # slide 41 is past the first hour
    speaker, _frame = _open_speaker_view(deck, page)
    seconds = """(el) => {
        const [h, m, s] = el.textContent.replace(/[^0-9:]/g, '').split(':');
        return 3600 * h + 60 * m + Number(s);
    }"""
    timer = speaker.locator(".speaker-controls-time .timer")
    pacing = speaker.locator(".speaker-controls-time .pacing")
    expect(pacing).to_be_visible(timeout=90_000)
    speaker.wait_for_function(
        f"(want) => ({seconds})(document.querySelector("
        "'.speaker-controls-time .timer')) >= want",
        arg=before,
        timeout=10_000,
    )
    assert timer.evaluate(seconds) < before + 60
    # Left for this screen: its share of the slide's minutes, no more.
    share = page.evaluate(
        "Number(Reveal.getCurrentSlide().getAttribute('data-timing'))"
    )
    assert 0 < pacing.evaluate(seconds) <= share
    speaker.close()


#: Each option letter of the current screen's notes: [(in the notes,
#: on its option now, its author's)].
NOTE_LETTERS_JS = """() => [...Reveal.getCurrentSlide()
    .querySelectorAll('aside.notes [data-ex-in][data-ex-letter-of]')]
  .map((span) => {
    const ex = [...document.querySelectorAll('.reveal .exercise')].find(
      (e) => e.id.replace(/^s\\d+-/, '') === span.dataset.exIn);
    const option = ex.querySelector(
      `.ex-option[data-ex-option="${span.dataset.exLetterOf}"] .ex-letter`);
    return [span.textContent, option.textContent.replace('.', ''),
            span.dataset.exLetterOf];
  })"""


def test_the_notes_name_the_letters_the_options_show(deck, lesson):
    """After Try another in the deck, the notes' option letters (ref())
    follow the shuffle: in a speaker view already open (it showed the
    old ones until the next step), and after a reload (the notes are
    made after the restored shuffle, and kept the author's letters; a
    re-check)."""
    number = next(
        s.number
        for s in lesson.slides
        if any(_kind(f) == "check" for f in s.exercises)
        and "ref(" in (ROOT / s.path).read_text()
    )
    page = deck.open(f"present.html#/{number}")
    wait_ready(page)
    ex = page.locator(f'[data-slide="{number}"] .ex-check').first
    expect(ex).to_have_attribute("data-ex-ready", re.compile(".*"))
    _show_screen_of(page, f'[data-slide="{number}"] .ex-check')
    with deck.context.expect_page() as popup:
        page.keyboard.press("s")
    notes = popup.value.locator(".speaker-controls-notes")
    page.bring_to_front()
    page.wait_for_function(f"({NOTE_LETTERS_JS})().length > 0")
    ex.get_by_role("button", name="Try another").click()
    pairs = page.evaluate(NOTE_LETTERS_JS)
    assert all(said == shown for said, shown, _ in pairs), pairs
    assert any(shown != author for _, shown, author in pairs), pairs
    # The open speaker view is sent them: its notes read as the deck's.
    said = page.evaluate(
        """() => Reveal.getCurrentSlide().querySelector(
        'aside.notes [data-ex-letter-of]').closest('p').textContent"""
    )
    expect(notes).to_contain_text(" ".join(said.split())[:50])
    popup.value.close()
    page.reload()
    wait_ready(page)
    page.wait_for_function(f"({NOTE_LETTERS_JS})().length > 0")
    pairs = page.evaluate(NOTE_LETTERS_JS)
    assert all(said == shown for said, shown, _ in pairs), pairs
    assert any(shown != author for _, shown, author in pairs), pairs


def test_a_word_goes_to_the_next_screen_that_shows_it(deck):
    """G and words: the next screen, this slide's own later screens
    first (the search began at the next slide, and came back to them
    only after the whole deck); an answer's words, in a closed fold,
    are not what a screen shows (they found their slide: a re-check)."""
    page = deck.open("present.html#/1")
    wait_ready(page)
    # The first slide of two screens or more: a phrase of its second.
    h, phrase = page.evaluate(
        r"""() => {
        const slides = Reveal.getHorizontalSlides();
        for (const [h, slide] of slides.entries()) {
          const second = slide.querySelectorAll(':scope > section')[1];
          const p = second && [...second.querySelectorAll('p, li')].find(
            (e) => !e.closest('details, aside') &&
                   e.textContent.trim().split(/\s+/).length >= 4);
          const words = p && p.textContent.trim().split(/\s+/);
          if (p) return [h, words.slice(0, 4).join(' ')];
        }
    }"""
    )
    page.evaluate(f"Reveal.slide({h}, 0, -1)")
    page.keyboard.press("g")
    page.keyboard.type(phrase)
    page.keyboard.press("Enter")
    page.wait_for_function(
        f"Reveal.getIndices().h === {h} && Reveal.getIndices().v === 1"
    )
    # A closed fold's words alone (a key's, found nowhere on show).
    hidden = page.evaluate(
        r"""() => {
        const shown = (el) => {
          const c = el.cloneNode(true);
          c.querySelectorAll('aside.notes, details, script, template')
            .forEach((n) => n.remove());
          return c.textContent.toLowerCase();
        };
        const deck = shown(document.querySelector('.reveal .slides'));
        for (const fold of document.querySelectorAll('.reveal details')) {
          for (const word of fold.textContent.toLowerCase().split(/\W+/)) {
            if (word.length >= 10 && !deck.includes(word)) return word;
          }
        }
    }"""
    )
    assert hidden, "no word shown only in a fold"
    box = page.locator(".reveal .jump-to-slide-input")
    page.keyboard.press("g")
    page.keyboard.type(hidden)
    page.keyboard.press("Enter")
    expect(box).to_have_attribute("aria-invalid", "true")
    page.keyboard.press("Escape")
