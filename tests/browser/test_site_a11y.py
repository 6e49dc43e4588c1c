"""Every page of the lesson passes axe: no serious or critical violation.

The exercise tests check the widgets; this checks whole pages (theme,
code blocks, tables, math) as a student meets them, in both palettes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lessonbuild.deck import read_deck
from tests.browser.axe import serious_violations

ROOT = Path(__file__).resolve().parents[2]
SLIDES = read_deck(ROOT).slides
ALL_PAGES = ["index.html"] + [
    f"slides/{Path(s.path).with_suffix('.html').name}" for s in SLIDES
]
# Dark palette: the landing page and the first slide of every kind.
ONE_PER_KIND = ["index.html"] + [
    f"slides/{Path(s.path).with_suffix('.html').name}"
    for s in {s.kind: s for s in reversed(SLIDES)}.values()
]


@pytest.mark.browser
@pytest.mark.parametrize(
    ("scheme", "pages"), [("light", ALL_PAGES), ("dark", ONE_PER_KIND)]
)
def test_pages_pass_axe(browser, lesson_server, scheme, pages):
    """No page has a serious or critical axe violation."""
    assert len(ALL_PAGES) == 56
    page = browser.new_page(color_scheme=scheme)
    found = {}
    for name in pages:
        page.goto(lesson_server + name)
        page.wait_for_load_state("load")
        violations = serious_violations(page)
        if violations:
            found[name] = violations
    page.close()
    assert found == {}
