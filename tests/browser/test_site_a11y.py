"""Every page of the lesson passes axe: no violation of any impact.

Whole pages (theme, code blocks, tables, math, figures and the exercise
widgets, once they are live) as a student meets them, in both palettes:
the home page, every slide, and the three notebook pages.
Minor and moderate findings count too (landmark-unique, empty table
headers): each is something a screen-reader user meets.
"""

from __future__ import annotations

import pytest

from tests.browser.axe import violations
from tests.browser.sweep import HOME, NOTEBOOKS, SETTLED, SLIDES, label


@pytest.mark.browser
def test_pages_pass_axe_in_both_palettes(desktop_sweep):
    """No page has an axe violation of any impact in the light palette;
    switched to the dark one, none of colour contrast. What the palette
    changes is colours: every other rule reads the markup, the same in
    both, so each page is loaded once and checked in both (sweep.py)."""
    every = [HOME, *SLIDES, *NOTEBOOKS]
    swept = desktop_sweep["pages"]
    assert [label(*p) for p in every if "axe" in swept[label(*p)]] == [
        label(*p) for p in every
    ]
    assert len(every) == 1 + 55 + 3
    found = {name: seen["axe"] for name, seen in swept.items() if seen["axe"]}
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


@pytest.mark.browser
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_phones_menu_passes_axe(browser, lesson_server, scheme):
    """The menu a phone opens (hidden beside a laptop's sidebar, so the
    page sweep never met it): the part it shows was named in the theme's
    light grey, 4.1:1 on the dark palette and 4.4:1 on the light (a
    student on a phone)."""
    page = browser.new_page(
        viewport={"width": 390, "height": 844}, color_scheme=scheme
    )
    try:
        page.goto(lesson_server + dict(SLIDES)[15])
        page.wait_for_load_state("load")
        page.locator("label.md-header__button[for='__drawer']").click()
        menu = page.locator(".md-sidebar--primary .md-nav--primary")
        menu.locator(".md-nav__title:not([for='__drawer'])").first.wait_for()
        page.evaluate(SETTLED)
        found = violations(page, ".md-sidebar--primary")
    finally:
        page.close()
    assert found == [], found
