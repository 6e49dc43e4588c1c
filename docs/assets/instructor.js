// Reading pages: the "Instructor view" switch and the Shift+P shortcut.
//
// The instructor notes (<details class="instructor">) are for whoever
// teaches, so reading pages hide them (instructor.css) until this switch
// shows them; the choice is remembered in localStorage. Shift+P opens the
// deck at the slide on screen, at the screen that holds what is at the top
// of the window, like the "Present" link next to the switch (Material
// already uses p , n . f s / without Shift).
(() => {
  

  const KEY = "lesson81:instructor-view";
  const CLASS = "lesson-instructor";

  function remembered() {
    try {
      return window.localStorage.getItem(KEY) === "on";
    } catch (_e) {
      return false;
    }
  }
  function remember(on) {
    try {
      window.localStorage.setItem(KEY, on ? "on" : "off");
    } catch (_e) { /* not persisted (private mode) */ }
  }

  function apply(on) {
    document.documentElement.classList.toggle(CLASS, on);
    const button = document.querySelector(".instructor-switch");
    if (button) button.setAttribute("aria-pressed", on ? "true" : "false");
  }

  function init() {
    const button = document.querySelector(".instructor-switch");
    apply(remembered());
    if (!button || button.getAttribute("data-ready")) return;
    button.hidden = false;
    button.setAttribute("data-ready", "");
    button.addEventListener("click", () => {
      const on = !document.documentElement.classList.contains(CLASS);
      remember(on);
      apply(on);
    });
  }

  function typing(target) {
    return target && (target.isContentEditable ||
      /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  }

  // The deck's screen for what is at the top of the window: the page's
  // top-level blocks, cut at the author's screen breaks as the deck cuts
  // them (decklayout._cut_screens), a part with nothing on stage (only
  // reading-only blocks) being no screen. Zero-based.
  const OFF_STAGE = ".reading, .notebook-download, details.instructor";
  function screenOnTop() {
    const article = document.querySelector("article.md-content__inner");
    if (!article) return 0;
    const header = document.querySelector(".md-header");
    const top = header ? header.getBoundingClientRect().bottom : 0;
    let screens = 0; // screens complete before the current part
    let staged = false; // the current part has something on stage
    let found = -1;
    for (const el of article.children) {
      if (el.classList.contains("screen-break")) {
        if (found >= 0) break;
        if (staged) screens += 1;
        staged = false;
        continue;
      }
      if (!el.matches(OFF_STAGE) && !el.matches("script, style")) staged = true;
      if (found < 0 && el.getBoundingClientRect().bottom > top) found = screens;
    }
    if (found < 0) found = staged ? screens : Math.max(screens - 1, 0);
    else if (!staged) found = Math.max(found - 1, 0); // a reading-only part
    return found;
  }

  // Back to the deck after R: the deck remembered its screen and step
  // (present.js, sessionStorage "deck/return"). Unless the reader has
  // scrolled since (by wheel, touch or key), that place wins over the
  // scroll position, which may still be settling on R's anchor.
  let scrolledByHand = false;
  for (const type of ["wheel", "touchmove"]) {
    window.addEventListener(type, () => { scrolledByHand = true; }, { passive: true });
  }
  document.addEventListener("keydown", (event) => {
    if (/^(Arrow|Page|Home|End| )/.test(event.key) && !typing(event.target)) {
      scrolledByHand = true;
    }
  });
  function deckRemembers(link) {
    try {
      const place = JSON.parse(window.sessionStorage.getItem("deck/return") || "null");
      const slide = /#\/(\d+)$/.exec(link.getAttribute("href") || "");
      return Boolean(place && slide && place.slide === slide[1]);
    } catch (_e) {
      return false;
    }
  }

  function present(link) {
    if (!scrolledByHand && deckRemembers(link)) {
      window.location.href = link.href; // #/N: the deck restores its place
      return;
    }
    // #/N/V, V one-based: the screen read, even the first (a bare #/N
    // would let the deck restore the place R left).
    window.location.href = `${link.href}/${screenOnTop() + 1}`;
  }

  document.addEventListener("keydown", (event) => {
    if (event.key !== "P" || !event.shiftKey) return;
    if (event.ctrlKey || event.altKey || event.metaKey) return;
    if (typing(event.target)) return;
    const link = document.querySelector(".present-link");
    if (!link) return;
    event.preventDefault();
    present(link);
  });
  document.addEventListener("click", (event) => {
    const link = event.target.closest?.(".present-link");
    if (!link || event.button !== 0 || event.ctrlKey || event.metaKey ||
        event.shiftKey || event.altKey) return; // a new tab: the slide
    event.preventDefault();
    present(link);
  });

  apply(remembered());
  window.lessonOnPage(init);
})();
