"""Every page of the lesson passes axe: no violation of any impact.

Whole pages (theme, code blocks, tables, math, figures and the exercise
widgets, once they are live) as a student meets them, in both palettes:
the home page, every slide, and the three notebook pages.
Minor and moderate findings count too (landmark-unique, empty table
headers): each is something a screen-reader user meets.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lessonbuild.deck import read_deck
from tests.browser.axe import violations
from tests.browser.conftest import wait_for_widgets

ROOT = Path(__file__).resolve().parents[2]
SLIDES = read_deck(ROOT).slides
NOTEBOOK_PAGES = [
    f"notebooks/{name}.html"
    for name in ("lesson-81", "homework", "homework-solutions")
]
ALL_PAGES = (
    ["index.html"]
    + [f"slides/{Path(s.path).with_suffix('.html').name}" for s in SLIDES]
    + NOTEBOOK_PAGES
)
# a11y.js names Material's code-block navs once Material has mounted
# them and fonts are in; axe runs after that.
SETTLED = """
async () => {
  await document.fonts.ready;
  const frame = () => new Promise((r) => requestAnimationFrame(r));
  await frame();
  await frame();
}
"""


# The header's palette toggle, as a student switches: Material sets the
# scheme on <body> (every dark rule of ours keys on it) and remembers it.
TO_DARK = "form[data-md-component=palette] label[for=__palette_1]"
DARK = "document.body.getAttribute('data-md-color-scheme') === 'slate'"
LIGHT = "document.body.getAttribute('data-md-color-scheme') === 'default'"
# Colours settle once Material's colour transitions end (transitions
# only: an endless animation would never finish).
TRANSITIONS_DONE = """
async () => {
  const running = document.getAnimations();
  await Promise.all(
    running
      .filter((a) => a instanceof CSSTransition)
      .map((a) => a.finished.catch(() => null)), // cancelled: replaced
  );
}
"""


@pytest.mark.browser
def test_pages_pass_axe_in_both_palettes(browser, lesson_server):
    """No page has an axe violation of any impact in the light palette;
    switched to the dark one, none of colour contrast. What the palette
    changes is colours: every other rule reads the markup, the same in
    both, so each page is loaded once and checked in both."""
    assert len(ALL_PAGES) == 1 + len(SLIDES) + 3
    page = browser.new_page(color_scheme="light")
    found = {}
    try:
        for name in ALL_PAGES:
            page.goto(lesson_server + name)
            page.wait_for_load_state("load")
            wait_for_widgets(page)
            page.evaluate(SETTLED)
            assert page.evaluate(LIGHT), f"{name} did not open light"
            problems = [f"light: {p}" for p in violations(page)]
            page.locator(TO_DARK).click()
            page.wait_for_function(DARK)
            page.evaluate(TRANSITIONS_DONE)
            problems += [
                f"dark: {p}"
                for p in violations(page, rules=("color-contrast",))
            ]
            page.evaluate("localStorage.clear()")  # the next page: light
            if problems:
                found[name] = problems
    finally:
        page.close()
    assert found == {}, (
        "axe, fix our markup or CSS "
        "(docs/assets/lesson.css, a11y.js, overrides/main.html): "
        + "; ".join(f"{n}: {p}" for n, ps in found.items() for p in ps)
    )


@pytest.mark.browser
def test_contrast_is_judged_on_every_kind_of_text(browser, lesson_server):
    """axe's contrast rule runs on one element per way text is drawn
    (axe.py): one token made faint, deep in the longest page among
    thousands drawn like it before the change, is still found, and so
    is a faint paragraph."""
    page = browser.new_page(color_scheme="light")
    try:
        page.goto(lesson_server + "notebooks/lesson-81.html")
        page.wait_for_load_state("load")
        page.evaluate(SETTLED)
        faint = page.evaluate(
            """() => {
              const words = [...document.querySelectorAll("pre span")]
                .filter((e) => /[a-z]{3}/.test(e.textContent));
              const token = words[words.length - 5];
              token.style.color = "#eeeeee";
              const para = document.querySelector(".jp-MarkdownOutput p");
              para.style.color = "#f4f4f4";
              return [words.length, token.textContent, para.textContent];
            }"""
        )
        found = violations(page, rules=("color-contrast",))
    finally:
        page.close()
    count, token, para = faint
    assert count > 1000, "the page no longer has many code tokens"
    assert len(found) == 2, found
    assert any(f"{token}</span>" in f for f in found), found
    assert any("<p" in f for f in found), (para, found)
