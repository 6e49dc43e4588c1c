// Accessibility fixes for Material's own markup, found by axe on every
// page (tests/browser/test_site_a11y.py), and the scroll cue that says a
// block is wider than the column (tests/browser/test_layout.py). Runs on
// each page shown (lessonOnPage, onpage.js).

// Blocks that scroll sideways instead of overflowing the column: tables
// (Material's wrapper, and the exercises' own), display math, code, and
// on a phone the figures (figures.css).
const SCROLLERS = [
  ".md-typeset .md-typeset__scrollwrap",
  ".md-typeset div.arithmatex",
  ".md-typeset pre > code",
  ".md-typeset .ex-table",
  ".md-typeset .lesson-figure",
  // Notebook pages (mkdocs-jupyter): code cells and their outputs.
  ".jupyter-wrapper .highlight-ipynb",
  ".jupyter-wrapper .jp-OutputArea-output",
].join(", ");

// A scroller with content hidden past an edge carries scroll-cue--left
// and/or scroll-cue--right (lesson.css fades that edge), and is
// focusable so a keyboard can scroll it (axe: scrollable-region-focusable).
function updateCue(el) {
  const hidden = el.scrollWidth - el.clientWidth;
  const overflowing = hidden > 1;
  el.classList.toggle("scroll-cue--left", overflowing && el.scrollLeft > 1);
  el.classList.toggle(
    "scroll-cue--right",
    overflowing && el.scrollLeft < hidden - 1,
  );
  if (overflowing && !el.hasAttribute("tabindex")) {
    el.setAttribute("tabindex", "0");
  }
}

const watched = new WeakSet();
const resized = new ResizeObserver((entries) => {
  for (const entry of entries) updateCue(entry.target);
});

function watchScrollers() {
  for (const el of document.querySelectorAll(SCROLLERS)) {
    if (watched.has(el)) {
      updateCue(el);
      continue;
    }
    watched.add(el);
    el.addEventListener("scroll", () => updateCue(el), { passive: true });
    resized.observe(el);
    updateCue(el);
  }
}

// Material's fixes, idempotent: run again after Material mounts the page.
function fixMaterial() {
  // The search overlay is a dialog without a name (aria-dialog-name).
  const search = document.querySelector('.md-search[role="dialog"]');
  if (search && !search.hasAttribute("aria-label")) {
    search.setAttribute("aria-label", "Search");
  }
  // Wide display math scrolls sideways; keyboard users must reach it
  // (scrollable-region-focusable).
  for (const el of document.querySelectorAll("div.arithmatex")) {
    if (!el.hasAttribute("tabindex")) el.setAttribute("tabindex", "0");
  }
  // Each code block's copy button sits in an unnamed <nav>: a page with
  // two code blocks has two identical landmarks (landmark-unique). Name
  // each after its block: number and title.
  const navs = document.querySelectorAll("nav.md-code__nav");
  navs.forEach((nav, i) => {
    const title = nav.closest(".highlight")?.querySelector(".filename");
    const label = title ? ` (${title.textContent.trim()})` : "";
    nav.setAttribute("aria-label", `Code block ${i + 1}${label}`);
  });
}

function fixPage() {
  fixMaterial();
  watchScrollers();
}

window.lessonOnPage(() => {
  fixPage();
  // Material mounts code blocks and wraps tables after the DOM is ready,
  // and web fonts change widths once loaded: look again after both.
  requestAnimationFrame(fixPage);
  if (document.fonts) document.fonts.ready.then(fixPage);
});
window.addEventListener("load", fixPage);
