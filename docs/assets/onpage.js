// lessonOnPage(fn): run fn once for every page the reader sees.
//
// A page is first shown when its DOM is ready; Material's instant
// navigation (when on) then swaps pages without a reload and announces
// each new one on its document$ observable. Waiting on document$ alone is
// not enough: opened from disk (file://) Material turns instant
// navigation off and document$ completes without ever emitting, so
// nothing would initialise. So fn runs on DOMContentLoaded (or at once if
// that has passed), and on every later document$ emission. document$
// replays the initial page to a late subscriber, so its first emission is
// always the page already handled and is skipped: no double initialising.
window.lessonOnPage = (fn) => {
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", () => fn());
  } else {
    fn();
  }
  const page$ = window.document$;
  let first = true;
  if (page$ && typeof page$.subscribe === "function") {
    page$.subscribe(() => {
      if (first) {
        first = false;
        return;
      }
      fn();
    });
  }
};
