"""Every page of the lesson passes axe: no violation of any impact.

Whole pages (theme, code blocks, tables, math, figures and the exercise
widgets, once they are live) as a student meets them, in both palettes.
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
ALL_PAGES = ["index.html"] + [
    f"slides/{Path(s.path).with_suffix('.html').name}" for s in SLIDES
]
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


#: What the palette changes: colours. Every other axe rule reads the
#: markup, the same in both palettes, so the dark run checks contrast
#: alone (half the time of a full run; the suite's longest test).
PALETTE_RULES = {"light": None, "dark": ("color-contrast",)}


@pytest.mark.browser
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_pages_pass_axe(browser, lesson_server, scheme):
    """No page has an axe violation of any impact: every rule in the
    light palette, colour contrast in the dark one."""
    assert len(ALL_PAGES) == 56
    page = browser.new_page(color_scheme=scheme)
    found = {}
    try:
        for name in ALL_PAGES:
            page.goto(lesson_server + name)
            page.wait_for_load_state("load")
            wait_for_widgets(page)
            page.evaluate(SETTLED)
            problems = violations(page, rules=PALETTE_RULES[scheme])
            if problems:
                found[name] = problems
    finally:
        page.close()
    assert found == {}, (
        f"axe ({scheme} palette), fix our markup or CSS "
        "(docs/assets/lesson.css, a11y.js, overrides/main.html): "
        + "; ".join(f"{n}: {p}" for n, ps in found.items() for p in ps)
    )
