// Accessibility fixes for Material's own markup, found by axe on every
// page (tests/browser/test_site_a11y.py). Runs on each page change.
(function () {
  function fix() {
    // The search overlay is a dialog without a name (aria-dialog-name).
    var search = document.querySelector('.md-search[role="dialog"]');
    if (search && !search.hasAttribute("aria-label")) {
      search.setAttribute("aria-label", "Search");
    }
    // Wide display math scrolls sideways; keyboard users must reach it
    // (scrollable-region-focusable).
    document.querySelectorAll("div.arithmatex").forEach(function (el) {
      if (!el.hasAttribute("tabindex")) el.setAttribute("tabindex", "0");
    });
  }
  if (typeof document$ !== "undefined") {
    document$.subscribe(fix);
  } else {
    document.addEventListener("DOMContentLoaded", fix);
  }
})();
