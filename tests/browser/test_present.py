"""The deck (present.html) in Chromium, served and opened from disk.

A teacher opens the deck from a reading page, steps through a slide,
jumps around with reveal.js's keys, runs the speaker view on a second
window, answers an exercise on the projector and goes back to reading.
Every check here is what that teacher would see; the expectations come
from the lesson's sources (lessonbuild.deck), not from present.py.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from lessonbuild.deck import read_deck

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
WIDTH, HEIGHT = 1280, 720
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
    for note in lesson.slides[number - 1].notes:
        for line in note.text.splitlines():
            line = re.sub(r"\*\*[^*]+\*\*", "", line)
            for words in re.split(r"[`\\$*\"_()]", line):
                if len(words.strip()) >= 12:
                    return words.strip()
    raise AssertionError(f"slide {number} has no plain note line")


class Deck:
    """One browser context on the site, recording every request's host."""

    def __init__(self, browser, base: str):
        self.base = base
        self.context = browser.new_context(
            viewport={"width": WIDTH, "height": HEIGHT}
        )
        self.context.set_default_timeout(20_000)
        self.errors: list[str] = []
        self.foreign: list[str] = []
        local = urlsplit(base).netloc
        self.context.route("**/*", lambda route: self._route(route, local))
        self.context.on("page", self._watch)

    def _route(self, route, local: str):
        url = urlsplit(route.request.url)
        if url.scheme in ("http", "https") and url.netloc != local:
            self.foreign.append(route.request.url)
            route.abort()
        else:
            route.continue_()

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
    expect(page).to_have_url(re.compile(rf"#/{SLIDE}$"))
    assert on_slide(page) == SLIDE

    # Speaker view: notes of this slide, a pacing figure, kept in step.
    with deck.context.expect_page() as popup:
        page.keyboard.press("s")
    speaker = popup.value
    notes = speaker.locator(".speaker-controls-notes")
    expect(notes).to_contain_text(note_line(lesson, SLIDE), timeout=90_000)
    assert on_slide(page) == SLIDE, "opening the speaker view moved the deck"
    expect(speaker.locator(".pacing")).to_have_text(
        re.compile(r"\d+:\d\d"), timeout=90_000
    )
    page.bring_to_front()
    page.evaluate("Reveal.slide(Reveal.getIndices().h + 1)")
    if lesson.slides[SLIDE].notes:
        expect(notes).to_contain_text(note_line(lesson, SLIDE + 1))
    else:  # the speaker view hides the notes box of a slide without any
        expect(notes).to_be_hidden()
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
        re.compile(re.escape(reading_page(lesson, SLIDE)) + "$")
    )


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

    # Keyboard: Space picks an option and Enter presses Check, and
    # neither moves the deck (reveal.js would take them as "next").
    ex.locator('.ex-option[data-ex-option="B"] input').focus()
    page.keyboard.press("Space")
    expect(ex.locator('.ex-option[data-ex-option="B"] input')).to_be_checked()
    ex.get_by_role("button", name="Check", exact=True).focus()
    page.keyboard.press("Enter")
    expect(ex.locator(".ex-feedback")).not_to_contain_text("Why C tempts")
    assert page.evaluate("JSON.stringify(Reveal.getIndices())") == where, (
        "keys used inside the exercise moved the deck"
    )


# --- every slide fits -----------------------------------------------------

#: Problems on the current slide: boxes outside the 1280x720 stage, and
#: boxes whose content is cut off or scrolls. Closed <details> content and
#: the speaker notes are not on screen; steps not yet shown still count.
OVERFLOW_JS = """(width) => {
  const stage = document.querySelector('.reveal .slides')
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
    if (el.tagName !== 'DETAILS' &&
        (cut(st.overflowY, el.scrollHeight, el.clientHeight) ||
         cut(st.overflowX, el.scrollWidth, el.clientWidth)))
      found.push(`${name(el)} clipped or scrolling`);
  }
  return found.slice(0, 3);
}"""


def test_every_slide_and_step_fits_the_stage(browser, built_site, lesson):
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    try:
        page = context.new_page()
        page.goto(built_site.as_uri() + "/present.html#/1")
        wait_ready(page)
        bad: dict[int, list[str]] = {}
        seen: set[int] = set()
        while True:
            state = page.evaluate("Reveal.getIndices()")
            number = on_slide(page)
            seen.add(number)
            found = page.evaluate(OVERFLOW_JS, WIDTH)
            if found:
                step = f"#/{state['h'] + 1}/{state['v'] + 1}"
                step += f" step {state.get('f', -1)}"
                bad.setdefault(number, []).append(f"{step}: {found[0]}")
            before = state
            page.evaluate("Reveal.next()")
            if page.evaluate("Reveal.getIndices()") == before:
                break
    finally:
        context.close()
    every = {s.number for s in lesson.slides}
    assert seen == every, f"the walk missed slides {sorted(every - seen)}"
    assert not bad, (
        f"slides {sorted(bad)} do not fit the {WIDTH}x{HEIGHT} stage "
        "(docs/assets/present.js splits blocks, present.css sizes them):\n"
        + "\n".join(f"slide {n}: {v[0]}" for n, v in sorted(bad.items()))
    )


# --- handout --------------------------------------------------------------


def pdf_pages(path: Path) -> int:
    """Pages of a PDF: its ``/Type /Page`` objects (Chromium writes them
    uncompressed; ``/Type /Pages`` are the page tree's inner nodes)."""
    return len(re.findall(rb"/Type\s*/Page\b(?!s)", path.read_bytes()))


def test_pdf_has_one_page_per_slide(built_site, lesson, tmp_path):
    """What ``make pdf`` runs, in its own process (Playwright's sync API
    cannot run inside the browser fixture's event loop)."""
    out = tmp_path / "lesson.pdf"
    run = subprocess.run(
        [sys.executable, "-m", "lessonbuild.present", str(built_site), out],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, f"make pdf failed:\n{run.stderr[-3000:]}"
    assert pdf_pages(out) == len(lesson.slides), (
        f"{out}: {pdf_pages(out)} pages for {len(lesson.slides)} slides; "
        "the print view (present.js fitPrint) makes one page per slide"
    )


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
    finally:
        context.close()
