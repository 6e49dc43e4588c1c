"""Every page of the lesson site opened once per viewport, for every
check that reads a whole page.

Opening the 59 pages (home, 55 slides, 3 notebook pages) is most of what
these checks cost, so each viewport's visit runs all of them on each
page and keeps the findings: the layout checks (test_layout.py) at
1280×800 and 390×844; at 1280×800 also the exercise widgets before any
answer (test_exercises_lesson.py) and axe in both palettes
(test_site_a11y.py), last, as switching the palette changes the page.
"""

from __future__ import annotations

from pathlib import Path

from lessonbuild.deck import read_deck
from tests.browser.axe import violations
from tests.browser.conftest import Pages, wait_for_widgets

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
HOME = ("home", "index.html")
DESKTOP, PHONE = (1280, 800), (390, 844)

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
  // Material's button (inside its pre) and mkdocs-jupyter's (before
  // the cell's highlighted pre), each with the code it sits on.
  const pairs = (buttons, code) => [...document.querySelectorAll(buttons)]
    .map((nav) => [nav, nav.parentElement.querySelector(code)]);
  const buttons = [
    ...pairs("article pre > .md-code__nav", "code"),
    ...pairs(".jupyter-wrapper .zeroclipboard-container",
             ".highlight-ipynb pre"),
  ];
  for (const [nav, code] of buttons) {
    const b = nav.getBoundingClientRect();
    if (b.width === 0 || !code) continue;
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
      const name = title ? title.textContent :
        nav.closest(".jp-CodeCell") ? "a notebook cell" : "code";
      hits.push(`the copy button of "${name}" covers "${hit}"`);
    }
  }
  return hits;
}
"""

# Code under 12 px, and a code block's buttons under 24 px (a tap
# target), anywhere on the page: a closed fold's too (computed styles).
# Material sets code at .85em of its box: 10.9 px in a fold or a table,
# and a fold's copy button was 19 px (a student on a phone).
SMALL = """
() => {
  const found = new Set();
  for (const code of document.querySelectorAll("article code")) {
    if (code.closest(".katex")) continue;
    const size = parseFloat(getComputedStyle(code).fontSize);
    if (size < 11.99) {
      const text = code.textContent.trim().slice(0, 30);
      found.add(`code at ${size.toFixed(1)}px (at least 12): "${text}"`);
    }
  }
  for (const button of document.querySelectorAll("article .md-code__button")) {
    const style = getComputedStyle(button);
    const [w, h] = [parseFloat(style.width), parseFloat(style.height)];
    if (Math.min(w, h) < 23.99) {
      const size = `${w.toFixed(1)}x${h.toFixed(1)}px`;
      found.add(`a code button ${size} (at least 24)`);
    }
  }
  return [...found].slice(0, 5);
}
"""

# Each line break inside inline code that splits a token: code breaks at
# a space, before ".name", and in a table cell after an underscore
# between words, a bracket or a "*" (the <wbr> the build puts there:
# code_breaks in lessonbuild/pagehtml.py), never mid-word
# ("transpose(1" / "," / "2)" on a phone's order widget, "num_" /
# "heads" in a line).
BROKEN_CODE = """
() => {
  const hits = [];
  const range = document.createRange();
  for (const code of document.querySelectorAll("article code")) {
    if (code.closest("pre, .katex")) continue;
    const text = code.textContent;
    const cell = !!code.closest("td, th");  // there, after _ ( [ * too
    let at = 0, top = null;
    const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    for (let t = walker.nextNode(); t; t = walker.nextNode()) {
      for (let i = 0; i < t.data.length; i++, at++) {
        if (/\\s/.test(t.data[i])) continue;
        range.setStart(t, i);
        range.setEnd(t, i + 1);
        const rects = range.getClientRects();
        if (!rects.length) continue;  // hidden
        const now = rects[0].top;
        if (top !== null && now > top + 2) {
          const before = text[at - 1];
          const ok = /\\s/.test(before) || t.data[i] === "." ||
            (cell && "_([*".includes(before));
          if (!ok) {
            hits.push(`"${text.slice(Math.max(0, at - 15), at)}" / ` +
              `"${text.slice(at, at + 15)}" in "${text.slice(0, 40)}"`);
          }
        }
        top = now;
      }
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


#: Text that would give a verdict away before the student has answered.
VERDICTS = r"""() => {
  const text = document.querySelector(".md-content").innerText;
  return [...text.matchAll(/\u2713|\bCorrect\b/g)].map(
    (m) => text.slice(Math.max(0, m.index - 30), m.index + 30));
}"""
#: Per exercise section: its kind, and whether its controls are shown.
WIDGETS = """() => [...document.querySelectorAll("section.exercise")].map(
  (el) => ({
    kind: el.getAttribute("data-ex-kind"),
    ready: el.hasAttribute("data-ex-ready"),
    actions: !!el.querySelector(".ex-actions") &&
      el.querySelector(".ex-actions").getBoundingClientRect().height > 0,
  }))"""


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


def label(number, path: str) -> str:
    return f"page {number} ({path})"


def visit(browser, base: str, size, axe: bool) -> dict:
    """One visit of every page at ``size`` (width, height): {page label:
    {finding: value}}, and {"errors": [...]} for JavaScript errors.

    Findings: "overflow", "copy", "breaks" and "small" (slides and
    notebooks);
    with ``axe`` also "verdicts" and "widgets" (slides) and "axe" (every
    page: light, then dark's colour contrast).
    """
    width, height = size
    opened = Pages(browser, base)
    slides = dict(SLIDES).values()
    pages = ([HOME] if axe else []) + SLIDES + NOTEBOOKS
    found = {}
    try:
        page = opened.open(
            pages[0][1],
            viewport={"width": width, "height": height},
            color_scheme="light",
        )
        for number, path in pages:
            page.goto(base + path)
            page.wait_for_load_state("load")
            wait_for_widgets(page)
            page.evaluate(SETTLED)
            seen = found[label(number, path)] = {}
            if (number, path) != HOME:
                seen["overflow"] = page.evaluate(MEASURE)
                seen["copy"] = page.evaluate(COPY)
                seen["breaks"] = page.evaluate(BROKEN_CODE)
                seen["small"] = page.evaluate(SMALL)
            if not axe:
                continue
            if path in slides:
                seen["verdicts"] = page.evaluate(VERDICTS)
                seen["widgets"] = page.evaluate(WIDGETS)
            assert page.evaluate(LIGHT), f"{path} did not open light"
            problems = [f"light: {p}" for p in violations(page)]
            page.locator(TO_DARK).click()
            page.wait_for_function(DARK)
            page.evaluate(TRANSITIONS_DONE)
            problems += [
                f"dark: {p}"
                for p in violations(page, rules=("color-contrast",))
            ]
            page.evaluate("localStorage.clear()")  # the next page: light
            seen["axe"] = problems
    finally:
        opened.close()
    return {"pages": found, "errors": opened.errors}
