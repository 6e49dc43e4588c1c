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

from pathlib import Path

import pytest

from lessonbuild.deck import read_deck

ROOT = Path(__file__).resolve().parents[2]
SLIDES = [
    (s.number, f"slides/{Path(s.path).with_suffix('.html').name}")
    for s in read_deck(ROOT).slides
]
# The notebook pages (mkdocs-jupyter) are read on phones too.
NOTEBOOKS = [
    (name, f"notebooks/{name}.html")
    for name in ("lesson-81", "homework", "homework-solutions")
]
VIEWPORTS = {"1280x800": (1280, 800), "390x844": (390, 844)}

# Returns one line per problem. Skipped: hidden things (closed details,
# [hidden], screen-reader text, KaTeX's MathML copy) and SVG internals
# (KaTeX draws braces and roots as huge paths clipped by their <svg>).
MEASURE = """
() => {
  // Formulas, tables and printed output must fit; only code may scroll.
  const MUST_FIT = ".katex-display, div.arithmatex, table, " +
    ".highlight:not(:has(code span)), .jp-OutputArea-output";
  const article = document.querySelector("article.md-content__inner");
  const column = article.parentElement.getBoundingClientRect();
  const TOLERANCE = 1;
  const name = (el) => {
    const parts = [];
    for (let e = el; e && e !== article; e = e.parentElement) {
      let s = e.tagName.toLowerCase();
      if (e.id) { parts.unshift(s + "#" + e.id); break; }
      const cls = [...e.classList].slice(0, 2).join(".");
      parts.unshift(cls ? s + "." + cls : s);
    }
    return parts.slice(-3).join(" > ");
  };
  const overflowX = (e) => getComputedStyle(e).overflowX;
  const problems = [];
  const reported = new Set();
  for (const el of article.querySelectorAll("*")) {
    if (el.ownerSVGElement) continue;
    if (el.closest(".katex-mathml, .ex-sr, [hidden]")) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    let box = null;
    for (let a = el.parentElement; a && a !== article; a = a.parentElement) {
      if (overflowX(a) !== "visible") { box = a; break; }
    }
    const c = box ? box.getBoundingClientRect() : column;
    const right = r.right - c.right;
    const left = c.left - r.left;
    if (Math.max(right, left) <= TOLERANCE) continue;
    const holder = box || el;
    if (reported.has(holder)) continue;
    reported.add(holder);
    const text = (el.textContent || "").trim().slice(0, 40);
    const scroller = box && ["auto", "scroll"].includes(overflowX(box));
    const kind = el.closest(MUST_FIT);
    if (kind) {
      problems.push(
        `${name(el)} (${kind.tagName.toLowerCase()}.` +
        `${[...kind.classList].slice(0, 1).join("")}) is ` +
        `${Math.round(Math.max(right, left))}px wider than ` +
        `${box ? name(box) : "the content column"}: a formula, table or ` +
        `output line must fit without a sideways scroll ("${text}")`
      );
      continue;
    }
    if (!scroller || left > TOLERANCE) {
      const where = box ? name(box) : "the content column";
      const side = left > TOLERANCE ? "left" : "right";
      problems.push(
        `${name(el)} is cut ${Math.round(Math.max(right, left))}px ` +
        `past the ${side} edge of ${where} ("${text}")`
      );
      continue;
    }
    const hidden = box.scrollWidth - box.clientWidth;
    const style = getComputedStyle(box);
    const mask = style.maskImage || style.webkitMaskImage || "none";
    const missing = [];
    if (box.scrollLeft < hidden - 1 &&
        !box.classList.contains("scroll-cue--right")) {
      missing.push("the scroll-cue--right class");
    }
    if (mask === "none") missing.push("a faded edge (mask-image)");
    if (box.getAttribute("tabindex") !== "0") missing.push('tabindex="0"');
    if (missing.length) {
      problems.push(
        `${name(box)} scrolls ${hidden}px sideways but lacks ` +
        `${missing.join(", ")} ("${text}")`
      );
    }
  }
  // Text overflows inside its scroller without an element of its own
  // (an Output line is a text node): a formula, table or output that
  // scrolls at all needs a sideways scroll.
  for (const box of article.querySelectorAll("*")) {
    if (!["auto", "scroll"].includes(overflowX(box))) continue;
    if (!box.closest(MUST_FIT) && !box.querySelector(MUST_FIT)) continue;
    if (box.closest(".katex-mathml, .ex-sr, [hidden]")) continue;
    const hidden = box.scrollWidth - box.clientWidth;
    if (hidden <= TOLERANCE || reported.has(box)) continue;
    reported.add(box);
    const text = (box.textContent || "").trim().slice(0, 40);
    problems.push(
      `${name(box)} needs a sideways scroll of ${hidden}px: a formula, ` +
      `table or output line must fit without one ("${text}")`
    );
  }
  return problems;
}
"""

