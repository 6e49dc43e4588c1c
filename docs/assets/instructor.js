// Reading pages: the "Instructor view" switch and the Shift+P shortcut.
//
// The instructor notes (<details class="instructor">) are for whoever
// teaches, so reading pages hide them (instructor.css) until this switch
// shows them; the choice is remembered in localStorage. Shift+P opens the
// deck at the slide on screen, like the "Present" link next to the switch
// (Material already uses p , n . f s / without Shift).
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

  document.addEventListener("keydown", (event) => {
    if (event.key !== "P" || !event.shiftKey) return;
    if (event.ctrlKey || event.altKey || event.metaKey) return;
    if (typing(event.target)) return;
    const link = document.querySelector(".present-link");
    if (!link) return;
    event.preventDefault();
    window.location.href = link.href;
  });

  apply(remembered());
  window.lessonOnPage(init);
})();
