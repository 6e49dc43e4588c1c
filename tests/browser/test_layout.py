"""Nothing clipped: every slide fits its column, or scrolls with a cue.

At 1280×800 and 390×844, on every slide and notebook page, formulas,
tables and printed output fit the column: none is cut, none needs a
sideways scroll (issue 30). Every other element (code) either
fits inside its container (the nearest ancestor that clips, else the
content column) or sits in a sideways scroller that shows it: the
scroller carries the scroll-cue class of the edge with hidden content,
that edge is faded (a CSS mask, lesson.css), and it is focusable so a
keyboard can scroll it (a11y.js). Content cut off on the left of a
scroller can never be scrolled to, so it always fails. Code's copy
button never covers a character of code.

The site is the real build (LESSON_SITE_DIR, or tests/conftest.py builds
it); each failure names the slide and the element.
"""

from __future__ import annotations

import pytest

from tests.browser.conftest import smallest_label
from tests.browser.sweep import BROKEN_CODE, COPY, MEASURE, SETTLED, SLIDES

VIEWPORTS = ("1280x800", "390x844")


#: Each finding of the page sweeps: what it means, and how to fix it.
FINDINGS = {
    "overflow": (
        "content wider than its container",
        "make it fit (break the line, aligned math) or scroll in one of "
        "a11y.js's SCROLLERS, which sets the cue and tabindex",
    ),
    "copy": (
        "a copy button covers code",
        "see the copy-button rules in docs/assets/lesson.css",
    ),
    "breaks": (
        "inline code broken inside a token",
        "the build marks where code may break (code_breaks in "
        "lessonbuild/pagehtml.py); give it room or a break",
    ),
    "small": (
        "code under 12 px or a code button under 24 px",
        "see the code-size rules in docs/assets/lesson.css",
    ),
}


@pytest.fixture(scope="module")
def measured(desktop_sweep, phone_sweep):
    """Each viewport's findings (every slide and notebook page opened once
    per viewport by sweep.py): {viewport: {kind of FINDINGS: {page
    label: problems}}}."""
    results = {}
    for viewport, swept in zip(
        VIEWPORTS, (desktop_sweep, phone_sweep), strict=True
    ):
        results[viewport] = {
            kind: {
                page: seen[kind]
                for page, seen in swept["pages"].items()
                if seen.get(kind)
            }
            for kind in FINDINGS
        }
    return results


def report(found, what, fix):
    lines = [f"{slide}: {p}" for slide, ps in found.items() for p in ps]
    return f"{what}; {fix}:\n" + "\n".join(lines)


@pytest.mark.browser
def test_measure_finds_cut_content_and_cueless_scrollers(
    browser, lesson_server
):
    """The measurement can fail: a too-wide block, a scroller without a
    cue and content cut off on a scroller's left are each reported."""
    page = browser.new_page(viewport={"width": 390, "height": 844})
    try:
        page.goto(lesson_server + SLIDES[0][1])
        page.wait_for_load_state("load")
        page.evaluate(SETTLED)
        assert page.evaluate(MEASURE) == [], "slide 1 itself must be clean"
        page.evaluate(
            """() => {
              const a = document.querySelector("article");
              a.insertAdjacentHTML("beforeend",
                '<p id="wide" style="width:2000px">wide</p>' +
                '<div id="nocue" style="overflow-x:auto">' +
                '<p style="width:2000px">scrolls</p></div>' +
                '<div id="cut" style="overflow-x:auto">' +
                '<p style="margin-left:-50px">cut</p></div>');
            }"""
        )
        problems = "\n".join(page.evaluate(MEASURE))
    finally:
        page.close()
    assert "p#wide is cut" in problems, problems
    assert "div#nocue scrolls" in problems, problems
    assert "tabindex" in problems, problems
    assert "past the left edge of div#cut" in problems, problems
    # A formula, table or output line never passes by scrolling.
    page = browser.new_page(viewport={"width": 390, "height": 844})
    try:
        page.goto(lesson_server + SLIDES[0][1])
        page.wait_for_load_state("load")
        page.evaluate(SETTLED)
        page.evaluate(
            """() => {
              const a = document.querySelector("article");
              a.insertAdjacentHTML("beforeend",
                '<div style="overflow-x:auto" tabindex="0">' +
                '<table id="widetable"><tr><td style="white-space:nowrap">' +
                "x".repeat(200) + '</td></tr></table></div>');
            }"""
        )
        problems = "\n".join(page.evaluate(MEASURE))
    finally:
        page.close()
    assert "a formula, table or output line must fit" in problems, problems


