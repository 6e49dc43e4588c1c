// The deck (present.html): start reveal.js on the screens the build laid out.
//
// scripts/lessonbuild/present.py decided at build time what is on each
// screen (one stack per slide, one section per screen, folds as steps), so
// nothing is measured or split here. This file only sets reveal.js up for
// a classroom: every forward key visits every screen and step (linear
// navigation), exercise buttons never swallow those keys, the deck's
// answers are its own (cleared for a new lecture, "Reset all answers"),
// R and Shift+P keep the place, and the speaker view typesets math once.
(() => {
  const CONFIG = JSON.parse(document.getElementById("deck-config").textContent);
  const PRINT = /print-pdf/.test(window.location.search);
  // The speaker view's preview frames (reveal's notes plugin adds it).
  const RECEIVER = /[?&]receiver/.test(window.location.search);
  // Of those, the one of what comes next (the plugin hides its controls).
  const UPCOMING = RECEIVER && /[?&]controls=false/.test(window.location.search);
  // Exercise answers given in the deck (decklayout.DECK_KEY), kept in
  // this tab's sessionStorage (exercises.js): a lecture is one tab, its
  // reloads (R and back, the speaker view's frames) keep them, a new tab
  // starts empty and leaves other tabs' answers alone. The reading pages'
  // answers are under other keys and never show here.
  const DECK_KEY = "deck/";

  function all(root, selector) {
    return Array.prototype.slice.call(root.querySelectorAll(selector));
  }

  // --- classroom mode -------------------------------------------------------

  function forgetDeckAnswers() {
    try {
      const keys = [];
      for (let i = 0; i < window.sessionStorage.length; i++) {
        const key = window.sessionStorage.key(i);
        if (key && key.indexOf(DECK_KEY) === 0) keys.push(key);
      }
      keys.forEach((key) => {
        window.sessionStorage.removeItem(key);
      });
    } catch (_e) { /* storage unavailable: nothing was kept */ }
  }

  // Beside the Reading page link: a slip of the mouse must not wipe
  // the class's answers.
  function resetAll() {
    if (!window.confirm("Clear every answer given in this deck?")) return;
    forgetDeckAnswers();
    window.location.reload();
  }

  // Forward and back move the deck whatever has the focus (a clicker
  // sends PageDown/PageUp, → or Space): an exercise's button or option
  // clicked with the mouse would otherwise take Space or an arrow. Two
  // exceptions: typing in a text field keeps Space and the arrows (but
  // see atEdge), and an exercise's option or button reached by Tab keeps
  // Space (see onKey); Escape leaves either.
  const FORWARD = { ArrowRight: 1, " ": 1, PageDown: 1, ArrowDown: 1 };
  const BACK = { ArrowLeft: 1, PageUp: 1, ArrowUp: 1 };
  // A field's own key, in the deck and its speaker preview alike: typing
  // keeps Space and the arrows, a list ↑ and ↓ (its pick); a clicker's
  // PageDown and PageUp, and a list's →, ← and Space, move the deck (→
  // on a list left focused changed the class's answer unseen, and Space
  // did nothing: a rehearsal from disk); so do → and ← past the text
  // (atEdge). Live code's editor keeps every key, PageDown and PageUp
  // too (they moved the slide from under the code being typed: a
  // tester); Escape or a run (Ctrl+Enter) gives them back (live.js).
  function fieldKeeps(el, key) {
    const list = el?.tagName === "SELECT";
    const own = !list || key === "ArrowUp" || key === "ArrowDown";
    const page = (key === "PageDown" || key === "PageUp") && !el?.closest?.(".live-editor");
    return typing(el) && own && !page && !atEdge(el, key);
  }
  function typing(el) {
    if (!el) return false;
    if (el.isContentEditable || el.tagName === "TEXTAREA") return true;
    if (el.tagName === "SELECT") return true;
    return el.tagName === "INPUT" && !/^(radio|checkbox|button|submit|reset)$/.test(el.type);
  }
  // → with the caret after a field's last character (← before its first)
  // has nothing left to move over: it moves the deck. A presenter who
  // clicked into a box to type the class's answer was stuck there with a
  // clicker that sends → and Space (→ did nothing, Space typed spaces;
  // only Esc left it: a rehearsal at 1280x720).
  function atEdge(el, key) {
    if (key !== "ArrowRight" && key !== "ArrowLeft") return false;
    const { selectionStart: start, selectionEnd: end } = el;
    if (typeof start !== "number" || start !== end) return false;
    return key === "ArrowRight" ? end === el.value.length : start === 0;
  }
  // The fill-in cell ``step`` places on from ``el`` in its exercise, if any.
  function siblingCell(el, step) {
    if (!el.matches("input.ex-cell")) return null;
    const cells = all(el.closest(".exercise"), "input.ex-cell");
    return cells[cells.indexOf(el) + step] || null;
  }
  // The jump box (G, then a slide's number): reveal.js's moved the deck
  // as the number was typed and landed with the screen's steps taken, a
  // screen behind showing its answers ("back to slide 30" gave the class
  // slide 30's answer, and typing "30" showed slide 3's on the way). Here
  // a number moves the deck on Enter only, to the screen's first step,
  // and so does a word (see findScreen). A clicker's forward and back
  // keys close the box and step (G pressed by mistake left the clicker
  // dead until someone reached the keyboard: a rehearsal). Escape is
  // reveal.js's: it closes the box where the jump began (the deck's own
  // Escape, leave a text field, swallowed it).
  function jumpBox(event, box) {
    const text = box.value.trim();
    const arrow = event.key === "ArrowRight" || event.key === "ArrowLeft";
    if (event.key === "PageDown" || event.key === "PageUp" || (arrow && !text)) {
      box.blur(); // reveal.js closes the box when it loses the focus
      return false; // the key steps the deck (onKey)
    }
    if (event.key !== "Enter") return true;
    event.preventDefault();
    event.stopPropagation();
    if (!text) {
      box.blur(); // nothing asked: closed, as reveal.js's was
      return true;
    }
    const at = /^\d+$/.test(text) ? [Number(text) - 1, 0] : findScreen(text);
    box.setAttribute("aria-invalid", String(!at));
    if (!at) return true; // the box stays, marked, for another word
    // Past the last slide, the last (G 99 did nothing, and said nothing).
    const last = window.Reveal.getHorizontalSlides().length - 1;
    box.blur();
    window.Reveal.slide(Math.max(0, Math.min(at[0], last)), at[1], -1);
    return true;
  }
  // The next screen after this one that says ``words`` (any case, as
  // written: reveal.js's own search read them as a regular expression,
  // and "view(B" threw; it also took the deck's first match, so "d_k"
  // always went to slide 2), round to this one: [slide, screen], or
  // null. What the screen shows or steps to, a formula by its TeX too
  // (KaTeX keeps it: "W^O"): not its notes, a closed fold (an answer),
  // or an exercise's data (a word of the answer found its slide).
  function findScreen(words) {
    const want = words.toLowerCase().replace(/\s+/g, " ");
    if (!want.trim()) return null;
    const screens = window.Reveal.getHorizontalSlides().flatMap((slide, h) => {
      const stack = all(slide, ":scope > section");
      return (stack.length ? stack : [slide]).map((screen, v) => [h, v, screen]);
    });
    const { h, v } = window.Reveal.getIndices();
    const here = screens.findIndex((s) => s[0] === h && s[1] === v);
    const unseen = "aside.notes, details:not([open]) > :not(summary), [hidden], script, template, style";
    for (let i = 1; i <= screens.length; i++) {
      const [sh, sv, screen] = screens[(here + i) % screens.length];
      const copy = screen.cloneNode(true);
      for (const gone of all(copy, unseen)) gone.remove();
      if (copy.textContent.toLowerCase().replace(/\s+/g, " ").includes(want)) return [sh, sv];
    }
    return null;
  }
  // A bucket's list moves its item into the bucket on a pick, and the
  // moved list lost the focus: the next ↓ stepped the deck and opened
  // the answer (a rehearsal). The list keeps it, and ↓ picks on: taken
  // back in the same event, after the widget's own handler (a task
  // later, a quick second ↓ came first), and kept clear of the cue.
  let picking = null; // the focused list whose pick is changing
  document.addEventListener(
    "change",
    (event) => {
      const list = event.target;
      picking = list.tagName === "SELECT" && document.activeElement === list ? list : null;
    },
    true,
  );
  document.addEventListener("change", () => {
    const list = picking;
    picking = null;
    if (!list?.isConnected || document.activeElement === list) return;
    list.focus();
    fitScreen();
    clearOfCue(list);
  });
  // (Typing no longer moves the deck: see jumpBox.)
  window.addEventListener(
    "input",
    (event) => {
      if (!event.target.matches?.(".jump-to-slide-input")) return;
      event.stopPropagation();
      event.target.removeAttribute("aria-invalid");
    },
    true,
  );
  // An exercise's option or button (not reveal.js's arrows), and whether
  // the focus came with a click (else with Tab): see onKey.
  const CONTROL = ".exercise :is(input[type=radio], input[type=checkbox], button)";
  let clicked = false;
  window.addEventListener("pointerdown", () => (clicked = true), true);
  function onKey(event) {
    if (event.key === "Tab") clicked = false;
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.key === "s" || event.key === "S") {
      makeNotes(); // before reveal opens the speaker view
      reopenSpeaker();
      // Blacked out, reveal.js takes no S: a presenter who blacked the
      // screen to talk could not open the notes.
      if (window.Reveal.isPaused()) window.Reveal.getPlugin("notes")?.open();
    }
    // "?" opens the help and closes it again, on any keyboard (reveal.js
    // opens it on the US key code with Shift alone, took only Esc once
    // it was open, and read a "?" without Shift as its pause key).
    if (event.key === "?" && !typing(document.activeElement)) {
      event.preventDefault();
      event.stopPropagation();
      window.Reveal.toggleHelp(!document.querySelector(".reveal .r-overlay-help"));
      return;
    }
    let el = document.activeElement;
    if (el?.matches?.(".jump-to-slide-input")) {
      if (jumpBox(event, el)) return;
      el = document.activeElement;
    }
    // (A button clicked with the mouse leaves Escape to reveal.js: the overview.)
    const control = el?.matches?.(CONTROL) && (!clicked || el.tagName === "INPUT");
    if (event.key === "Escape" && (typing(el) || control)) {
      el.blur();
      event.preventDefault();
      event.stopPropagation();
      return;
    }
    // reveal.js takes no key while an input has the focus, an option
    // too: B (black), G, S or F after a click on the class's option did
    // nothing (a rehearsal). A letter or sign leaves the option first.
    if (el?.tagName === "INPUT" && !typing(el) && event.key.length === 1 && event.key !== " ") {
      el.blur();
      el = document.activeElement;
    }
    const forward = FORWARD[event.key] && !event.shiftKey;
    // Shift + an arrow jumps to the first or last slide: reveal.js's.
    const back = (BACK[event.key] && !event.shiftKey) || (event.key === " " && event.shiftKey);
    if (!forward && !back) return;
    // The overview's arrows move between screens: reveal.js's own.
    const over = window.Reveal.isOverview();
    if (over && event.key.startsWith("Arrow")) return;
    // (The overview and the help take the key whatever has the focus.)
    if (over || document.querySelector(".reveal .r-overlay")) {
      event.preventDefault();
      event.stopPropagation();
      step(forward);
      return;
    }
    // A radio or button reached by Tab keeps Space, and a radio ↑ and ↓
    // (its pick): at a keyboard no option could be picked, and Space on
    // Check opened the answer (a rehearsal). One clicked leaves them to
    // the clicker. (:focus-visible cannot tell: a key press sets it.)
    // (Not reveal.js's arrows: Space on a Tab-focused ‹ stepped back.)
    const its = (event.key === " " && !event.shiftKey) || (el?.type === "radio" && (event.key === "ArrowUp" || event.key === "ArrowDown"));
    if (el?.matches?.(CONTROL) && its && !clicked) {
      event.stopPropagation();
      return;
    }
    // Past a fill-in cell's text, the arrow goes to the next cell (the
    // previous with ←): a clicker has no Tab, and the next step, the
    // whole key, opened once the first cell was typed (a fresh-eyes check).
    const edge = typing(el) && atEdge(el, event.key);
    const cell = edge && siblingCell(el, event.key === "ArrowRight" ? 1 : -1);
    if (cell) {
      event.preventDefault();
      event.stopPropagation();
      cell.focus();
      const at = event.key === "ArrowRight" ? cell.value.length : 0;
      cell.setSelectionRange(at, at);
      return;
    }
    if (fieldKeeps(el, event.key)) {
      // The field's own key: reveal.js, which does not count a list as a
      // field, stepped on a bucket list's ↓ instead of changing its pick.
      event.stopPropagation();
      return;
    }
    event.preventDefault();
    event.stopPropagation();
    if (el && el !== document.body && el.blur && !window.Reveal.isPaused()) el.blur();
    step(forward);
  }

  // One step forward or back, by a key of the deck's or of the speaker
  // view's (speakerKey).
  function step(forward) {
    if (window.Reveal.isOverview()) {
      moveScreen(forward);
      return;
    }
    // An overlay (the help, "?") hides the stage: the key closes it and
    // moves nothing the class cannot see (reveal.js moved the deck behind).
    if (document.querySelector(".reveal .r-overlay")) {
      window.Reveal.toggleHelp(false);
      return;
    }
    // Blacked out (B), a next or back key brings the screen back and
    // moves nothing: the class sees the screen it left (to a presenter
    // at a clicker, a press that did nothing read as a dead clicker).
    if (window.Reveal.isPaused()) {
      window.Reveal.togglePause(false);
      return;
    }
    if (forward) window.Reveal.next();
    else window.Reveal.prev();
  }

  // The overview's PageDown, PageUp and Space stepped through the
  // screen's hidden steps (an answer opened where the class could not
  // see it): in an overview they move a screen, down the slide's
  // screens, then on, each reached with none of its steps shown
  // (reveal.js's left showed all of them, the way a screen looks once
  // passed).
  function moveScreen(forward) {
    const { h, v } = window.Reveal.getIndices();
    const routes = window.Reveal.availableRoutes();
    const screens = (i) =>
      window.Reveal.getHorizontalSlides()[i].querySelectorAll(":scope > section").length;
    if (forward && routes.down) window.Reveal.slide(h, v + 1, -1);
    else if (forward && routes.right) window.Reveal.slide(h + 1, 0, -1);
    else if (!forward && routes.up) window.Reveal.slide(h, v - 1, -1);
    else if (!forward && routes.left) window.Reveal.slide(h - 1, Math.max(screens(h - 1) - 1, 0), -1);
  }

  // The speaker view hands its keys to its preview of this screen (this
  // script, ?receiver), a deck of its own whose moves the deck follows,
  // each coming back to the preview (reveal.js's notes plugin, as a bare
  // key code; both ways throttled). Keys a clicker sends 0.1-0.25 s apart
  // crossed that echo and were undone: 12 presses went 6 or 7 steps, and
  // B right after → blacked out the preview alone (a rehearsal). Step
  // and black-out keys go to the deck itself (deckKey), and the preview
  // follows it; the others (G, O, F) stay the preview's. A place the
  // speaker view sets here is the deck's: the preview does not tell it
  // back (the view compares it with the deck's latest, and an older one,
  // arriving late, took the deck back). Keys pressed in the preview
  // itself (the focus stays there after G, or a click on it) go the
  // same way, with Shift; in the preview's overview (O) they move the
  // deck a screen, as the deck's own overview does (its → stepped the
  // projector into the answers).
  const SPEAKER_KEYS = {
    ...Object.fromEntries([32, 34, 39, 40, 74, 76, 78].map((code) => [code, "next"])),
    ...Object.fromEntries([33, 37, 38, 72, 75, 80].map((code) => [code, "back"])),
    ...Object.fromEntries([66, 86, 190].map((code) => [code, "pause"])), // B, V, period
    191: "none", // "?" comes as "/" (a pause): the help is the deck's
  };
  function toDeck(code, shift) {
    const deck = window.parent?.opener; // the speaker view's opener
    if (!SPEAKER_KEYS[code] || !deck || deck.closed) return false;
    const overview = window.Reveal.isOverview();
    deck.postMessage(JSON.stringify({ namespace: "lesson-deck", type: "key", code, shift, overview }), "*");
    return true;
  }
  function speakerKey(event) {
    let data;
    try {
      data = JSON.parse(event.data);
    } catch {
      return;
    }
    if (data?.method === "setState" && event.source === window.parent) {
      event.stopImmediatePropagation();
      // (reveal.js reads the live setting as each event is sent.)
      const config = window.Reveal.getConfig();
      const telling = config.postMessageEvents;
      config.postMessageEvents = false;
      // What comes next shows while the screen is black: the presenter
      // who blacked it out to talk still sees where the next key goes.
      if (UPCOMING && data.args?.[0]) data.args[0].paused = false;
      try {
        window.Reveal.setState(...data.args);
      } finally {
        config.postMessageEvents = telling;
      }
      return;
    }
    if (data?.method === "triggerKey" && toDeck(data.args?.[0], false)) {
      event.stopImmediatePropagation();
    }
  }
  function previewKey(event) {
    const el = document.activeElement;
    if (el?.matches?.(".jump-to-slide-input")) {
      jumpBox(event, el);
      return;
    }
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.key === "Escape" && typing(el)) {
      el.blur(); // as in the deck: Escape leaves a field
      event.stopPropagation();
      return;
    }
    // (reveal.js here stepped the preview on a list's ↓ and sent that to
    // the deck: the bucket's answer on the projector.)
    if (fieldKeeps(el, event.key)) {
      event.stopPropagation();
      return;
    }
    if (!toDeck(event.keyCode, event.shiftKey)) return;
    event.preventDefault();
    event.stopPropagation();
    if (el && el !== document.body) el.blur?.(); // an option clicked in it
  }
  // A click on the preview's arrows steps the deck too: the preview's
  // own move reached the deck up to 0.5 s late (the notes plugin's
  // throttle), after keys that followed it, and took the deck back.
  function previewArrow(event) {
    const arrow = event.target.closest?.(".controls button");
    const forward = /navigate-(right|down)/.test(arrow?.className);
    if (arrow && toDeck(forward ? 39 : 37, false)) {
      event.preventDefault();
      event.stopPropagation();
    }
  }
  function deckKey({ code, shift, overview }) {
    const key = SPEAKER_KEYS[code];
    document.querySelector(".reveal .jump-to-slide-input")?.blur(); // closes it
    if (key === "pause") window.Reveal.togglePause();
    else if (key !== "next" && key !== "back") return;
    // The help open or the screen black: the key closes it or brings it
    // back and moves nothing (step), Shift + an arrow too.
    else if (document.querySelector(".reveal .r-overlay") || window.Reveal.isPaused()) step(true);
    else if (shift && EDGES[code]) EDGES[code]();
    else if (shift && code === 32) step(false); // as in the deck (onKey)
    else if (shift && code !== 78 && code !== 80) return; // the deck: no Shift + PageDown...
    else if (overview && !window.Reveal.isPaused()) moveScreen(key === "next");
    else step(key === "next");
  }
  // Shift + an arrow, as reveal.js has it in the deck: the first or last
  // slide (← →), the first or last screen of this one (↑ ↓).
  const EDGES = {
    37: () => window.Reveal.slide(0, 0, -1),
    39: () => window.Reveal.slide(window.Reveal.getHorizontalSlides().length - 1, 0, -1),
    38: () => window.Reveal.slide(window.Reveal.getIndices().h, 0, -1),
    40: () => window.Reveal.slide(window.Reveal.getIndices().h, Number.MAX_VALUE, -1),
  };

  // Opened mid-screen, the speaker view's preview loads at the screen's
  // first step and, before it has connected, sends that place to the
  // deck: the projector went back to the screen's start, an answer on
  // show hidden (a rehearsal). The deck takes no place from a window it
  // opened until that window has connected (a speaker view it took back
  // after a reload, by its heartbeat, connected before).
  const connecting = new WeakSet(); // opened here, not yet connected
  let speaker = null; // the speaker view this deck opened last
  const openWindow = window.open;
  window.open = (...args) => {
    const opening = openWindow.apply(window, args);
    if (opening) connecting.add(opening);
    if (args[1] === SPEAKER) speaker = opening;
    return opening;
  };
  // The speaker view is a page the deck writes: reloaded, it is blank,
  // and S only brought the blank window to the front (reveal.js's notes
  // plugin opens one window, once). S closes a blank one first, so that
  // S opens the speaker view again.
  function reopenSpeaker() {
    if (!speaker || speaker.closed) return;
    let blank = true;
    try {
      blank = !speaker.document.getElementById("current-slide");
    } catch (_e) { /* reloaded from a file: a page of no origin, blank */ }
    if (blank) speaker.close();
  }
  function placeMessage(event) {
    let data;
    try {
      data = JSON.parse(event.data);
    } catch {
      return;
    }
    const from = event.source;
    if (!from || from === window) return;
    if (data?.namespace === "lesson-deck" && data.type === "key") deckKey(data);
    else if (data?.namespace === "reveal-notes" && data.type === "connected") connecting.delete(from);
    else if (data?.method === "setState" && connecting.has(from)) event.stopImmediatePropagation();
    else if (data?.namespace === "reveal-notes" && data.type === "heartbeat" && !speaker) speaker = from;
    else if (data?.namespace === "reveal-notes" && data.type === "call") answer(event, data);
  }
  // The speaker view's calls (its pacing timer's, each second) are
  // answered here, to the window that called: reveal.js answers the view
  // it opened last, whoever called (a call from the view S replaced threw
  // in the new one: "pendingCalls[data.callId] is not a function"), and
  // from file:// none once the deck reloaded (its same-origin check
  // fails there). Only what the view reads, and only the view, is answered.
  const ANSWERED = new Set(["getSlidesAttributes", "getConfig", "getSlidePastCount"]);
  function answer(event, { methodName, callId }) {
    event.stopImmediatePropagation();
    if (event.source !== speaker || !ANSWERED.has(methodName)) return;
    const result = window.Reveal[methodName]();
    speaker.postMessage(JSON.stringify({ namespace: "reveal-notes", type: "return", result, callId }), "*");
  }

  // --- an exercise's key: a step -------------------------------------------

  // An exercise's answer and "why" are steps (decklayout). A widget that
  // opens them itself (a committed prediction opens both) moves the deck
  // to the first it opened, so the class sees the answer (the why lay
  // over it), and the next key shows the why.
  let pending = null;
  function keyOpened(event) {
    const fold = event.target;
    if (!fold.open || !fold.matches?.("details.ex-key.fragment")) return;
    if (fold.classList.contains("visible") || pending) return;
    // (A toggle is told a task later: one the deck made as it stepped
    // on and then left the screen stays that screen's, not the next's.)
    if (!window.Reveal.getCurrentSlide()?.contains(fold)) return;
    pending = requestAnimationFrame(() => {
      pending = null;
      const first = fold.closest(".exercise").querySelector(
        "details.ex-key.fragment[open]:not(.visible)");
      if (first) window.Reveal.navigateFragment(+first.getAttribute("data-fragment-index"));
    });
  }

  // --- R and Shift+P keep the place -----------------------------------------

  function currentStack() {
    const slide = window.Reveal.getCurrentSlide();
    return slide?.closest("[data-slide]");
  }

  // A link to another slide ("slide 17") goes to it in the deck, to the
  // screen holding its anchor if it names one: followed, the reading
  // page took the projector's tab. A link to this very page ("#") stays
  // put (it sent the deck to slide 1); any other page, this slide's own
  // reading page (its "Reading page" link) too, opens as a link does.
  function followInDeck(event) {
    const link = event.target.closest?.("a[href]");
    if (!link || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey) return;
    const [path, anchor] = link.getAttribute("href").split("#");
    const stacks = all(document, ".reveal .slides > section");
    const h = stacks.findIndex((stack) => stack.getAttribute("data-reading") === path);
    if (path && (h < 0 || stacks[h].contains(link))) return;
    event.preventDefault();
    if (!path) return;
    const id = `s${stacks[h].getAttribute("data-slide")}-${anchor}`;
    const screens = all(stacks[h], ":scope > section");
    const v = anchor ? screens.findIndex((screen) => screen.querySelector(`[id="${id}"]`)) : 0;
    window.Reveal.slide(h, Math.max(v, 0), -1);
  }

  // R: the reading page, scrolled to the first heading of this screen or
  // before it (its anchor), so the reader is where the class is. The
  // screen and step are remembered for this tab: the reading page's
  // Present link (Shift+P) names only the slide, and comes back to them.
  const RETURN = "deck/return";
  // The address the deck was opened at: reveal.js rewrites it once it
  // shows the slide (#/15/1 becomes #/15), so it is read before.
  const OPENED_AT = window.location.hash;
  // The address names the step shown (see the events that call it).
  function writeAddress() {
    try {
      window.history.replaceState(window.history.state, "", `#${window.Reveal.getSlidePath()}`);
    } catch (_e) { /* too many writes in a row (Safari): reveal.js's comes */ }
  }

  function toReading() {
    const stack = currentStack();
    if (!stack) return;
    const where = window.Reveal.getIndices();
    try {
      window.sessionStorage.setItem(
        RETURN,
        JSON.stringify({ slide: stack.getAttribute("data-slide"), v: where.v, f: where.f })
      );
    } catch (_e) { /* not remembered: Shift+P opens the slide's first screen */ }
    const screen = window.Reveal.getCurrentSlide();
    const screens = all(stack, ":scope > section");
    let anchor = "";
    for (let i = screens.indexOf(screen); i >= 0 && !anchor; i--) {
      const heads = all(screens[i], ".deck-body h2[id], .deck-body h3[id]");
      const head = i === screens.indexOf(screen) ? heads[0] : heads[heads.length - 1];
      if (head) anchor = head.id.replace(/^s\d+-/, "");
    }
    writeAddress(); // Back from the reading page returns to this step
    window.location.href = stack.getAttribute("data-reading") + (anchor ? `#${anchor}` : "");
  }

  // Back from the reading page (Shift+P opens #/N, or #/N/V for the screen
  // it was scrolled to): the screen and step R left, if R left that screen.
  function backToPlace() {
    let place = null;
    try {
      place = JSON.parse(window.sessionStorage.getItem(RETURN) || "null");
      window.sessionStorage.removeItem(RETURN);
    } catch (_e) { return; }
    // #/N, or #/N/V: the reading page names the screen it was scrolled to.
    const asked = /^#\/(\d+)(?:\/(\d+))?$/.exec(OPENED_AT);
    if (!place || !asked || asked[1] !== place.slide) return;
    if (asked[2] !== undefined && Number(asked[2]) - 1 !== (place.v || 0)) return;
    const h = window.Reveal.getIndices().h;
    window.Reveal.slide(h, place.v || 0, place.f === undefined ? -1 : place.f);
  }

  // --- speaker view -----------------------------------------------------------

  // Each slide's instructor notes arrive as one JSON list (deck-notes), not
  // as elements: parsed up front, they were a fifth of the deck's first
  // paint. They become each screen's <aside class="notes">, where reveal's
  // notes plugin and print view read them, when first needed: the handout,
  // the speaker view (S), or the first idle moment after the deck shows.
  // The speaker view's window has none of the deck's stylesheets, so a
  // link to KaTeX's CSS travels with notes that hold math (else both of
  // its layers, MathML and HTML, would show).
  function makeNotes() {
    const list = document.getElementById("deck-notes");
    if (!list) return; // made already
    list.remove();
    const notes = JSON.parse(list.textContent);
    // KaTeX's CSS, and its rule that hides the MathML copy inline: where
    // the speaker window cannot load the sheet, each formula still reads
    // once ("T T", "h h" otherwise).
    const math =
      `<link rel="stylesheet" href="${new URL(CONFIG.katex, document.baseURI).href}">` +
      "<style>.katex .katex-mathml{position:absolute;clip:rect(1px,1px,1px,1px);" +
      "padding:0;border:0;height:1px;width:1px;overflow:hidden}</style>";
    all(document, ".reveal .slides > section").forEach((stack, i) => {
      const html = (notes[i].includes('class="katex') ? math : "") + notes[i];
      // The speaker view needs them on every screen; the notes edition
      // prints them once a slide, after its first screen (a five-screen
      // slide printed its notes five times, 24 of 222 pages).
      const screens = all(stack, ":scope > section");
      (PRINT ? screens.slice(0, 1) : screens).forEach((screen) => {
        const aside = document.createElement("aside");
        aside.className = "notes";
        aside.innerHTML = html;
        // The speaker view is its own window: a link there opens a tab
        // (followed, the notes and the timer were gone); one to this
        // very slide ("#") is its number, no link.
        for (const link of aside.querySelectorAll("a[href]")) {
          if (link.getAttribute("href").startsWith("#")) link.removeAttribute("href");
          else Object.assign(link, { href: link.href, target: "_blank", rel: "noopener" });
        }
        screen.appendChild(aside);
      });
    });
    noteLetters();
    // An exercise that reshuffles its options (Try another) re-letters
    // them, the notes' too (exercises.js): an open speaker view is sent
    // the notes again (it read them at the last step, and showed the old
    // letters while the class answered: a re-check).
    const relabelled = new MutationObserver(() => {
      window.Reveal.dispatchEvent({ type: "closeoverlay" }); // the notes plugin re-sends on it
    });
    for (const list of all(document, ".reveal .ex-option-list")) {
      relabelled.observe(list, { childList: true });
    }
  }

  // Each option letter of the notes (ref(): data-ex-letter-of, its
  // author's) as its exercise shows it now: the notes are made after a
  // reshuffle restored on load (exercises.js relabelled none of them),
  // and a note can name another slide's option.
  function noteLetters() {
    for (const span of all(document, ".reveal aside.notes [data-ex-in][data-ex-letter-of]")) {
      const { exIn, exLetterOf } = span.dataset;
      const ex = all(document, `.reveal .exercise[id$="${exIn}"]`).find(
        (e) => e.id.replace(/^s\d+-/, "") === exIn,
      );
      const shown = ex?.querySelector(`.ex-option[data-ex-option="${exLetterOf}"] .ex-letter`);
      if (shown) span.textContent = shown.textContent.replace(".", "");
    }
  }

  // --- the speaker view's notes fit its window; its Shift keys -----------------

  const SPEAKER = "reveal.js - Notes";
  // The aid runs in the speaker window itself (its script, below), not
  // as this page's listeners on it: those went with this page when the
  // deck was reloaded or left for the reading page (R) and back, and
  // reveal.js took the window back without them (notes at 1.2em past
  // the panel's foot, Shift + → one step). Keys reach the deck as the
  // preview's do, by a message to the window's opener (the deck's tab).
  function aidSpeaker(win) {
    let tries = 0;
    const look = () => {
      if (win.closed) return;
      const doc = win.document;
      if (!doc.querySelector(".speaker-controls-notes .value")) {
        if (++tries < 100) window.setTimeout(look, 100); // until it is written
        return;
      }
      const script = doc.createElement("script");
      script.textContent = `(${speakerAid})(${JSON.stringify(SPEAKER_KEYS)});`;
      doc.head.append(script);
    };
    look();
  }
  // (Runs in the speaker window: it names nothing of this script's.)
  function speakerAid(keys) {
    // reveal.js's speaker view sets the notes at 1.2em under the clocks,
    // in a panel that scrolls: at 1280x720 every slide's notes ran past
    // its foot (slide 41: 850 px in 432), out of a clicker's reach, and
    // "Watch for" and the pacing line were never in view. Their type
    // shrinks, to 0.6em at the least, until the panel holds them.
    const notes = document.querySelector(".speaker-controls-notes .value");
    const panel = document.getElementById("speaker-controls");
    const fit = () => {
      let size = 1.2; // reveal.js's own
      notes.style.fontSize = `${size}em`;
      while (panel.scrollHeight > panel.clientHeight && size > 0.6) {
        size = Math.round((size - 0.05) * 100) / 100;
        notes.style.fontSize = `${size}em`;
      }
    };
    new MutationObserver(fit).observe(notes, { childList: true, subtree: true });
    // Another layout picked: the panel's room changed (the notes stayed
    // at the old layout's size, past the panel's foot, until the next
    // slide).
    new MutationObserver(fit).observe(document.body, { attributeFilter: ["data-speaker-layout"] });
    window.addEventListener("resize", fit);
    document.addEventListener("load", fit, true); // the notes' math stylesheet
    fit();
    // reveal.js starts the timer at 0 when the window opens: opened (or
    // reopened: closed, or blank after a reload) at slide 41, the pacing
    // line counted every earlier slide's minutes as still to come,
    // "1:32:49 to finish current slide" (a rehearsal). Once the view has
    // read the timings (the pacing line shows), the timer starts where
    // the plan puts this screen: reveal.js's own reset, a click on it.
    const clocks = document.querySelector(".speaker-controls-time");
    const pacing = clocks?.querySelector(".pacing");
    const sync = new MutationObserver(() => {
      if (pacing.style.display === "none") return;
      sync.disconnect();
      clocks.click();
    });
    if (pacing) sync.observe(pacing, { attributes: true, attributeFilter: ["style"] });
    if (pacing && pacing.style.display !== "none") clocks.click();
    // A key here reaches the preview as a bare key code: Shift + an
    // arrow or Space moved one step forward (the deck's own went to the
    // first or last slide, or back), so those go to the deck from here.
    // The layout list, once picked, took the clicker's arrows (the
    // layout changed and the previews went): a step key leaves it first.
    window.addEventListener("keydown", (event) => {
      const key = keys[event.keyCode];
      if (!key || event.altKey || event.ctrlKey || event.metaKey) return;
      if (event.target?.tagName === "SELECT") {
        event.preventDefault();
        event.target.blur();
      }
      if (!event.shiftKey || key === "pause") return;
      event.preventDefault();
      event.stopImmediatePropagation();
      const message = { namespace: "lesson-deck", type: "key", code: event.keyCode, shift: true, overview: false };
      window.opener?.postMessage(JSON.stringify(message), "*");
    }, true);
  }
  // The speaker view opens in its "Tall" layout until the instructor picks
  // another (reveal.js keeps the pick): the notes get the whole right
  // column. In the default layout, under the clocks, the longest notes
  // fitted its 1100x700 window only at 0.6em (10.8 px); tall, at 1em.
  const LAYOUT = "reveal-speaker-layout";
  if (!RECEIVER) {
    const open = window.open;
    window.open = function (...args) {
      if (args[1] === SPEAKER) {
        try {
          if (!localStorage.getItem(LAYOUT)) localStorage.setItem(LAYOUT, "tall");
        } catch {} // storage off: reveal.js's default
      }
      const win = open.apply(this, args);
      if (win && args[1] === SPEAKER) aidSpeaker(win);
      return win;
    };
  }

  // --- the handout ------------------------------------------------------------

  // Printed, a fold is a page of its own after its screen (on stage it is
  // a panel laid over the screen): every answer open, nothing shrunk.
  function foldsToPages() {
    all(document, ".reveal .slides > section > section").forEach((screen) => {
      let after = screen;
      // In the order the deck offers them: an exercise's hint (a fold
      // to click) first, then the steps by their index (slides 45, 47
      // and 49 step to their hint before the answer the page has first).
      const folds = all(screen, "details.deck-fold");
      const order = (fold) => {
        if (fold.matches(".ex-key--hint")) return -1;
        const index = fold.getAttribute("data-fragment-index");
        return index === null ? Number.POSITIVE_INFINITY : Number(index);
      };
      folds.sort((a, b) => order(a) - order(b)).forEach((fold) => {
        const page = document.createElement("section");
        page.className = "deck-fold-page";
        const meta = screen.querySelector(".deck-meta")?.cloneNode(true);
        // Its slide's title in the meta line: an answer page away from its
        // question says which it answers (as a heading, it pushed three
        // answers' last lines onto a page of their own).
        const title = screen.parentNode.querySelector(".deck-body > h1");
        if (meta && title) {
          const of = meta.insertBefore(document.createElement("span"), meta.children[1] ?? null);
          of.className = "deck-fold-of";
          of.textContent = title.textContent;
        }
        if (meta) page.appendChild(meta);
        const body = document.createElement("div");
        body.className = "md-typeset deck-body";
        fold.open = true;
        fold.hidden = false; // an exercise's key, shut until an attempt
        // Shown as its step shows it: a fill-in's key with the numbers of
        // the variant on the page, not "(after you have tried)".
        const exercise = fold.matches(".ex-key") && fold.closest(".exercise");
        if (exercise) exercise.dispatchEvent(new CustomEvent("lesson:reveal"));
        body.appendChild(fold);
        page.appendChild(body);
        after.parentNode.insertBefore(page, after.nextSibling);
        after = page;
      });
    });
    all(document, ".exercise details").forEach((d) => {
      d.open = true;
    });
  }

  // --- reveal.js ----------------------------------------------------------

  // What a panel covers whole or not at all (openSteps).
  const LINES =
    ".deck-body :is(h1, h2, h3, p, li, tr, pre, summary, label, button, textarea, input, select, .arithmatex, .highlight)";

  // A fold that is a step is open exactly while reveal.js shows it. Its
  // own step's event is not enough: reached by ←, a link or a reload,
  // reveal.js marks a screen's earlier steps shown without one, and
  // their panels came up empty.
  // An exercise's key shown by its step is unlocked first (the widget
  // shows it only after an attempt); stepped back past, and nothing
  // tried, it is shut again (its summary line would take the room the
  // screen was laid out without).
  // Of the panels shown, the last step's is on top (deck-fold--top): a
  // hint shown before an exercise's answer sits after it in the page,
  // and covered it at the same z-index. The others are hidden, but for
  // an answer under its why (deck-fold--under).
  function openSteps() {
    const screen = window.Reveal.getCurrentSlide();
    if (!screen || PRINT) return;
    const folds = all(screen, "details.deck-fold.fragment");
    const step = (fold) => Number(fold.getAttribute("data-fragment-index"));
    const top = folds.filter((f) => f.classList.contains("visible"))
      .reduce((a, b) => (a && step(a) > step(b) ? a : b), null);
    folds.forEach((fold) => {
      fold.classList.toggle("deck-fold--top", fold === top);
      const shown = fold.classList.contains("visible");
      // (A hint is no key: it is never shut.)
      const exercise = fold.matches(".ex-key:not(.ex-key--hint)") && fold.closest(".exercise");
      if (exercise && shown && fold.hidden) {
        exercise.dispatchEvent(new CustomEvent("lesson:reveal"));
      }
      fold.open = shown;
      if (exercise && !shown && !exercise.hasAttribute("data-ex-tried")) {
        fold.hidden = true;
      }
    });
    // A panel rises from the stage's bottom as tall as it needs. Where
    // its top edge would cut across a line of the screen (a title, a
    // paragraph, a code block, a formula, an exercise's question, option,
    // field or button), it grows to cover that line whole: half a line
    // read badly; its lines stay at its top, under what it leaves in
    // view. An answer stacked on its why grows at its top instead
    // (padding), so that its lines stay just above the why: they had a
    // blank band between them. Measured on screen, then in the stage's
    // own pixels.
    folds.forEach((fold) => {
      fold.style.height = "";
      fold.style.paddingTop = "";
      fold.style.top = "";
      fold.classList.remove("deck-fold--under");
    });
    if (!top) return;
    let most = Number.parseFloat(window.getComputedStyle(top).maxHeight);
    // An exercise's why explains its answer: where both fit the stage,
    // the answer stays in view just above the why (the why covered it).
    let edge = top;
    const answer = top.matches(".ex-key--why") &&
      top.closest(".exercise")?.querySelector("details.ex-key--answer.visible");
    if (answer && answer.offsetHeight + top.offsetHeight <= most) {
      answer.classList.add("deck-fold--under");
      answer.style.top = `${top.offsetTop - top.offsetHeight}px`;
      most -= top.offsetHeight;
      edge = answer;
    }
    const scale = window.Reveal.getScale() || 1;
    for (let round = 0; round < 8; round++) {
      const box = edge.getBoundingClientRect();
      // Not the lines of another panel: hidden under these, it may still
      // be fading out (reveal.js), and the panel grew over it.
      const cut = all(screen, LINES)
        .filter((line) => !line.closest("details.deck-fold[open]") &&
          line.checkVisibility({ visibilityProperty: true }))
        .map((line) => line.getBoundingClientRect())
        .filter((r) => r.top < box.top - 1 && box.top + 1 < r.bottom);
      if (!cut.length) break;
      const reach = Math.min(...cut.map((r) => r.top));
      const height = Math.min((box.bottom - reach) / scale + 6, most);
      if (edge === top) {
        edge.style.height = `${height}px`;
      } else {
        const padding = Number.parseFloat(window.getComputedStyle(edge).paddingTop);
        edge.style.paddingTop = `${padding + height - edge.offsetHeight}px`;
      }
      if (height >= most) break;
    }
  }

  // --- a screen the class's answer made taller --------------------------------

  // Every screen fits the stage as first shown. An answer can make one
  // taller (every item sorted into one bucket, a reason under each struck
  // option, a why under each cell): that screen then scrolls inside the
  // stage, with a cue at its foot, and the verdict just given is brought
  // into view; the stage itself never moves.
  function fitScreen() {
    const screen = window.Reveal.getCurrentSlide();
    if (!screen || PRINT) return;
    const grown = screen.scrollHeight > CONFIG.height + 1;
    screen.classList.toggle("deck-grown", grown);
    if (grown) {
      markEnd(screen);
    } else {
      screen.scrollTop = 0;
      screen.classList.remove("deck-grown--end");
    }
  }

  // The cue goes once the screen's end is in view.
  function markEnd(screen) {
    const end = screen.scrollTop + screen.clientHeight >= screen.scrollHeight - 2;
    screen.classList.toggle("deck-grown--end", end);
  }

  const CUE = 60; // stage px: the cue's height, and a margin
  // ``el`` in view in its screen, clear of the "more below" cue at the
  // stage's foot, not just the stage (a verdict 40 px from the foot, and
  // a bucket's list moved there with its item, sat under the cue).
  function clearOfCue(el) {
    const screen = el?.closest(".reveal .slides section.present");
    if (!screen) return;
    // In stage pixels: reveal scales the stage to the window.
    const scale = screen.getBoundingClientRect().height / screen.offsetHeight;
    const below = el.getBoundingClientRect().bottom -
      screen.getBoundingClientRect().bottom + CUE * scale;
    if (below > 0) screen.scrollTop += below / scale;
    markEnd(screen);
  }
  function showVerdict(exercise) {
    clearOfCue(exercise.querySelector(".ex-feedback:not([hidden])"));
  }

  function watchAnswers() {
    const slides = document.querySelector(".reveal .slides");
    // After the widget has run (its click handler, then layout).
    const later = (event) => {
      const exercise = event.target.closest?.(".exercise");
      if (!exercise) return;
      requestAnimationFrame(() => {
        fitScreen(); // a Reset shrinks it again
        const action = event.type === "click" && event.target.closest("[data-ex-action]");
        if (action && exercise.isConnected) showVerdict(exercise);
      });
    };
    slides.addEventListener("click", later);
    slides.addEventListener("click", followInDeck);
    slides.addEventListener("change", later);
    slides.addEventListener("input", later);
    slides.addEventListener("toggle", keyOpened, true);
    slides.addEventListener("toggle", (event) => {
      // An open fold is a panel from the screen's top: scrolled there.
      const screen = event.target.closest?.("section.present");
      if (screen && event.target.open) screen.scrollTop = 0;
    }, true);
    // Focus moved to a control below the stage scrolls reveal's boxes
    // (overflow: hidden still scrolls): put them back.
    for (const box of [document.querySelector(".reveal"), slides]) {
      box.addEventListener("scroll", (event) => {
        if (event.target !== box) return;
        box.scrollTop = 0;
        box.scrollLeft = 0;
      });
    }
    slides.addEventListener("scroll", (event) => {
      if (event.target.classList?.contains("deck-grown")) markEnd(event.target);
    }, true);
    window.Reveal.on("slidechanged", fitScreen);
  }

  // reveal.js sets a print page's screen (page - stage) / 2 = 14 px from
  // its top, and counts its pages by the screen's height alone: a screen
  // up to 27 px shorter than a page ran over it, and Chromium moved the
  // last lines to a page it never prints (slide 29's answer lost its
  // explanation). Such a screen starts at the page's top.
  function fitPrintPages() {
    all(document, ".pdf-page").forEach((page) => {
      const screen = page.querySelector(":scope > section");
      if (screen && screen.offsetTop + screen.scrollHeight > page.clientHeight) {
        screen.style.top = "0px";
      }
    });
    document.documentElement.setAttribute("data-deck-ready", "");
  }

  function start() {
    if (PRINT) {
      makeNotes(); // before a fold becomes a page of its own
      foldsToPages();
    }
    all(document, ".deck-reset").forEach((button) => {
      button.addEventListener("click", resetAll);
    });
    // Before reveal.js's own listener, which it adds as it starts.
    window.addEventListener("message", RECEIVER ? speakerKey : placeMessage);
    window.Reveal.initialize({
      width: CONFIG.width,
      height: CONFIG.height,
      margin: 0.04,
      center: false,
      hash: true,
      // Every forward key visits every screen of every slide in order;
      // a slide's screens are a vertical stack only so that #/15 stays
      // slide 15 (and #/15/2 its second screen).
      navigationMode: "linear",
      // Always one slide at a time. reveal.js 5 turns a window narrower
      // than 435 px (every phone) into a scrolling page, which drops the
      // slide in the address (hakimel/reveal.js#3815).
      scrollActivationWidth: null,
      // One-based in the address bar (#/15 is slide 15); the speaker
      // view's preview frames get zero-based hashes from the notes plugin.
      hashOneBasedIndex: !RECEIVER,
      respondToHashChanges: true,
      transition: "none",
      backgroundTransition: "none",
      controls: true,
      // reveal.js bounces the next arrow until the first move: a
      // distraction on a projector, and it painted 60 frames a second
      // while a screen waited (an idle deck: 8 % of a core, 0 without).
      controlsTutorial: false,
      controlsLayout: "bottom-right",
      progress: true,
      showNotes: false,
      // The speaker view's pacing timer reads each screen's data-timing
      // (its share of the slide's minutes); without a default it shows
      // none. 0: a screen without minutes has none.
      defaultTiming: 0,
      pdfSeparateFragments: false,
      pdfMaxPagesPerSlide: 2,
      plugins: window.RevealNotes ? [window.RevealNotes] : [],
    });
    // The speaker view's G opens the box in its preview (a deck of its
    // own, which moves this one): there too a jump lands on a screen's
    // first step (reveal.js's showed slide 30's answers on the projector).
    if (RECEIVER) {
      window.addEventListener("keydown", previewKey, true);
      window.addEventListener("click", previewArrow, true);
    } else {
      window.addEventListener("keydown", onKey, true);
      // R: back to the reading page at this screen (listed in reveal's
      // keyboard help, "?").
      window.Reveal.addKeyBinding(
        { keyCode: 82, key: "R", description: "Reading page here (Shift+P there: back)" },
        toReading
      );
      // The help ("?") in this deck's words, once reveal.js has written
      // its own lines (it does so as it starts: ours, set before, were
      // overwritten).
      window.Reveal.on("ready", () => {
        const help = [
          // reveal.js names the keys of the next and previous slide;
          // here each goes one step, and a clicker's keys are those.
          ["&#8594;  ,  &#8595;  ,  SPACE  ,  N  ,  L  ,  J", "Next step (clicker: PageDown)"],
          ["&#8592;  ,  &#8593;  ,  P  ,  H  ,  K", "Previous step (PageUp)"],
          // reveal.js's G, as jumpBox has it.
          ["G", "Jump: number or word, Enter"],
          // ↑ and ↓ go to the slide's first and last screen.
          [
            "Shift + &#8592;/&#8593/&#8594;/&#8595;",
            "First/last slide (← →), screen of this slide (↑ ↓)",
          ],
          // Typing in an answer box keeps Space and the arrows (PageDown
          // moves, and → past the text's end: atEdge).
          [
            "ESC in an answer box",
            "Leave it (or → past its text: the next blank, then on)",
          ],
        ];
        for (const [keys, what] of help) window.Reveal.registerKeyboardShortcut(keys, what);
      });
    }
    for (const event of ["ready", "slidechanged", "fragmentshown", "fragmenthidden"]) {
      window.Reveal.on(event, openSteps);
    }
    // The address names the step as it is taken: reveal.js writes it a
    // second late, and a reload within that second went back a step (a
    // rehearsal). (Safari refuses many writes in a row: reveal.js's own
    // late one still comes.)
    if (!RECEIVER && !PRINT) {
      for (const event of ["slidechanged", "fragmentshown", "fragmenthidden"]) {
        window.Reveal.on(event, writeAddress);
      }
    }
    // Left by the overview on another screen (its arrows, a click on a
    // thumbnail), the deck shows that screen from its first step:
    // reveal.js showed an earlier screen with every step taken, its
    // answers open before the class was asked. On the screen it was
    // opened from, the steps stay as they were.
    let overviewFrom = null;
    window.Reveal.on("overviewshown", () => {
      overviewFrom = window.Reveal.getIndices();
    });
    // (A click on a thumbnail closes the overview, then moves: the
    // screen is read once both are done.)
    window.Reveal.on("overviewhidden", () => {
      const from = overviewFrom;
      overviewFrom = null;
      setTimeout(() => {
        const { h, v } = window.Reveal.getIndices();
        if (from && (from.h !== h || from.v !== v)) window.Reveal.slide(h, v, -1);
      });
    });
    watchAnswers();
    // The handout is ready once reveal.js has laid out its pages, which
    // it finishes after "ready".
    if (PRINT) window.Reveal.on("pdf-ready", fitPrintPages);
    window.Reveal.on("ready", () => {
      if (!RECEIVER && !PRINT) backToPlace();
      if (!PRINT) document.documentElement.setAttribute("data-deck-ready", "");
      // The speaker view's preview frames never show notes.
      if (RECEIVER) return;
      if (window.requestIdleCallback) window.requestIdleCallback(makeNotes);
      else setTimeout(makeNotes);
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
