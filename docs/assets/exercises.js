// Exercises: make the widgets that scripts/lessonbuild/exercises renders respond.
//
// The HTML already holds everything (questions, options and, in collapsed
// <details>, the answers), so without JavaScript nothing is lost. Here we
// show the controls, read the answers back from those <details>, give
// feedback (icon + words, never colour alone, announced through each
// exercise's role="status" region), and keep each answer in localStorage
// under the key in data-ex-key (in the deck, in the tab's sessionStorage:
// a lecture is one tab, and a second one leaves the first's answers).
// Widgets initialise on every page shown (lessonOnPage, onpage.js: on
// load, and after instant navigation).
(() => {
  

  const ICONS = { right: "\u2713", wrong: "\u2717", warn: "\u26a0", info: "\u2139" };
  const WORDS = { right: "Correct.", wrong: "Not quite.", warn: "Careful.", info: "" };

  // The deck (present.html, whose config comes before this script): its
  // answers are a lecture's, its folds are steps, its keys the clicker's.
  const DECK = !!document.getElementById("deck-config");

  function all(root, selector) {
    return [...root.querySelectorAll(selector)];
  }
  // In the deck the clicker's keys (→, Space) move the slides; a text
  // field or list the widget focused by itself (after Strike, or an empty
  // try) took them from the presenter, who had not come to type. There the
  // presenter clicks into the field to type; elsewhere the focus moves.
  function focusOn(el) {
    if (!el) return;
    const field = el.matches("textarea, select, input:not([type=radio], " +
      "[type=checkbox], [type=button])");
    if (field && DECK) return;
    el.focus();
  }
  function one(root, selector) {
    return root.querySelector(selector);
  }
  function show(el) {
    if (el) el.hidden = false;
  }

  // Storage may be unavailable (private mode, file://): then nothing
  // persists, but everything else still works.
  const AREA = DECK ? "sessionStorage" : "localStorage";
  function load(key) {
    try {
      return JSON.parse(window[AREA].getItem(key) || "null");
    } catch (_e) {
      return null;
    }
  }
  function store(key, value) {
    try {
      window[AREA].setItem(key, JSON.stringify(value));
    } catch (_e) { /* not persisted */ }
  }
  // Has a try shown this exercise's key?
  const keyShown = (s) => s && (s.seen || s.triedVariant != null);
  // Forgotten, but a key once shown stays seen: after a reset, pasting
  // its formulas passed every cell without a sum.
  function reset(key) {
    const was = keyShown(load(key));
    try {
      window[AREA].removeItem(key);
    } catch (_e) { /* nothing stored */ }
    if (was) store(key, { seen: true });
  }

  // What a screen reader would say for an element: skip aria-hidden parts
  // (KaTeX's visual layer) and TeX annotations.
  function speech(el) {
    if (!el) return "";
    const out = [];
    (function walk(node) {
      if (node.nodeType === 3) {
        out.push(node.nodeValue);
      } else if (node.nodeType === 1) {
        if (node.getAttribute("aria-hidden") === "true") return;
        if (node.tagName.toLowerCase() === "annotation") return;
        for (let c = node.firstChild; c; c = c.nextSibling) walk(c);
        if (/^(P|LI|DD|DT|DIV|TD|TH)$/.test(node.tagName)) out.push(" ");
      }
    })(el);
    return out.join("").replace(/\s+/g, " ").trim();
  }

  // The fill-in judge (judge.js) and the vendored mathjs it evaluates
  // with: loaded on a fill-in's first focus or Check, not with the page.
  const SCRIPT = document.currentScript ? document.currentScript.src : "";
  function script(name) {
    return new Promise((resolve, reject) => {
      const tag = document.createElement("script");
      // This script's own address names the folder; "$1" in ``name`` is
      // its ".min", where the site is minified.
      tag.src = SCRIPT.replace(/exercises(\.min)?\.js(\?.*)?$/, name);
      tag.onload = resolve;
      tag.onerror = () => reject(new Error(`${name} did not load`));
      document.head.appendChild(tag);
    });
  }
  let judging = null;
  function loadJudge() {
    judging = judging || Promise.all([
      window.math?.evaluate || script("vendor/mathjs/math.js"),
      window.lessonJudge || script("judge$1.js"),
    ]).then(() => {
      if (!window.math?.evaluate) throw new Error("mathjs did not define math");
      return window.lessonJudge;
    });
    judging.catch(() => {
      judging = null;
    });
    return judging;
  }

  // --- shared pieces -------------------------------------------------------

  function Widget(el) {
    this.el = el;
    this.key = el.getAttribute("data-ex-key");
    this.live = one(el, ".ex-live");
    this.panel = one(el, ".ex-feedback");
    this.state = load(this.key) || {};
  }
  // A key shown in another tab stays shown here (its formulas, pasted in
  // a tab opened before, passed).
  Widget.prototype.save = function () {
    if (keyShown(load(this.key))) this.state.seen = true;
    store(this.key, this.state);
  };
  Widget.prototype.announce = function (text) {
    const live = this.live;
    if (this.shown) this.bringIntoView();
    // Clear first so the same message twice is announced twice.
    this.silence();
    this.announcing = window.setTimeout(() => {
      this.announcing = null;
      live.textContent = text;
    }, 60);
  };
  // Empty the live region and drop an announcement still on its way, so a
  // verdict the student has already changed is never read out late.
  Widget.prototype.silence = function () {
    if (this.announcing) window.clearTimeout(this.announcing);
    this.announcing = null;
    this.live.textContent = "";
  };
  // A verdict just given, announced, is brought into view on a reading
  // page: on a phone it landed below the screen after Check, and its
  // explanation is the teaching. It comes to a third of the way down
  // (the answer above it stays in sight); the deck keeps it in its own
  // stage (present.js).
  Widget.prototype.bringIntoView = function () {
    this.shown = false;
    const verdict = !DECK && !this.panel.hidden && one(this.panel, ".ex-verdict");
    if (!verdict) return;
    const header = one(document, ".md-header");
    const top = header ? header.getBoundingClientRect().bottom : 0;
    const box = verdict.getBoundingClientRect();
    const h = window.innerHeight;
    if (box.top < top || box.bottom > h) window.scrollBy(0, box.top - Math.max(top, h / 3));
  };
  // Verdict line plus optional cloned content, in the visible panel.
  Widget.prototype.feedback = function (status, message, extra) {
    const panel = this.panel;
    this.shown = true;
    panel.innerHTML = "";
    panel.className = `ex-feedback ex-feedback--${status}`;
    const p = document.createElement("p");
    p.className = "ex-verdict";
    const icon = document.createElement("span");
    icon.className = "ex-icon";
    icon.setAttribute("aria-hidden", "true");
    icon.textContent = ICONS[status];
    p.appendChild(icon);
    if (WORDS[status]) {
      const word = document.createElement("strong");
      word.textContent = `${WORDS[status]} `;
      p.appendChild(word);
    }
    p.appendChild(document.createTextNode(message));
    panel.appendChild(p);
    (extra || []).forEach((node) => {
      if (node) panel.appendChild(node);
    });
    panel.hidden = false;
    return `${WORDS[status]} ${message}`;
  };
  Widget.prototype.clearFeedback = function () {
    this.shown = false;
    this.panel.innerHTML = "";
    this.panel.hidden = true;
  };
  // A restored answer is shown, never graded: it says so.
  Widget.prototype.notChecked = function () {
    this.feedback("info", "Your answer from last time is back. Check it again to see the verdict.");
  };
  // The answer key stays out of sight until the first try; then its
  // <details> is the "show answer" the student may open.
  Widget.prototype.keyAfterTry = function (tried) {
    all(this.el, "details.ex-key").forEach((d) => {
      d.hidden = !tried;
    });
  };
  // A real attempt (a committed prediction, a checked answer, a struck
  // set with reasons): remembered, and told to the page, whose "Verify
  // it" folds below this exercise open only after it (verifyAfterTry).
  Widget.prototype.attempted = function () {
    this.state.tried = this.state.tried || true;
    this.save();
    this.el.setAttribute("data-ex-tried", "");
    this.el.dispatchEvent(new CustomEvent("lesson:attempted", { bubbles: true }));
  };
  // A checked answer to the numbers shown: a real attempt at them,
  // their key unlocked.
  Widget.prototype.checkedThese = function () {
    this.state.checked = true;
    this.state.triedVariant = this.state.variant;
    this.attempted();
    this.keyAfterTry(true);
  };
  // Any change to the answer: the old verdict no longer applies.
  Widget.prototype.changed = function (hosts) {
    (hosts || []).forEach((h) => {
      mark(h, null);
    });
    this.clearFeedback();
    // The live region still holds (or is about to hold) the old verdict
    // for a screen reader that reads it again: it goes too.
    this.silence();
    if (this.state.checked) {
      this.state.checked = false;
      this.save();
    }
  };
  // A part of the key shown in the feedback: ``title`` a text, or the
  // key's own heading for it (a <dt>: "Why A tempts people — 65,536 =
  // …", the option's text and math with it), ``source`` its content.
  function excerpt(title, source) {
    if (!source) return null;
    const box = document.createElement("div");
    box.className = "ex-excerpt";
    // Copy the content, not the element: a <dd> needs its <dl>.
    const copy = (from, into) => {
      for (let c = from.firstChild; c; c = c.nextSibling) into.appendChild(c.cloneNode(true));
      all(into, "[id]").forEach((n) => {
        n.removeAttribute("id");
      });
      return into;
    };
    if (title) {
      const h = document.createElement("p");
      h.className = "ex-excerpt__title";
      if (typeof title === "string") h.textContent = title;
      else copy(title, h);
      box.appendChild(h);
    }
    box.appendChild(copy(source, document.createElement("div")));
    return box;
  }

  // Mark an option, item, step or cell: icon and word, not colour alone.
  function mark(host, status, word) {
    const m = one(host, ".ex-mark");
    host.classList.remove("is-right", "is-wrong", "is-warn");
    if (!m) return;
    if (!status) {
      m.textContent = "";
      m.className = "ex-mark";
      return;
    }
    host.classList.add(`is-${status}`);
    m.className = `ex-mark ex-mark--${status}`;
    m.innerHTML = "";
    const icon = document.createElement("span");
    icon.setAttribute("aria-hidden", "true");
    icon.textContent = `${ICONS[status]} `;
    m.appendChild(icon);
    m.appendChild(document.createTextNode(word));
  }

  // Pointer dragging (mouse, pen and touch) by an item's handle. onMove
  // (reorder while dragging) and onDrop get the pointer's clientX/clientY.
  // The listeners sit on the document: moving the item in the DOM would
  // end a pointer capture on the handle.
  function draggable(handle, item, onMove, onDrop) {
    handle.addEventListener("pointerdown", (event) => {
      if (event.button !== 0) return;
      event.preventDefault();
      const id = event.pointerId;
      const startX = event.clientX;
      const startY = event.clientY;
      item.classList.add("is-dragging");
      function move(e) {
        if (e.pointerId !== id) return;
        e.preventDefault();
        if (onMove) {
          onMove(e.clientX, e.clientY);
        } else {
          item.style.transform =
            "translate(" + (e.clientX - startX) + "px," +
            (e.clientY - startY) + "px)";
        }
      }
      function up(e) {
        if (e.pointerId !== id) return;
        document.removeEventListener("pointermove", move);
        document.removeEventListener("pointerup", up);
        document.removeEventListener("pointercancel", up);
        item.classList.remove("is-dragging");
        item.style.transform = "";
        if (e.type === "pointerup") onDrop(e.clientX, e.clientY);
      }
      document.addEventListener("pointermove", move);
      document.addEventListener("pointerup", up);
      document.addEventListener("pointercancel", up);
    });
  }

  function withoutPointer(item, x, y) {
    const before = item.style.visibility;
    item.style.visibility = "hidden";
    const hit = document.elementFromPoint(x, y);
    item.style.visibility = before;
    return hit;
  }

  // Free text cannot be judged, only told apart from no try at all: a
  // prediction needs a digit or a word ("x" or "?" opens nothing), a
  // reason two different words, a discussion answer three; and an
  // eliminate's reasons must differ (one line pasted into every box rules
  // nothing out). Nor is the question pasted back (``echo``, as a screen
  // reader says it: it opened a discussion's model answer): four of its
  // words in a row, or five words or more, nine in ten of them the
  // question's. (An answer reuses the question's words; "it mixes the
  // heads" is short, and counts.) ``echo``: the texts not to paste
  // back, the question first (echoOf).
  function words(text, echo) {
    if (nonAnswer(text)) return 0;
    const mine = new Set(wordsOf(text));
    // Words only: an answer in the question's numbers and symbols
    // ("(1, 4, 8) and (1, 2, 4, 4)", "B=4, h=8") is no echo of it.
    const own = [...mine].filter((t) => !FILLER.has(t) && !/\d/.test(t) && !AXIS.test(t));
    // Four words or more copied from the question in a row, filler and
    // symbols aside, are none of the student's (a slide's linked title
    // passed as a discussion's; "it always holds", one of a question's
    // two choices, is an answer). Nor the hint or the slide's title,
    // each a line from the box (pasted, each opened a model answer).
    const run = (t) => ` ${wordsOf(t).filter((w) => w[1] && !FILLER.has(w)).join(" ")} `;
    const said = run(text);
    if (echo && said.split(" ").length > 5 && run(echo.join(" ")).includes(said)) return 0;
    if (echo && own.length >= 5 && echo.some((e) => {
      const asked = new Set(wordsOf(e));
      return own.filter((t) => !asked.has(t)).length < own.length / 10;
    })) return 0;
    return mine.size;
  }
  // Words in any script, lower case: Chinese or Thai, written without
  // spaces, counted one word a sentence (a discussion answer could never
  // pass); d_k and x.view one word each.
  const SEGMENTER = typeof Intl === "object" && Intl.Segmenter
    ? new Intl.Segmenter(undefined, { granularity: "word" })
    : null;
  function wordsOf(text) {
    const said = String(text).normalize("NFKC").toLowerCase();
    if (!SEGMENTER) return said.match(/[\p{L}\p{N}_.']+/gu) || [];
    return [...SEGMENTER.segment(said)].filter((w) => w.isWordLike).map((w) => w.segment);
  }
  // The question as said, its hint and the slide's title: what words()
  // takes as an echo.
  const prompt = (w) => speech(one(w.el, ".ex-prompt"));
  const echoOf = (w) => [prompt(w), speech(one(w.el, ".ex-key__hint")),
    speech(one(w.el.closest("[data-slide]") || document, "h1"))];
  function saysSomething(text, echo) {
    if (!words(text, echo)) return false;
    return /\p{N}/u.test(text) || (String(text).match(/\p{L}/gu) || []).length > 1;
  }
  // No try either (each opened an answer in a student's rehearsal): "idk",
  // "no idea", "asdf", "x y", "aa bb", "the the the", "idk idk idk", "I do
  // not know this one": a text with no digit, no shape or list ("(B, h,
  // T, T)"), whose every word is filler, a single Latin letter, one letter
  // repeated or a run of a keyboard row; or that says it does not know
  // with at most one word besides. "no", "yes", "it does not" and "sure"
  // are answers (to a yes-or-no prediction).
  const FILLER = new Set(
    ("i im me my the a an this that idk dunno unsure pass skip really just " +
      "sorry answer question yet so um uh hmm lol test maybe ok okay " +
      "whatever foo bar baz qux quux lorem ipsum dolor sit amet blah " +
      "tbd todo guess forgot hard is your here type fill later").split(" ")
  );
  const DONT_KNOW = /\b(idk|dunno|no (idea|clue)|not sure|unsure|(don t|dont|do not) know)\b/;
  // The words of those phrases, and what only stresses one ("no clue at
  // all honestly" opened a model answer), not counted beside one.
  const PHRASE = new Set(("idk dunno no idea clue not sure unsure don dont don't t do know " +
    "at all honestly really totally whatsoever tbh have has any absolutely " +
    "completely literally zero").split(" "));
  const ROWS = ["qwertyuiop", "asdfghjkl", "zxcvbnm"];
  // The lesson's symbols: a shape or a product of them, written any way
  // ("B×h×T×T", "B h T T", "h*T*T"), is an answer of single letters.
  const AXIS = /^(b|h|t|t_q|t_k|d|d_k|dk|d_model|dmodel)$/;
  function nonAnswer(text) {
    const raw = String(text);
    if (/\p{N}/u.test(raw) || /[([][^)\]]*,[^)\]]*[)\]]/.test(raw)) return false;
    const axes = wordsOf(raw).filter((t) => t !== "x");
    if (axes.length > 1 && axes.every((t) => AXIS.test(t))) return false;
    const knows = DONT_KNOW.test(plain(raw));
    const content = new Set(
      wordsOf(raw).filter(
        (t) =>
          !FILLER.has(t) &&
          !(knows && PHRASE.has(t.replace("\u2019", "'"))) &&
          !/^[a-z]$/.test(t) &&
          !/^(.)\1+$/u.test(t) &&
          !(t.length > 2 && ROWS.some((row) => row.includes(t)))
      )
    );
    return !!plain(raw) && (content.size === 0 || (knows && content.size <= 1));
  }
  // An eliminate's reason says why an option is out, in two words or
  // more, one of them its own: not only that it is ("wrong answer", "not
  // this", "nope nah", "x 1"), nor the option read back (each opened the
  // key in a fresh-eyes check).
  const VERDICT = new Set(("wrong right not no nope nah incorrect bad false " +
    "untrue it is isn't one option answer choice").split(" "));
  function saysWhy(text, option) {
    const read = new Set(wordsOf(option || ""));
    const own = wordsOf(text).filter((t) => t.length > 1 && !FILLER.has(t) &&
      !VERDICT.has(t) && !read.has(t));
    return words(text) >= 2 && own.length > 0;
  }
  // Lower case, words apart by one space, nothing else.
  function plain(text) {
    return String(text).toLowerCase().replace(/[^\p{L}\p{N}]+/gu, " ").trim();
  }
  function sameText(a, b) {
    return plain(a) === plain(b);
  }

  // --- kinds -----------------------------------------------------------------

  const KINDS = {};
  const AGAIN = " Move the ones marked wrong and check again, or open the answer below.";

  KINDS.predict = (w) => {
    const box = one(w.el, ".ex-predict");
    const input = one(box, "textarea");
    const button = one(w.el, '[data-ex-action="commit"]');
    const reveals = all(w.el, "details.ex-key");
    show(box);
    // The answer and the why are not on the page (hidden: out of the
    // accessibility tree too) until a prediction with words in it is
    // committed: an empty commit is not a try.
    w.keyAfterTry(!!w.state.committed);
    function commit(quiet) {
      if (!saysSomething(input.value, echoOf(w))) {
        w.announce(w.feedback("warn", input.value.trim()
          ? "Say what you expect (a shape, a number, a word or two), then commit it" +
            (nonAnswer(input.value)
              ? ": a guess, even an unsure one, is the point."
              : words(input.value) ? ", in your own words, not the question's." : ".")
          : "Type a prediction first, then commit it."));
        focusOn(input);
        return;
      }
      w.state.text = input.value;
      w.state.committed = true;
      w.attempted();
      input.readOnly = true;
      button.disabled = true;
      w.keyAfterTry(true);
      reveals.forEach((d) => {
        d.open = true;
      });
      const message = w.feedback(
        "info",
        "Prediction committed. Compare it with the answer and the why below."
      );
      if (!quiet) {
        w.announce(
          message + " Answer: " + speech(one(w.el, ".ex-key__answer")) +
            " Why: " + speech(one(w.el, ".ex-key__why"))
        );
        const summary = one(reveals[0], "summary");
        if (summary) focusOn(summary);
      }
    }
    input.addEventListener("input", () => {
      w.state.text = input.value;
      w.save();
      // "Type a prediction first" no longer applies.
      if (!w.state.committed) w.clearFeedback();
    });
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        commit(false);
      }
    });
    w.on("commit", () => {
      commit(false);
    });
    if (w.state.text) input.value = w.state.text;
    if (w.state.committed) commit(true);
  };

  // Check: pick one option. With variants (a data-ex-spec), one set of
  // numbers at a time, drawn as a fill-in draws them; "Try another" puts
  // new numbers in every text, clears the pick, and the key hides again
  // until a try on these numbers. The right option is the same option in
  // every variant, lettered by the place it is shown at (placeOptions).
  KINDS.check = (w) => {
    const key = one(w.el, ".ex-key");
    const answer = one(key, "[data-ex-answer]").getAttribute("data-ex-answer");
    const radios = all(w.el, "input.ex-radio");
    const variants = drawVariant(w);
    radios.forEach(show);
    function keyAfterTry() {
      const tried = (w.state.tried || []).length > 0;
      w.keyAfterTry(tried && (!variants || w.state.triedVariant === w.state.variant));
    }
    function option(letter) {
      return one(w.el, `.ex-option[data-ex-option="${letter}"]`);
    }
    function check(quiet) {
      const picked = radios.filter((r) => r.checked)[0];
      if (!picked) {
        w.announce(w.feedback("warn", "Pick an option first."));
        focusOn(one(w.el, "input.ex-radio") || w.el); // the first shown
        return;
      }
      const letter = picked.value;
      w.keyAfterTry(true);
      w.state.triedVariant = w.state.variant;
      w.state.choice = letter;
      w.state.tried = (w.state.tried || []).filter((t) => t !== letter);
      w.state.tried.push(letter);
      w.attempted();
      all(w.el, ".ex-option").forEach((li) => {
        mark(li, null);
      });
      mark(option(letter), letter === answer ? "right" : "wrong",
        letter === answer ? "correct" : "wrong");
      let message;
      if (letter === answer) {
        const explanation = excerpt("Explanation", one(key, ".ex-key__explanation"));
        message = w.feedback("right", `${shownLetter(w, letter)} is the answer.`, [explanation]);
      } else {
        // Only what tempts towards this option, and a nudge: never the
        // right answer's explanation (that is behind "Answer" below).
        const heading = one(key, `dt[data-ex-option="${letter}"]`);
        const tempts = one(key, `dd[data-ex-option="${letter}"]`);
        message = w.feedback(
          "wrong",
          shownLetter(w, letter) + " is not it. Think again and pick another option, or " +
            "open the answer below.",
          [excerpt(heading, tempts)]
        );
        message += ` ${speech(heading)}: ${speech(tempts)}`;
      }
      if (!quiet) w.announce(message);
    }
    radios.forEach((r) => {
      r.addEventListener("change", () => {
        w.state.choice = r.value;
        w.save();
        w.changed(all(w.el, ".ex-option"));
      });
    });
    w.on("check", () => {
      check(false);
    });
    if (variants) {
      w.on("another", () => {
        variants.another();
        delete w.state.choice;
        radios.forEach((r) => {
          r.checked = false;
        });
        w.changed(all(w.el, ".ex-option"));
        all(w.el, "details.ex-key").forEach((d) => {
          d.open = false;
        });
        keyAfterTry();
        w.save();
        w.announce(`New numbers: ${prompt(w)}`);
        focusOn(one(w.el, "input.ex-radio")); // the first shown
      });
    }
    keyAfterTry();
    if (variants) w.save(); // the variant drawn stays through reloads
    if (w.state.choice) {
      radios.forEach((r) => {
        r.checked = r.value === w.state.choice;
      });
      if ((w.state.tried || []).length > 0) w.notChecked();
    }
  };

  // Eliminate: strike every option you can rule out and say why in its
  // box; Check compares. Striking says nothing about the option struck
  // (no "nothing rules this out": that would name the answer in one
  // click), and the key stays hidden until a full, reasoned attempt.
  // Eliminate: strike the wrong options, each with its reason; only
  // Check compares. With variants (a data-ex-spec), as a check: "Try
  // another" puts new numbers in every text and clears every strike,
  // reason and verdict, so nothing of the survivor shows before three
  // strikes on these numbers; the key hides again until then.
  KINDS.eliminate = (w) => {
    const key = one(w.el, ".ex-key");
    const answer = one(key, "[data-ex-answer]").getAttribute("data-ex-answer");
    const buttons = all(w.el, '[data-ex-action="strike"]');
    const letters = buttons.map((b) => b.dataset.exOption);
    const need = letters.length - 1;
    const variants = drawVariant(w);
    buttons.forEach(show);
    w.state.struck = w.state.struck && !Array.isArray(w.state.struck)
      ? w.state.struck : {};
    function keyAfterTry() {
      w.keyAfterTry(!!w.state.tried &&
        (!variants || w.state.triedVariant === w.state.variant));
    }
    keyAfterTry();
    function li(letter) {
      return one(w.el, `.ex-option[data-ex-option="${letter}"]`);
    }
    function button(letter) {
      return one(w.el, `[data-ex-action="strike"][data-ex-option="${letter}"]`);
    }
    function reason(letter) {
      return one(li(letter), ".ex-reason textarea");
    }
    function clearCompare() {
      all(w.el, ".ex-compare").forEach((c) => {
        c.innerHTML = "";
        c.hidden = true;
      });
    }
    function draw(letter) {
      const on = Object.hasOwn(w.state.struck, letter);
      const item = li(letter);
      const b = button(letter);
      item.classList.toggle("is-struck", on);
      b.setAttribute("aria-pressed", on ? "true" : "false");
      b.firstChild.nodeValue = on ? "Restore" : "Strike";
      one(item, ".ex-reason").hidden = !on;
      reason(letter).value = on ? w.state.struck[letter] : "";
    }
    function toggle(letter) {
      const on = !Object.hasOwn(w.state.struck, letter);
      if (on) w.state.struck[letter] = "";
      else delete w.state.struck[letter];
      w.changed(letters.map(li));
      clearCompare();
      draw(letter);
      w.save();
      const left = need - Object.keys(w.state.struck).length;
      // (No template inside a template: the minifier drops its spaces,
      // and a screen reader said "restored.2to strike".)
      const more = left > 0 ? ` ${left} to strike.` : "";
      const shown = shownLetter(w, letter);
      w.announce(on
        ? `${shown} struck. Say what rules it out in its box.`
        : `${shown} restored.${more}`);
      if (on) focusOn(reason(letter));
    }
    function check(quiet) {
      const struck = Object.keys(w.state.struck);
      if (struck.length !== need) {
        w.announce(w.feedback("warn", "Strike exactly " + need + " options " +
          "(every one you can rule out), each with its reason, then check. " +
          "Struck so far: " + struck.length + "."));
        return;
      }
      const silent = struck.filter((l) =>
        !saysWhy(w.state.struck[l], one(li(l), ".ex-option__text")?.textContent));
      if (silent.length) {
        w.announce(w.feedback("warn", "Say what rules out " +
          silent.map((l) => shownLetter(w, l)).join(" and ") +
          " in its box first, in two words or " +
          "more of your own: a strike without a reason is a guess."));
        focusOn(reason(silent[0]));
        return;
      }
      const twice = struck.filter((l, i) =>
        struck.slice(0, i).some((m) => sameText(w.state.struck[l], w.state.struck[m])));
      if (twice.length) {
        w.announce(w.feedback("warn", "Give " +
          twice.map((l) => shownLetter(w, l)).join(" and ") + (twice.length > 1 ? " each" : "") +
          " a reason of its own: the same words in two boxes do not say " +
          "what rules out each option."));
        focusOn(reason(twice[0]));
        return;
      }
      w.checkedThese();
      const survivor = letters.filter((l) => struck.indexOf(l) < 0)[0];
      struck.forEach((l) => {
        const ok = l !== answer;
        mark(li(l), ok ? "right" : "wrong", ok ? "rightly struck" : "survives");
        const box = one(li(l), ".ex-compare");
        box.innerHTML = "";
        const mine = document.createElement("p");
        mine.className = "ex-compare__mine";
        mine.textContent = `Your reason: ${w.state.struck[l]}`;
        box.appendChild(mine);
        box.appendChild(ok
          ? excerpt(one(key, `dt[data-ex-option="${l}"]`), one(key, `dd[data-ex-option="${l}"]`))
          : excerpt(`Nothing rules out ${shownLetter(w, l)}`, one(key, ".ex-key__explanation")));
        box.hidden = false;
      });
      const ok = survivor === answer;
      mark(li(survivor), ok ? "right" : "wrong", ok ? "survives" : "ruled out");
      const message = ok
        ? w.feedback("right", `${shownLetter(w, survivor)} survives, and every option you ` +
          "struck is wrong. Compare your reasons with the ones under each.",
        [excerpt("Explanation", one(key, ".ex-key__explanation"))])
        : w.feedback("wrong", `${shownLetter(w, survivor)} does not survive: ` +
          speech(one(key, `dd[data-ex-option="${survivor}"]`)) +
          " Restore the option you struck wrongly, or open the answer below.");
      if (!quiet) w.announce(message);
    }
    buttons.forEach((b) => {
      b.addEventListener("click", () => {
        toggle(b.dataset.exOption);
      });
    });
    letters.forEach((l) => {
      reason(l).addEventListener("input", () => {
        if (!Object.hasOwn(w.state.struck, l)) return;
        w.state.struck[l] = reason(l).value;
        w.changed(letters.map(li));
        clearCompare();
        w.save();
      });
      draw(l);
    });
    w.on("check", () => {
      check(false);
    });
    if (variants) {
      w.on("another", () => {
        variants.another();
        w.state.struck = {};
        w.changed(letters.map(li));
        clearCompare();
        letters.forEach(draw);
        all(w.el, "details.ex-key").forEach((d) => {
          d.open = false;
        });
        keyAfterTry();
        w.save();
        w.announce(`New numbers: ${prompt(w)}`);
        focusOn(one(w.el, '[data-ex-action="strike"]')); // the first shown
      });
      w.save(); // the variant drawn stays through reloads
    }
    if (w.state.checked) check(true);
  };

  KINDS.buckets = (w) => {
    const key = one(w.el, ".ex-key");
    const items = all(w.el, ".ex-item");
    function markEmpty() {
      all(w.el, ".ex-zone").forEach((z) => {
        z.classList.toggle("is-empty", !one(z, ".ex-item"));
      });
    }
    const truth = {};
    all(key, ".ex-key__group").forEach((g) => {
      all(g, "[data-ex-item]").forEach((i) => {
        truth[i.dataset.exItem] = g.getAttribute("data-ex-bucket");
      });
    });
    w.el.classList.add("is-live");
    all(w.el, ".ex-handle, .ex-select").forEach(show);
    w.keyAfterTry(!!w.state.tried);
    function hideExplanations() {
      all(w.el, ".ex-zone__explanation").forEach((t) => {
        t.hidden = true;
      });
    }
    function zone(b) {
      return one(w.el, `.ex-zone[data-ex-zone="${b || ""}"] .ex-items`);
    }
    function place(item, b, focus) {
      const id = item.dataset.exItem;
      const select = one(item, "select");
      zone(b).appendChild(item);
      markEmpty();
      select.value = b || "";
      w.changed(items);
      hideExplanations();
      w.state.place = w.state.place || {};
      if (b) w.state.place[id] = b;
      else delete w.state.place[id];
      w.save();
      if (focus) focusOn(select);
    }
    function check(quiet) {
      const placed = w.state.place || {};
      const left = items.filter((i) => !placed[i.dataset.exItem]).length;
      if (left) {
        w.announce(
          w.feedback(
            "warn",
            `Put every item in a bucket first: ${left} still unsorted.`
          )
        );
        return;
      }
      // Every item in one bucket is no sorting (with two buckets, the
      // marks below then gave the whole answer): sorted, more than one
      // bucket holds items.
      const used = new Set(Object.values(placed));
      if (used.size === 1 && new Set(Object.values(truth)).size > 1) {
        w.announce(
          w.feedback("warn", "Every item is in one bucket: sort them, each into its own.")
        );
        return;
      }
      w.state.checked = true;
      w.attempted();
      w.keyAfterTry(true);
      let right = 0;
      items.forEach((i) => {
        const ok = placed[i.dataset.exItem] ===
          truth[i.dataset.exItem];
        if (ok) right++;
        mark(i, ok ? "right" : "wrong", ok ? "right" : "wrong bucket");
      });
      // The explanations say which items belong where: only once all are.
      if (right === items.length) all(key, ".ex-key__group").forEach((g) => {
        const target = one(
          w.el,
          '.ex-zone[data-ex-zone="' + g.getAttribute("data-ex-bucket") +
            '"] .ex-zone__explanation'
        );
        target.innerHTML = "";
        target.appendChild(excerpt("Why these belong here", one(g, ".ex-key__explanation")));
        target.hidden = false;
      });
      const message = right === items.length
        ? w.feedback("right", "All " + right + " items are in the right bucket. " +
          "Each bucket's explanation is shown under it.")
        : w.feedback("wrong", right + " of " + items.length + (right === 1 ? " items is" : " items are") +
          " in the right bucket." + AGAIN);
      if (!quiet) w.announce(message);
    }
    items.forEach((item) => {
      const select = one(item, "select");
      select.addEventListener("change", () => {
        place(item, select.value, true);
        w.announce(
          select.value
            ? `Moved to ${select.options[select.selectedIndex].text}.`
            : "Moved back to the items to sort."
        );
      });
      draggable(one(item, ".ex-handle"), item, null, (x, y) => {
        const hit = withoutPointer(item, x, y);
        const target = hit?.closest ? hit.closest(".ex-zone") : null;
        if (!target || !w.el.contains(target)) return;
        place(item, target.getAttribute("data-ex-zone"), false);
        const name = one(target, ".ex-zone__name");
        w.announce(`Moved to ${speech(name)}.`);
      });
    });
    w.on("check", () => {
      check(false);
    });
    markEmpty();
    const saved = JSON.parse(JSON.stringify(w.state.place || {}));
    items.forEach((item) => {
      const b = saved[item.dataset.exItem];
      if (b && zone(b)) place(item, b, false);
    });
    if (Object.keys(saved).length && w.state.tried) w.notChecked();
  };

  KINDS.order = (w) => {
    const key = one(w.el, ".ex-key");
    const list = one(w.el, ".ex-steps");
    const truth = all(key, ".ex-key__steps [data-ex-step]").map((li) => li.dataset.exStep);
    // The order as shown (a shuffle): checking it unmoved is no attempt.
    const shuffled = all(list, ".ex-step").map((li) => li.dataset.exStep);
    all(w.el, ".ex-handle, .ex-moves").forEach(show);
    w.keyAfterTry(!!w.state.tried);
    function steps() {
      return all(list, ".ex-step");
    }
    function remember() {
      w.state.order = steps().map((li) => li.dataset.exStep);
      w.save();
      w.changed(steps());
      steps().forEach((li, i, arr) => {
        one(li, '[data-ex-action="up"]').setAttribute(
          "aria-disabled", i === 0 ? "true" : "false");
        one(li, '[data-ex-action="down"]').setAttribute(
          "aria-disabled", i === arr.length - 1 ? "true" : "false");
      });
    }
    function move(li, delta, button) {
      const all_ = steps();
      const i = all_.indexOf(li);
      const j = i + delta;
      if (j < 0 || j >= all_.length) {
        w.announce(`Already ${delta < 0 ? "first." : "last."}`);
        return;
      }
      // The tapped button stays under the finger: on a phone each tap
      // took it 115-150 px up the page, then under the header.
      const before = button?.getBoundingClientRect().top;
      if (delta < 0) list.insertBefore(li, all_[j]);
      else list.insertBefore(li, all_[j].nextSibling);
      remember();
      if (button && !DECK) window.scrollBy(0, button.getBoundingClientRect().top - before);
      if (button) focusOn(button);
      w.announce(
        "Moved to position " + (j + 1) + " of " + all_.length + ": " +
          speech(one(li, ".ex-step__text"))
      );
    }
    function check(quiet) {
      const now = steps().map((li) => li.dataset.exStep);
      if (now.join() === shuffled.join()) {
        w.announce(w.feedback("warn", "The steps are still in the shuffled " +
          "order they came in. Move them into the order you think is right, " +
          "then check."));
        return;
      }
      w.state.checked = true;
      w.attempted();
      w.keyAfterTry(true);
      let right = 0;
      steps().forEach((li, i) => {
        const ok = li.dataset.exStep === truth[i];
        if (ok) right++;
        mark(li, ok ? "right" : "wrong", ok ? "right place" : "wrong place");
      });
      const n = truth.length;
      if (right === n) key.open = true;
      const message = right === n
        ? w.feedback("right", "All " + n + " steps are in order. The order " +
          "and the why are shown below.")
        : w.feedback("wrong", right + " of " + n + (right === 1 ? " steps is" : " steps are") +
          " in the right place." + AGAIN);
      if (!quiet) {
        w.announce(right === n
          ? `${message} ${speech(one(key, ".ex-key__why"))}` : message);
      }
    }
    w.on("up", (b) => {
      move(b.closest(".ex-step"), -1, b);
    });
    w.on("down", (b) => {
      move(b.closest(".ex-step"), 1, b);
    });
    steps().forEach((li) => {
      draggable(one(li, ".ex-handle"), li, (_x, y) => {
        const others = steps().filter((o) => o !== li);
        let before = null;
        for (let k = 0; k < others.length; k++) {
          const r = others[k].getBoundingClientRect();
          if (y < r.top + r.height / 2) {
            before = others[k];
            break;
          }
        }
        if (before !== li.nextElementSibling) list.insertBefore(li, before);
      }, () => {
        remember();
        const pos = steps().indexOf(li) + 1;
        w.announce(`Moved to position ${pos} of ${steps().length}.`);
      });
    });
    w.on("check", () => {
      check(false);
    });
    if (w.state.order) {
      w.state.order.forEach((id) => {
        const li = one(list, `.ex-step[data-ex-step="${id}"]`);
        if (li) list.appendChild(li);
      });
    }
    const wasChecked = w.state.checked;
    remember();
    if (w.state.order && wasChecked) w.notChecked();
  };

  // An exercise's data (variants' numbers, a fill-in's answers): JSON in
  // its section's data-ex-spec, or null.
  const specOf = (w) => {
    const raw = w.el.getAttribute("data-ex-spec");
    return raw && JSON.parse(raw);
  };

  // The variants of an exercise whose numbers the snippet engine
  // computed (its data-ex-spec): one is shown at a time, remembered in
  // state.variant. A first visit, on the page as in the deck, shows the
  // first (the author's: the numbers the prose around it, the slide
  // before and its "Verify it" run use); "Try another" draws the others.
  // Returns null for an exercise without variants.
  function drawVariant(w) {
    const spec = specOf(w);
    if (!spec?.vars) return null;
    const n = spec.vars.length;
    if (!(w.state.variant >= 0 && w.state.variant < n)) {
      w.state.variant = 0;
    }
    function show() {
      const vars = spec.vars[w.state.variant];
      all(w.el, "[data-ex-var]").forEach((span) => {
        span.textContent = vars[span.getAttribute("data-ex-var")];
      });
      placeOptions(w, w.state.variant);
    }
    show();
    return {
      show: show,
      // A variant not shown yet, its numbers in place; once all have been,
      // any but the one shown. (Any other at random came back to the
      // first, its answer already open, one time in four: a fresh-eyes
      // student saw it on every exercise tried.)
      another() {
        const seen = new Set([...(w.state.shown || []), w.state.variant]);
        const others = [...Array(n).keys()].filter((i) => i !== w.state.variant);
        const fresh = others.filter((i) => !seen.has(i));
        const pool = fresh.length ? fresh : others;
        if (!pool.length) return;
        const next = pool[Math.floor(Math.random() * pool.length)];
        w.state.shown = fresh.length ? [...seen, next] : [w.state.variant, next];
        w.state.variant = next;
        show();
        // New numbers are not yet tried: the Verify-it run below (it
        // printed the answer for other numbers, maybe these) locks again.
        w.el.toggleAttribute("data-ex-tried", w.state.triedVariant === next);
        lockAnswerFolds();
      },
    };
  }

  // A check's or eliminate's options in the variant's own order, each
  // lettered by its place: with the right option at one letter in every
  // variant, "Try another" was answered from memory (a student picked B
  // five times running without reading). The first variant keeps the
  // author's order, the one the deck and the prose's references show.
  // Every letter shown (answer, notes, labels) follows its option; the
  // widget keeps the author's letters inside (state, data attributes).
  function placeOptions(w, variant) {
    const list = one(w.el, ".ex-option-list");
    if (!list) return;
    const items = all(list, ":scope > .ex-option").sort((a, b) =>
      a.dataset.exOption < b.dataset.exOption ? -1 : 1);
    // Another variant moves every option (the same draw on every visit):
    // the letter that was right before is never right again by chance.
    // (mulberry32, seeded by FNV-1a of the exercise's key and the
    // variant: seeded by the variant alone, variants 1-4 drew two orders
    // and slide 37's answer was A after every Try another.)
    let order = items.map((_, i) => i);
    let seed = 0x811c9dc5;
    for (const c of `${w.key}#${variant}`) seed = Math.imul(seed ^ c.charCodeAt(0), 0x01000193);
    const draw = () => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    while (variant > 0 && order.length > 1 && order.some((k, i) => k === i)) {
      order = items.map((_, i) => i);
      for (let i = order.length - 1; i > 0; i--) {
        const j = Math.floor(draw() * (i + 1));
        [order[i], order[j]] = [order[j], order[i]];
      }
    }
    const notes = one(w.el, ".ex-key__notes"); // read in the same order
    order.forEach((k, place) => {
      const letter = String.fromCharCode(65 + place);
      const item = items[k];
      list.appendChild(item);
      if (notes) {
        all(notes, `[data-ex-option="${item.dataset.exOption}"]`)
          .forEach((note) => {
            notes.appendChild(note);
          });
      }
      one(item, ".ex-letter").textContent = `${letter}.`;
      // (And a ref() to it elsewhere on the page: the instructor notes.
      // The deck's ids start "sN-".)
      all(document, `[data-ex-in="${w.el.id.replace(/^s\d+-/, "")}"][data-ex-letter-of="${item.dataset.exOption}"]`)
        .forEach((span) => {
          span.textContent = letter;
        });
    });
  }
  // The letter an option shows now (its author's letter inside).
  function shownLetter(w, letter) {
    const item = one(w.el, `.ex-option[data-ex-option="${letter}"] .ex-letter`);
    return item ? item.textContent.replace(".", "") : letter;
  }

  // Fill-in: one variant at a time; "Try another" draws a new one. Every
  // cell must hold an answer before Check counts as a try; each wrong
  // cell says why, from the author's explanation of that wrong form.
  KINDS["fill-in"] = (w) => {
    const spec = specOf(w);
    const cells = all(w.el, ".ex-blank");
    const variants = drawVariant(w);
    all(w.el, ".ex-blank__nojs").forEach((s) => {
      s.hidden = true;
    });
    w.state.values = w.state.values || {};
    function input(td) {
      return one(td, "input");
    }
    function showVariant() {
      variants.show();
      w.keyAfterTry(w.state.triedVariant === w.state.variant);
    }
    function template(selector) {
      const t = one(w.el, selector);
      const box = document.createElement("div");
      if (t) box.appendChild(t.content.cloneNode(true));
      return box;
    }
    function clearWhy() {
      cells.forEach((td) => {
        const why = one(td, ".ex-cell__why");
        why.innerHTML = "";
        why.hidden = true;
      });
    }
    function fillKey() {
      all(w.el, "[data-ex-value]").forEach((td) => {
        const cell = spec.cells[+td.getAttribute("data-ex-value")];
        const vals = cell.answer[w.state.variant].map((x) =>
          Number.isInteger(x) ? x.toLocaleString("en-US") : String(x));
        td.textContent = cell.shape ? `(${vals.join(", ")})` : vals[0];
      });
    }
    function grade(judge, quiet) {
      const v = w.state.variant;
      let right = 0;
      const notes = [];
      clearWhy();
      cells.forEach((td, r) => {
        const cell = spec.cells[r];
        const verdict = judge.judge(input(td).value, cell, v, spec);
        if (verdict.ok) right++;
        input(td).setAttribute("aria-invalid", verdict.ok ? "false" : "true");
        mark(td, verdict.ok ? "right" : "wrong", verdict.ok ? "right" : "wrong");
        if (verdict.ok) return;
        const why = one(td, ".ex-cell__why");
        let box;
        if (verdict.wrong >= 0) {
          box = template(`template[data-ex-why="${r}-${verdict.wrong}"]`);
        } else {
          box = template(`template[data-ex-otherwise="${r}"]`);
          const said = verdict.unread
            ? `This ${judge.unreadable(cell.shape ? "a shape" : "an expression",
              spec.scopes[v], input(td).value)}`
            : verdict.rounded
              ? "Rounded that far, a wrong count rounds the same: give the exact number."
              : verdict.mixed
                ? "A formula is checked for every size, and one of these numbers " +
                  "in it holds for these only: write each part all in numbers " +
                  "or all in symbols."
                : "";
          if (said) {
            const p = document.createElement("p");
            p.textContent = said;
            box.insertBefore(p, box.firstChild);
          } else if (cell.shape && verdict.axes !== cell.answer[v].length) {
            const p = document.createElement("p");
            // Both counts: "this shape has 3" was read as the answer's.
            const axes = (n) => `${n} ${n === 1 ? "axis" : "axes"}`;
            p.textContent = `Count the axes: yours has ${axes(verdict.axes)}, ` +
              `the answer ${axes(cell.answer[v].length)}.`;
            box.insertBefore(p, box.firstChild);
          }
        }
        why.appendChild(box);
        why.hidden = false;
        const row = one(w.el, `#${w.el.id}-row${r}`);
        notes.push(`${speech(row)}: ${speech(box)}`);
      });
      fillKey();
      // (No template inside a template: the minifier drops its spaces.)
      const all = right === 1 ? "Right" : `All ${right} right`;
      const message = right === cells.length
        ? w.feedback("right", `${all} for these numbers. ` +
          "Try another set to check it was no accident.")
        : w.feedback("wrong", `${right} of ${cells.length} right. ` +
          "Each wrong cell says why; fix them and check again.");
      if (!quiet) w.announce(`${message} ${notes.join(" ")}`);
    }
    function check(quiet) {
      const empty = cells.filter((td) => !input(td).value.trim());
      if (empty.length) {
        // An empty cell is no answer: nothing is graded or unlocked.
        w.announce(w.feedback("warn", "Fill every cell first: " +
          empty.length + " of " + cells.length + " still empty."));
        focusOn(input(empty[0]));
        return;
      }
      loadJudge().then((judge) => {
        // A cell the checker cannot read is no answer either (a word
        // typed in every cell opened the key), nor one that names the
        // quantity it asks for ("d_k" in the d_k cell, right for every
        // variant without a thought): it says so, and nothing is graded
        // or unlocked.
        // Nor, once a try has shown the key (on these numbers or others;
        // after a reset too), a formula: pasting it passed every set
        // without a sum, and the same set "All right" (a student's).
        w.save();
        const later = keyShown(w.state);
        const says = [];
        let formulas = 0;
        const bad = cells.filter((td, r) => {
          const c = spec.cells[r];
          const v = judge.judge(input(td).value, c, w.state.variant, spec);
          if (v.named) says.push(`The cell for ${c.asks} holds ${c.asks} ` +
            "itself: say what it is, as a number or from the other symbols.");
          const formula = later && !v.unread && !v.named &&
            judge.usesSymbols(judge.split(input(td).value, c.shape));
          formulas += formula;
          return v.unread || v.named || formula;
        });
        const unread = bad.length - says.length - formulas;
        if (unread) {
          says.unshift(`${unread} of ${cells.length} cells ` +
            judge.unreadable("an expression", spec.scopes[w.state.variant],
              bad.map((td) => input(td).value).join(" ")));
        }
        if (formulas) {
          says.push(`${formulas} of ${cells.length} cells hold a formula: ` +
            "work it out for these numbers.");
        }
        if (bad.length) {
          clearWhy();
          cells.forEach((td) => {
            mark(td, null);
            input(td).setAttribute("aria-invalid", bad.includes(td));
          });
          w.announce(w.feedback("warn", `${says.join(" ")} Nothing was checked yet.`));
          focusOn(input(bad[0]));
          return;
        }
        w.checkedThese();
        grade(judge, quiet);
      }, () => {
        w.announce(w.feedback("warn", "The answer checker did not load; " +
          "reload the page and check again."));
      });
    }
    w.on("reveal", () => fillKey());
    function another() {
      variants.another();
      w.state.values = {};
      cells.forEach((td) => {
        input(td).value = "";
        input(td).removeAttribute("aria-invalid");
      });
      w.changed(cells);
      clearWhy();
      showVariant();
      w.save();
      w.announce(`New numbers: ${prompt(w)}`);
      focusOn(input(cells[0]));
    }
    cells.forEach((td) => {
      const row = td.getAttribute("data-ex-row");
      show(input(td));
      if (w.state.values[row] != null) input(td).value = w.state.values[row];
      input(td).addEventListener("input", () => {
        w.state.values[row] = input(td).value;
        w.changed(cells);
        clearWhy();
        w.save();
        cells.forEach((c) => {
          input(c).removeAttribute("aria-invalid");
        });
      });
      input(td).addEventListener("keydown", (e) => {
        if (e.key === "Enter") {
          e.preventDefault();
          check(false);
        }
      });
      input(td).addEventListener("focus", () => {
        loadJudge().catch(() => {});
      }, { once: true });
    });
    w.on("check", () => {
      check(false);
    });
    w.on("another", another);
    showVariant();
    w.save();
    const restored = Object.keys(w.state.values).some((k) => String(w.state.values[k]).trim());
    if (restored && w.state.triedVariant === w.state.variant) w.notChecked();
    w.state.checked = false;
  };

  // Discussion: the hint is there from the start; the model answer only
  // once the student has written something and asked to compare.
  KINDS.discussion = (w) => {
    const box = one(w.el, ".ex-notes");
    const notes = one(box, "textarea");
    const model = one(w.el, "details.ex-key--answer");
    show(box);
    if (w.state.notes) notes.value = w.state.notes;
    model.hidden = !w.state.tried;
    notes.addEventListener("input", () => {
      w.state.notes = notes.value;
      w.save();
    });
    w.on("commit", () => {
      // Three words, one of them of letters ("1 2 3" opened a model answer).
      if (words(notes.value, echoOf(w)) < 3 ||
        !wordsOf(notes.value).some((t) => /\p{L}{2}/u.test(t) && !FILLER.has(t))) {
        w.announce(w.feedback("warn", (notes.value.trim()
          ? "Say a little more, in your own words (a sentence), "
          : "Write your answer in the box first, ") +
          "then compare it with the model answer."));
        focusOn(notes);
        return;
      }
      w.attempted();
      model.hidden = false;
      model.open = true;
      w.announce(w.feedback("info", "Compare your answer with the model " +
        "answer below.") + " Model answer: " +
        speech(one(model, ".ex-key__answer")));
      focusOn(one(model, "summary"));
    });
    all(w.el, "details.ex-key").forEach((d, i) => {
      if ((w.state.open || [])[i] && !d.hidden) d.open = true;
      d.addEventListener("toggle", () => {
        w.state.open = all(w.el, "details.ex-key").map((x) => x.open);
        w.save();
      });
      // Said on the click that opens it, not on "toggle": that event comes
      // a task later and could drown out a Compare pressed right after.
      if (d !== model) {
        one(d, "summary").addEventListener("click", () => {
          if (!d.open) w.announce(`Hint: ${speech(one(d, ".ex-key__hint"))}`);
        });
      }
    });
  };

  // A "Verify it" fold (``??? verify``) runs the code that shows the answer
  // of the exercise above it (the nearest before it), and a reference fold
  // (``??? reference``, "after you have tried") shows the code that answers
  // it: each stays out of the page until that exercise has had a real
  // attempt, with one line in its place for folds in a row. The instructor
  // notes wait for every exercise of the page: the "Instructor view"
  // switch is one click for a student too, and notes give answers away
  // ("a show of hands for (1, 2, 4, 4)") or leave one by elimination
  // ("Watch for" naming the other options). The deck's speaker view shows
  // them always. Prose that answers the exercise above it is wrapped in
  // ``<section class="after-answer" markdown>`` and waits the same way (the
  // stage shows it where it stands: the presenter decides when to go there).
  const LOCKED = "details.verify, details.reference, details.instructor, .after-answer";
  function lockedWhat(fold) {
    if (fold.matches(".verify")) return "The run that verifies the answer opens";
    if (fold.matches(".reference")) return "The reference opens";
    if (fold.matches(".after-answer")) return "The explanation opens";
    return "The instructor notes open";
  }
  function lockAnswerFolds() {
    // In the deck these folds are later steps the presenter reveals.
    if (DECK) return;
    const exercises = all(document, ".exercise[data-ex-kind]");
    const tried = (ex) => ex.hasAttribute("data-ex-tried");
    let note = null;
    let last = null;
    all(document, LOCKED).forEach((fold) => {
      const notes = fold.matches(".instructor");
      const above = exercises.filter((ex) =>
        ex.compareDocumentPosition(fold) & Node.DOCUMENT_POSITION_FOLLOWING
      ).pop();
      if (notes ? !exercises.length : !above) return;
      const before = fold.previousElementSibling;
      // A row of folds shares one line; the notes have a line of their own.
      if (!last || before !== last || notes || last.matches(".instructor")) {
        note = before;
        if (!note?.classList.contains("ex-locked")) {
          note = document.createElement("p");
          note.className = notes ? "ex-locked ex-locked--notes" : "ex-locked";
          note.textContent = `${lockedWhat(fold)} here once you have ` +
            // (Not where else they show: the deck's speaker view told a
            // student how to read the answers in them.)
            (notes ? "answered this page's exercises." : "answered the exercise above.");
          fold.parentNode.insertBefore(note, fold);
        }
      }
      const open = notes ? exercises.every(tried) : tried(above);
      fold.hidden = !open;
      note.hidden = open;
      last = fold;
    });
  }

  // --- wiring ----------------------------------------------------------------

  Widget.prototype.on = function (action, handler) {
    this.handlers = this.handlers || {};
    this.handlers[action] = handler;
  };

  // Bring one exercise to life; returns its widget (nothing when the kind
  // is unknown or the exercise is live already).
  function init(el) {
    const kind = el.getAttribute("data-ex-kind");
    if (!KINDS[kind] || el.hasAttribute("data-ex-ready")) return;
    const pristine = el.cloneNode(true);
    el.setAttribute("data-ex-ready", "");
    const w = new Widget(el);
    show(one(el, ".ex-actions"));
    el.addEventListener("click", (e) => {
      const b = e.target.closest?.("[data-ex-action]");
      if (!b || !el.contains(b) || b.disabled) return;
      const action = b.getAttribute("data-ex-action");
      if (action === "reset") {
        reset(w.key);
        const fresh = pristine.cloneNode(true);
        el.replaceWith(fresh);
        const renewed = init(fresh);
        const label = one(fresh, ".ex-label");
        label.setAttribute("tabindex", "-1");
        focusOn(label);
        renewed.announce("Exercise reset: your answer is cleared.");
        lockAnswerFolds();
      } else if (w.handlers?.[action]) {
        w.handlers[action](b);
      }
    });
    KINDS[kind](w);
    w.shown = false; // a restored answer's note is no verdict to scroll to
    // The deck's presenter shows the key as a step (present.js): it is
    // on the page from then, with what the kind fills in at a try.
    el.addEventListener("lesson:reveal", () => {
      w.keyAfterTry(true);
      w.handlers?.reveal?.();
    });
    const t = w.state.tried;
    const these = !("variant" in w.state) || w.state.triedVariant === w.state.variant;
    if (these && (w.state.committed || (Array.isArray(t) ? t.length : t))) {
      el.setAttribute("data-ex-tried", "");
    }
    return w;
  }

  // The home page's parts: how many of each part's exercises this
  // browser has a real attempt saved for, and a reset of them all.
  function triedIn(key) {
    const state = load(key);
    if (!state) return false;
    const t = state.tried;
    return !!(state.committed || (Array.isArray(t) ? t.length : t));
  }
  function showProgress() {
    const box = one(document, ".lesson-parts");
    if (!box) return;
    const rows = all(box, "tr[data-ex-keys]");
    let done = 0;
    let total = 0;
    rows.forEach((row) => {
      const keys = JSON.parse(row.getAttribute("data-ex-keys"));
      const tried = keys.filter(triedIn).length;
      done += tried;
      total += keys.length;
      one(row, ".lesson-parts__done").textContent = keys.length
        ? `${tried} / ${keys.length}`
        : "none";
    });
    one(box, ".lesson-parts__total").textContent = `${done} / ${total}`;
    const actions = one(box, ".lesson-parts__actions");
    actions.hidden = false;
    const button = one(actions, "[data-lesson-reset]");
    if (!button.hasAttribute("data-ready")) {
      button.setAttribute("data-ready", "");
      button.addEventListener("click", () => {
        // One tap, near where a thumb scrolls, erased every answer.
        if (!window.confirm("Clear every answer saved in this browser?")) return;
        rows.forEach((row) => {
          JSON.parse(row.getAttribute("data-ex-keys")).forEach(reset);
        });
        showProgress();
        one(actions, '[role="status"]').textContent =
          "Your progress is reset: every exercise is unanswered again.";
      });
    }
  }

  function initAll() {
    all(document, ".exercise[data-ex-kind]").forEach(init);
    lockAnswerFolds();
    showProgress();
  }
  document.addEventListener("lesson:attempted", lockAnswerFolds);

  // Every page shown, from disk too, and after instant navigation.
  window.lessonOnPage(initAll);
  // For tests and other scripts: the fill-in judge, on the shared cases.
  window.lessonExercises = {
    init: initAll,
    judge: (text, cell, v, spec) => loadJudge().then((j) => j.judge(text, cell, v, spec)),
  };
})();