# Each copy button that overlaps a visible character of its code.
COPY = """
() => {
  const hits = [];
  for (const nav of document.querySelectorAll("article pre > .md-code__nav")) {
    const b = nav.getBoundingClientRect();
    if (b.width === 0) continue;
    const code = nav.parentElement.querySelector("code");
    const view = code.getBoundingClientRect();
    const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    const range = document.createRange();
    let hit = null;
    for (let t = walker.nextNode(); t && !hit; t = walker.nextNode()) {
      if (!t.data.trim()) continue;
      range.selectNodeContents(t);
      for (const r of range.getClientRects()) {
        const x0 = Math.max(r.left, view.left);
        const x1 = Math.min(r.right, view.right);
        const y0 = Math.max(r.top, view.top);
        const y1 = Math.min(r.bottom, view.bottom);
        if (x1 <= x0 || y1 <= y0) continue;  // scrolled out of sight
        if (x0 < b.right - 0.5 && x1 > b.left + 0.5 &&
            y0 < b.bottom - 0.5 && y1 > b.top + 0.5) {
          hit = t.data.trim().slice(0, 30);
          break;
        }
      }
    }
    if (hit) {
      const title = nav.closest(".highlight")?.querySelector(".filename");
      hits.push(`the copy button of "${title ? title.textContent : "code"}"` +
                ` covers "${hit}"`);
    }
  }
  return hits;
}
"""

# a11y.js sets the cues once fonts are in and a frame has been laid out.
SETTLED = """
async () => {
  await document.fonts.ready;
  const frame = () => new Promise((r) => requestAnimationFrame(r));
  await frame();
  await frame();
}
"""


@pytest.fixture(scope="module")
def measured(browser, lesson_server):
    """Each viewport's findings, every slide opened once per viewport:
    {viewport: {"overflow" | "copy": {slide label: problems}}}."""
    results = {}
    for viewport, (width, height) in VIEWPORTS.items():
        found = {"overflow": {}, "copy": {}}
        page = browser.new_page(viewport={"width": width, "height": height})
        try:
            for number, path in SLIDES + NOTEBOOKS:
                page.goto(lesson_server + path)
                page.wait_for_load_state("load")
                page.evaluate(SETTLED)
                label = f"page {number} ({path})"
                for kind, script in (("overflow", MEASURE), ("copy", COPY)):
                    problems = page.evaluate(script)
                    if problems:
                        found[kind][label] = problems
        finally:
            page.close()
        results[viewport] = found
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
              // The program is a fold ("Show the reference"): open it.
              document.querySelectorAll("details").forEach(
                (d) => { d.open = true; });
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
def test_every_slide_fits_or_scrolls_with_a_cue(measured, viewport):
    found = measured[viewport]["overflow"]
    assert found == {}, report(
        found,
        f"at {viewport}, content wider than its container",
        "make it fit (break the line, aligned math) or scroll in one of "
        "a11y.js's SCROLLERS, which sets the cue and tabindex",
    )


@pytest.mark.browser
@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_copy_button_never_covers_code(measured, viewport):
    found = measured[viewport]["copy"]
    assert found == {}, report(
        found,
        f"at {viewport}, a copy button covers code",
        "see the copy-button rules in docs/assets/lesson.css",
    )