@pytest.mark.browser
def test_copy_check_finds_a_button_over_code(browser, lesson_server):
    """The copy check can fail: a button moved onto the first line of
    slide 51's program is reported."""
    page = browser.new_page(viewport={"width": 390, "height": 844})
    try:
        page.goto(lesson_server + dict(SLIDES)[51])
        page.wait_for_load_state("load")
        page.evaluate(SETTLED)
        assert page.evaluate(COPY) == [], "slide 51 itself must be clean"
        page.evaluate(
            """() => {
              // The program is a fold ("Show the reference"), locked
              // until the exercise above it is tried: open it.
              document.querySelectorAll("details").forEach(
                (d) => { d.hidden = false; d.open = true; });
              const nav = document.querySelector(".md-code__nav");
              Object.assign(nav.style, {top: "0.9em", bottom: "auto",
                                        left: "0.5em", right: "auto"});
            }"""
        )
        hits = page.evaluate(COPY)
    finally:
        page.close()
    assert len(hits) == 1 and "51_full_program.py" in hits[0], hits


@pytest.mark.browser
@pytest.mark.parametrize("viewport", VIEWPORTS)
@pytest.mark.parametrize("kind", list(FINDINGS))
def test_no_page_has_it(measured, viewport, kind):
    """Every slide fits its column or scrolls with a cue ("overflow"),
    no copy button covers code ("copy"), inline code breaks only
    between tokens ("breaks"), and code reads at 12 px, its buttons
    24 px ("small")."""
    what, fix = FINDINGS[kind]
    found = measured[viewport][kind]
    assert found == {}, report(found, f"at {viewport}, {what}", fix)


@pytest.mark.browser
def test_broken_code_check_finds_a_token_split(browser, lesson_server):
    """The check can fail: slide 33's order widget, its code without the
    build's break marks, at a phone's width, splits tokens."""
    page = browser.new_page(viewport={"width": 390, "height": 844})
    try:
        page.goto(lesson_server + dict(SLIDES)[33])
        page.wait_for_load_state("load")
        page.evaluate(SETTLED)
        assert page.evaluate(BROKEN_CODE) == [], "slide 33 must be clean"
        page.evaluate(
            """() => document.querySelectorAll(".ex-step code wbr")
              .forEach((w) => w.remove())"""
        )
        hits = page.evaluate(BROKEN_CODE)
    finally:
        page.close()
    assert any("transpose" in hit for hit in hits), hits


#: Smallest label a figure may have on a reading page, in CSS pixels:
#: on a laptop; and on a phone, whose column draws each narrow layout
#: 278 px wide (slides 31 and 41's position labels were 10.7 px there:
#: a student on a phone).
LEAST_LABEL = {"1280x800": 9, "390x844": 11.5}


@pytest.mark.browser
@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_figure_labels_are_legible(
    browser, lesson_server, built_site, viewport
):
    """Every figure of every slide, as drawn at this width (a phone's
    column is narrower than a wide figure can shrink to: it shows the
    figure's narrow layout, or else scrolls sideways, which
    test_no_page_has_it checks), has labels of at least LEAST_LABEL CSS
    pixels."""
    width, height = map(int, viewport.split("x"))
    pages = [
        path
        for _, path in SLIDES
        if "lesson-figure" in (built_site / path).read_text(encoding="utf-8")
    ]
    assert pages, "the lesson has figures"
    context = browser.new_context(viewport={"width": width, "height": height})
    small = []
    try:
        page = context.new_page()
        for path in pages:
            page.goto(lesson_server + path)
            for img in page.locator(".lesson-figure img").all():
                img.scroll_into_view_if_needed()
                img.evaluate("(i) => i.decode()")  # loaded and laid out
                url = img.evaluate("(i) => i.currentSrc")
                src = url.removeprefix(lesson_server)
                drawn = img.evaluate("(i) => i.getBoundingClientRect().width")
                least = smallest_label(built_site, src, drawn)
                if least < LEAST_LABEL[viewport]:
                    small.append(f"{path}: {src} labels at {least:.1f}px")
    finally:
        context.close()
    assert not small, small


