// Accessibility fixes for Material's own markup, found by axe on every
// page (tests/browser/test_site_a11y.py). Runs on each page shown
// (lessonOnPage, onpage.js).
window.lessonOnPage(() => {
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
});
