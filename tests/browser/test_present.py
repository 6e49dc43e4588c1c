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


# --- every screen fits ------------------------------------------------------

#: Every screen of the deck: [h, v, "slide N, screen M: title"].
SCREENS_JS = """() => [...document.querySelectorAll('.reveal .slides > section')]
  .flatMap((stack, h) => [...stack.querySelectorAll(':scope > section')]
    .map((s, v, all) => [h, v, `slide ${stack.dataset.slide}` +
      (all.length > 1 ? `, screen ${v + 1}` : '') +
      ` (${stack.dataset.title})`]))"""

#: Show every step of the current screen and open every fold: the
#: screen's tallest state (each fold is a panel over the stage).
OPEN_ALL_JS = """() => {
  const screen = Reveal.getCurrentSlide();
  const idx = Reveal.getIndices();
  Reveal.slide(idx.h, idx.v, screen.querySelectorAll('.fragment').length);
  for (const d of screen.querySelectorAll('details')) d.open = true;
  for (const f of screen.querySelectorAll('.fragment')) f.classList.add('visible');
}"""

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
    if (el.tagName !== 'DETAILS' &&
        (cut(st.overflowY, el.scrollHeight, el.clientHeight) ||
         cut(st.overflowX, el.scrollWidth, el.clientWidth)))
      found.push(`${name(el)} clipped or scrolling`);
    if (el.matches('a, button, input, select, textarea, summary, label') &&
        r.right > arrows.left && r.left < arrows.right &&
        r.bottom > arrows.top && r.top < arrows.bottom)
      found.push(`${name(el)} under the navigation arrows`);
  }
  return found;
}"""

#: Text on the current screen below its stage size (in stage pixels):
#: body text 24, code, tables and controls 20. Math is KaTeX's own
#: sizes (sub- and superscripts) around text that is checked.
SIZES_JS = """() => {
  const found = [];
  const least = (el) => el.closest(
    'pre, code, table, .filename, button, label, select, .ex-actions,' +
    '.ex-field-hint, .ex-zone__name, .ex-label, .deck-meta, figcaption') ? 20 : 24;
  for (const el of Reveal.getCurrentSlide().querySelectorAll('*')) {
    if (el.closest('aside.notes, .katex') || !el.checkVisibility()) continue;
    if (el.closest('.ex-sr')) continue;
    const text = [...el.childNodes].some(
      (n) => n.nodeType === 3 && n.nodeValue.trim());
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


def test_every_screen_and_step_fits_the_stage(browser, built_site):
    """Every screen at its tallest (every step shown, every fold open),
    then again after each exercise's first Check or Commit: nothing
    outside the 1280x720 stage, cut off, scrolling, under the arrows or
    below its stage size."""
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    try:
        page = context.new_page()
        page.goto(built_site.as_uri() + "/present.html#/1")
        wait_ready(page)
        bad: list[str] = []
        every = screens(page)
        for h, v, name in every:
            page.evaluate(f"Reveal.slide({h}, {v}, -1)")
            page.evaluate(OPEN_ALL_JS)
            found = page.evaluate(OVERFLOW_JS, WIDTH)
            found += page.evaluate(SIZES_JS)
            found += [f"after Check: {f}" for f in answered(page)]
            if found:
                bad.append(f"{name}: " + "; ".join(found[:3]))
    finally:
        context.close()
    assert len(every) <= MAX_SCREENS, (
        f"{len(every)} screens for 55 slides (at most {MAX_SCREENS})"
    )
    assert not bad, (
        f"{len(bad)} screens do not fit the {WIDTH}x{HEIGHT} stage; mark "
        'what is reading-only in the slide (<div class="reading" '
        'markdown>) or break the screen (<div class="screen-break">):\n'
        + "\n".join(bad)
    )


#: Screens the deck may have for its 55 slides (issue 27).
MAX_SCREENS = 80


def answered(page) -> list[str]:
    """Each exercise of the screen answered (a first option picked, a
    first word typed) and its first Check or Commit pressed: what then
    does not fit."""
    found = []
    exercises = page.locator(
        ".reveal .slides section.present .exercise[data-ex-ready]"
    )
    for i in range(exercises.count()):
        ex = exercises.nth(i)
        for field in ex.locator(
            "textarea:visible, input[type=text]:visible"
        ).all():
            field.fill("4")
        options = ex.locator("input[type=radio]:visible")
        if options.count():
            options.first.check(force=True)
        button = ex.locator("button:visible").filter(
            has_text=re.compile(r"^(Check|Commit)")
        )
        if not button.count() or not button.first.is_enabled():
            continue
        button.first.click(force=True)
        page.evaluate(OPEN_ALL_JS)
        found += page.evaluate(OVERFLOW_JS, WIDTH)
    return found


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