@pytest.mark.browser
@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_a_phone_gets_each_figures_narrow_layout_whole(
    browser, lesson_server, built_site, viewport
):
    """A figure drawn for a phone too (publish_figure's ``narrow``)
    shows that drawing on a phone, whole in the column, not 500 px to
    scroll sideways (slides 31 and 41 did); a desktop gets the wide one."""
    width, height = map(int, viewport.split("x"))
    phone = width < 500
    context = browser.new_context(viewport={"width": width, "height": height})
    seen, wrong = 0, []
    try:
        page = context.new_page()
        for _, path in SLIDES:
            html = (built_site / path).read_text(encoding="utf-8")
            if "lesson-figure--narrow" not in html:
                continue
            page.goto(lesson_server + path)
            for figure in page.locator(".lesson-figure--narrow").all():
                figure.scroll_into_view_if_needed()
                img = figure.locator("img")
                img.evaluate("(i) => i.decode()")
                src = img.evaluate("(i) => i.currentSrc")
                hidden = figure.evaluate(
                    "(f) => f.scrollWidth - f.clientWidth"
                )
                seen += 1
                if src.endswith(".narrow.svg") != phone or (phone and hidden):
                    wrong.append(f"{path}: {src}, {hidden}px scrolled out")
    finally:
        context.close()
    assert seen >= 5, "the figures of slides 9, 12, 17, 31 and 41 have one"
    assert not wrong, wrong


@pytest.mark.browser
def test_a_phone_gives_notebook_code_the_whole_column(lesson_pages):
    """On a phone the "In [ ]:" column took a third of the width: a code
    cell's code had 240 of 358 px, its text under the copy button."""
    from tests.browser.sweep import NOTEBOOKS

    narrow = {}
    for _, path in NOTEBOOKS:
        page = lesson_pages.open(path, width=390)
        page.wait_for_selector(".jp-CodeCell .jp-InputArea")
        narrow[path] = page.evaluate(
            """() => [...document.querySelectorAll(
                '.jp-CodeCell .jp-InputArea')]
            .map((area) => {
                const code = area.lastElementChild;  // after its prompt
                return code.getBoundingClientRect().width /
                    area.getBoundingClientRect().width;
            }).filter((share) => share < 0.9)"""
        )
    assert not any(narrow.values()), narrow


# The copy button's icon (its colour, drawn through a mask) against what
# is under it: its bar, then the code block, composited; WCAG's ratio.
COPY_CONTRAST = """() => {
  const rgba = (c) => {
    const v = (c.match(/[\\d.]+/g) || []).map(Number);
    return v.length === 3 ? [...v, 1] : v.length ? v : [0, 0, 0, 0];
  };
  const over = (top, under) => top.slice(0, 3)
    .map((v, i) => v * top[3] + under[i] * (1 - top[3]));
  const lum = (c) => {
    const f = (v) => (v /= 255) <= 0.03928 ? v / 12.92
      : ((v + 0.055) / 1.055) ** 2.4;
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  };
  return [...document.querySelectorAll('.md-code__button[data-md-type=copy]')]
    .map((button) => {
      const layers = [];
      for (let el = button; el; el = el.parentElement) {
        layers.push(rgba(getComputedStyle(el).backgroundColor));
      }
      let under = [255, 255, 255];
      for (const layer of layers.reverse()) under = over(layer, under);
      const [a, b] = [lum(over(rgba(getComputedStyle(button).color),
                                under)), lum(under)];
      return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    });
}"""


@pytest.mark.browser
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_phone_shows_the_copy_button(browser, lesson_server, scheme):
    """A touch screen has no hover, which is what makes Material's copy
    button visible: at rest it measured 1.2:1 against the code on a
    phone, in both palettes. It keeps 3:1 (WCAG's for an icon) there."""
    context = browser.new_context(
        viewport={"width": 390, "height": 844},
        is_mobile=True,
        has_touch=True,
        color_scheme=scheme,
    )
    try:
        page = context.new_page()
        page.goto(lesson_server + dict(SLIDES)[7])
        page.wait_for_selector(".md-code__button[data-md-type=copy]")
        assert page.evaluate("matchMedia('(hover: none)').matches")
        ratios = page.evaluate(COPY_CONTRAST)
        assert ratios and min(ratios) >= 3, ratios
    finally:
        context.close()
