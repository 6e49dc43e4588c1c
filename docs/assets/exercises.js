// Exercises: make the widgets that scripts/lessonbuild/exercises renders respond.
//
// The HTML already holds everything (questions, options and, in collapsed
// <details>, the answers), so without JavaScript nothing is lost. Here we
// show the controls, read the answers back from those <details>, give
// feedback (icon + words, never colour alone, announced through each
// exercise's role="status" region), and keep each answer in localStorage
// under the key in data-ex-key. Widgets initialise on every page shown
// (lessonOnPage, onpage.js: on load, and after instant navigation).
(() => {
  

  const ICONS = { right: "\u2713", wrong: "\u2717", warn: "\u26a0", info: "\u2139" };
  const WORDS = { right: "Correct.", wrong: "Not quite.", warn: "Careful.", info: "" };

  function all(root, selector) {
    return Array.prototype.slice.call(root.querySelectorAll(selector));
  }
  function one(root, selector) {
    return root.querySelector(selector);
  }
  function show(el) {
    if (el) el.hidden = false;
  }

  // Storage may be unavailable (private mode, file://): then nothing
  // persists, but everything else still works.
  function load(key) {
    try {
      return JSON.parse(window.localStorage.getItem(key) || "null");
    } catch (_e) {
      return null;
    }
  }
  function store(key, value) {
    try {
      window.localStorage.setItem(key, JSON.stringify(value));
    } catch (_e) { /* not persisted */ }
  }
  function forget(key) {
    try {
      window.localStorage.removeItem(key);
    } catch (_e) { /* nothing stored */ }
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

  // Fill-in comparison: the same rules as lessonbuild/exercises/answers.py
  // (keep the two in step; tests/test_exercises.py holds the shared
  // cases). Same text with case, spaces, thousands separators and a
  // tuple's brackets ignored ("·"/"×" read as "*", "8²" as "8^2"); or the
  // same number (256 = 4*8^2 = 4*8^2=256 for "4·8²=256"); or a form the
  // author listed (accept).
  const SUPERSCRIPT = "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079";
  const THOUSANDS = /(\d)[,_ ](?=\d{3}(?!\d))/g;
  function common(text) {
    let s = String(text).trim().toLowerCase().replace(/\u2212/g, "-");
    s = s.replace(/[\u00b7\u00d7\u22c5\u2217]/g, "*").replace(/\*\*/g, "^");
    return s.replace(/[\u2070\u00b9\u00b2\u00b3\u2074-\u2079]+/g, (m) => {
      let digits = "";
      for (let i = 0; i < m.length; i++) digits += SUPERSCRIPT.indexOf(m[i]);
      return `^${digits}`;
    });
  }
  function squash(s) {
    return s.replace(/\s+/g, "");
  }
  function dropThousands(s) {
    return s.replace(THOUSANDS, "$1");
  }
  function unbracket(s) {
    if (s[0] === "(" && s[s.length - 1] === ")" && s.indexOf(",") >= 0) {
      const inner = s.slice(1, -1);
      if (inner.indexOf("(") < 0 && inner.indexOf(")") < 0) return inner;
    }
    return s;
  }
  function forms(text) {
    const s = common(text);
    return [squash(dropThousands(s)), dropThousands(squash(s))]
      .filter(Boolean)
      .map(unbracket);
  }
  // An arithmetic side (digits, + - * / ^ and brackets), or null.
  function evaluate(expr) {
    if (!expr || !/^[0-9.+\-*/^()]+$/.test(expr)) return null;
    let at = 0;
    function peek() {
      return expr[at];
    }
    function number() {
      const m = /^\d*\.?\d+(?:\.\d*)?/.exec(expr.slice(at));
      if (!m) throw new Error("number");
      at += m[0].length;
      return parseFloat(m[0]);
    }
    function atom() {
      if (peek() === "-") {
        at++;
        return -atom();
      }
      if (peek() === "(") {
        at++;
        const v = sum();
        if (peek() !== ")") throw new Error(")");
        at++;
        return v;
      }
      return number();
    }
    function power() {
      const base = atom();
      if (peek() === "^") {
        at++;
        const exp = power();
        if (Math.abs(exp) > 64) throw new Error("exponent");
        return base ** exp;
      }
      return base;
    }
    function product() {
      let v = power();
      while (peek() === "*" || peek() === "/") {
        const op = expr[at++];
        const r = power();
        if (op === "/" && r === 0) throw new Error("zero");
        v = op === "*" ? v * r : v / r;
      }
      return v;
    }
    function sum() {
      let v = product();
      while (peek() === "+" || peek() === "-") {
        const op = expr[at++];
        const r = product();
        v = op === "+" ? v + r : v - r;
      }
      return v;
    }
    try {
      const v = sum();
      return at === expr.length && Number.isFinite(v) ? v : null;
    } catch (_e) {
      return null;
    }
  }
  function numberOf(text) {
    const sides = squash(dropThousands(common(text))).split("=");
    return evaluate(sides[sides.length - 1]);
  }
  function sameNumber(given, expected) {
    const target = numberOf(expected);
    if (target === null) return false;
    const sides = squash(dropThousands(common(given))).split("=");
    return sides.every((side) => {
      const v = evaluate(side);
      return v !== null &&
        Math.abs(v - target) <= 1e-9 * Math.max(1, Math.abs(target));
    });
  }
  function sameCell(given, expected, accept) {
    if (!String(given).trim()) return false;
    const mine = forms(given);
    return [expected].concat(accept || []).some((want) => {
      const theirs = forms(want);
      return mine.some((f) => theirs.indexOf(f) >= 0) || sameNumber(given, want);
    });
  }

  // --- shared pieces -------------------------------------------------------

  function Widget(el) {
    this.el = el;
    this.key = el.getAttribute("data-ex-key");
    this.live = one(el, ".ex-live");
    this.panel = one(el, ".ex-feedback");
    this.state = load(this.key) || {};
  }
  Widget.prototype.save = function () {
    store(this.key, this.state);
  };
  Widget.prototype.announce = function (text) {
    const live = this.live;
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
  // Verdict line plus optional cloned content, in the visible panel.
  Widget.prototype.feedback = function (status, message, extra) {
    const panel = this.panel;
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
    this.panel.innerHTML = "";
    this.panel.hidden = true;
  };
  // A restored answer is shown, never graded: it says so.
  Widget.prototype.notChecked = function () {
    this.feedback("info", "Your answer from last time is back: not checked yet.");
  };
  // The answer key stays out of sight until the first try; then its
  // <details> is the "show answer" the student may open.
  Widget.prototype.keyAfterTry = function (tried) {
    all(this.el, "details.ex-key").forEach((d) => {
      d.hidden = !tried;
    });
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
  // A titled copy of part of the answer key, for the feedback panel.
  function excerpt(title, source) {
    if (!source) return null;
    const box = document.createElement("div");
    box.className = "ex-excerpt";
    if (title) {
      const h = document.createElement("p");
      h.className = "ex-excerpt__title";
      h.textContent = title;
      box.appendChild(h);
    }
    // Copy the content, not the element: a <dd> needs its <dl>.
    const body = document.createElement("div");
    for (let c = source.firstChild; c; c = c.nextSibling) {
      body.appendChild(c.cloneNode(true));
    }
    all(body, "[id]").forEach((n) => {
      n.removeAttribute("id");
    });
    box.appendChild(body);
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

  // --- kinds -----------------------------------------------------------------

  const KINDS = {};

  KINDS.predict = (w) => {
    const box = one(w.el, ".ex-predict");
    const input = one(box, "textarea");
    const button = one(w.el, '[data-ex-action="commit"]');
    const reveals = all(w.el, "details.ex-key");
    show(box);
    function commit(quiet) {
      if (!input.value.trim()) {
        w.announce(w.feedback("warn", "Type a prediction first, then commit it."));
        input.focus();
        return;
      }
      w.state.text = input.value;
      w.state.committed = true;
      w.save();
      input.readOnly = true;
      button.disabled = true;
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
        if (summary) summary.focus();
      }
    }
    input.addEventListener("input", () => {
      w.state.text = input.value;
      w.save();
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

  KINDS.check = (w) => {
    const key = one(w.el, ".ex-key");
    const answer = one(key, "[data-ex-answer]").getAttribute("data-ex-answer");
    const radios = all(w.el, "input.ex-radio");
    radios.forEach(show);
    function option(letter) {
      return one(w.el, `.ex-option[data-ex-option="${letter}"]`);
    }
    function check(quiet) {
      const picked = radios.filter((r) => r.checked)[0];
      if (!picked) {
        w.announce(w.feedback("warn", "Pick an option first."));
        (radios[0] || w.el).focus();
        return;
      }
      const letter = picked.value;
      w.keyAfterTry(true);
      w.state.choice = letter;
      w.state.tried = (w.state.tried || []).filter((t) => t !== letter);
      w.state.tried.push(letter);
      w.save();
      all(w.el, ".ex-option").forEach((li) => {
        mark(li, null);
      });
      mark(option(letter), letter === answer ? "right" : "wrong",
        letter === answer ? "correct" : "wrong");
      let message;
      if (letter === answer) {
        const explanation = excerpt("Explanation", one(key, ".ex-key__explanation"));
        message = w.feedback("right", `${letter} is the answer.`, [explanation]);
      } else {
        // Only what tempts towards this option, and a nudge: never the
        // right answer's explanation (that is behind "Answer" below).
        const tempts = one(key, `dd[data-ex-option="${letter}"]`);
        message = w.feedback(
          "wrong",
          letter + " is not it. Think again and pick another option, or " +
            "open the answer below.",
          [excerpt(`Why ${letter} tempts people`, tempts)]
        );
        message += ` Why ${letter} tempts people: ${speech(tempts)}`;
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
    const tried = (w.state.tried || []).length > 0;
    w.keyAfterTry(tried);
    if (w.state.choice) {
      radios.forEach((r) => {
        r.checked = r.value === w.state.choice;
      });
      if (tried) w.notChecked();
    }
  };

  KINDS.eliminate = (w) => {
    const key = one(w.el, ".ex-key");
    const answer = one(key, "[data-ex-answer]").getAttribute("data-ex-answer");
    const buttons = all(w.el, '[data-ex-action="strike"]');
    const wrong = buttons
      .map((b) => b.getAttribute("data-ex-option"))
      .filter((l) => l !== answer);
    buttons.forEach(show);
    w.keyAfterTry((w.state.struck || []).length > 0);
    function li(letter) {
      return one(w.el, `.ex-option[data-ex-option="${letter}"]`);
    }
    function button(letter) {
      return one(w.el, `[data-ex-action="strike"][data-ex-option="${letter}"]`);
    }
    function strikeOut(letter) {
      const item = li(letter);
      item.classList.add("is-struck");
      mark(item, "wrong", "struck out");
      button(letter).hidden = true;
    }
    function finish(quiet) {
      mark(li(answer), "right", "survives");
      buttons.forEach((b) => {
        b.hidden = true;
      });
      key.open = true;
      const message = w.feedback(
        "right",
        "All " + wrong.length + " wrong options are struck out: " + answer +
          " survives.",
        [excerpt("Explanation", one(key, ".ex-key__explanation"))]
      );
      if (!quiet) {
        w.announce(`${message} ${speech(one(key, ".ex-key__explanation"))}`);
        one(key, "summary").focus();
      }
    }
    function strike(letter) {
      const struck = w.state.struck || [];
      w.keyAfterTry(true);
      if (letter === answer) {
        // Say no more than that it cannot go: not that it is the answer.
        w.announce(
          w.feedback(
            "warn",
            `Nothing rules out ${letter}. Strike another option.`
          )
        );
        return;
      }
      if (struck.indexOf(letter) < 0) struck.push(letter);
      w.state.struck = struck;
      w.save();
      mark(li(answer), null);
      strikeOut(letter);
      if (struck.length === wrong.length) {
        finish(false);
        return;
      }
      const why = one(key, `dd[data-ex-option="${letter}"]`);
      w.announce(
        `${w.feedback(
          "info",
          letter + " is struck out. " + (wrong.length - struck.length) +
            " to go.",
          [excerpt(`What rules out ${letter}`, why)]
        )} What rules it out: ${speech(why)}`
      );
      // Focus the next strike button still there, after this one.
      const at = buttons.indexOf(button(letter));
      const rest = buttons.slice(at + 1).concat(buttons.slice(0, at));
      const next = rest.filter((b) => !b.hidden)[0];
      if (next) next.focus();
    }
    buttons.forEach((b) => {
      b.addEventListener("click", () => {
        strike(b.getAttribute("data-ex-option"));
      });
    });
    (w.state.struck || []).forEach(strikeOut);
    if ((w.state.struck || []).length === wrong.length) finish(true);
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
        truth[i.getAttribute("data-ex-item")] = g.getAttribute("data-ex-bucket");
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
      const id = item.getAttribute("data-ex-item");
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
      if (focus) select.focus();
    }
    function check(quiet) {
      const placed = w.state.place || {};
      const left = items.filter((i) => !placed[i.getAttribute("data-ex-item")]).length;
      if (left) {
        w.announce(
          w.feedback(
            "warn",
            `Put every item in a bucket first: ${left} still unsorted.`
          )
        );
        return;
      }
      w.state.checked = true;
      w.state.tried = true;
      w.save();
      w.keyAfterTry(true);
      let right = 0;
      items.forEach((i) => {
        const ok = placed[i.getAttribute("data-ex-item")] ===
          truth[i.getAttribute("data-ex-item")];
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
        : w.feedback("wrong", right + " of " + items.length + " items are in the " +
          "right bucket. Move the ones marked wrong and check again, or " +
          "open the answer below.");
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
      const b = saved[item.getAttribute("data-ex-item")];
      if (b && zone(b)) place(item, b, false);
    });
    if (Object.keys(saved).length && w.state.tried) w.notChecked();
  };

  KINDS.order = (w) => {
    const key = one(w.el, ".ex-key");
    const list = one(w.el, ".ex-steps");
    const truth = all(key, ".ex-key__steps [data-ex-step]").map((li) => li.getAttribute("data-ex-step"));
    all(w.el, ".ex-handle, .ex-moves").forEach(show);
    w.keyAfterTry(!!w.state.tried);
    function steps() {
      return all(list, ".ex-step");
    }
    function remember() {
      w.state.order = steps().map((li) => li.getAttribute("data-ex-step"));
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
      if (delta < 0) list.insertBefore(li, all_[j]);
      else list.insertBefore(li, all_[j].nextSibling);
      remember();
      if (button) button.focus();
      w.announce(
        "Moved to position " + (j + 1) + " of " + all_.length + ": " +
          speech(one(li, ".ex-step__text"))
      );
    }
    function check(quiet) {
      w.state.checked = true;
      w.state.tried = true;
      w.save();
      w.keyAfterTry(true);
      let right = 0;
      steps().forEach((li, i) => {
        const ok = li.getAttribute("data-ex-step") === truth[i];
        if (ok) right++;
        mark(li, ok ? "right" : "wrong", ok ? "right place" : "wrong place");
      });
      const n = truth.length;
      if (right === n) key.open = true;
      const message = right === n
        ? w.feedback("right", "All " + n + " steps are in order. The order " +
          "and the why are shown below.")
        : w.feedback("wrong", right + " of " + n + " steps are in the right " +
          "place. Move the ones marked wrong and check again, or open the " +
          "answer below.");
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

  KINDS["fill-in"] = (w) => {
    const key = one(w.el, ".ex-key");
    const cells = all(w.el, ".ex-blank");
    all(w.el, ".ex-blank__nojs").forEach((s) => {
      s.hidden = true;
    });
    w.state.values = w.state.values || {};
    w.keyAfterTry(!!w.state.tried);
    function check(quiet) {
      w.state.checked = true;
      w.state.tried = true;
      w.save();
      w.keyAfterTry(true);
      let right = 0;
      cells.forEach((td) => {
        const row = td.getAttribute("data-ex-row");
        const input = one(td, "input");
        const cell = one(key, `td[data-ex-row="${row}"]`);
        const accept = JSON.parse(cell.getAttribute("data-ex-accept") || "[]");
        const ok = sameCell(input.value, cell.getAttribute("data-ex-value"), accept);
        if (ok) right++;
        input.setAttribute("aria-invalid", ok ? "false" : "true");
        mark(td, ok ? "right" : "wrong", ok ? "right" : input.value.trim() ? "wrong" : "empty");
      });
      const message = right === cells.length
        ? w.feedback("right", `All ${right} cells are right.`)
        : w.feedback("wrong", right + " of " + cells.length + " cells are " +
          "right. Fix the ones marked wrong and check again, or open the " +
          "answer below.");
      if (!quiet) w.announce(message);
    }
    cells.forEach((td) => {
      const input = one(td, "input");
      const row = td.getAttribute("data-ex-row");
      show(input);
      if (w.state.values[row] != null) input.value = w.state.values[row];
      input.addEventListener("input", () => {
        w.state.values[row] = input.value;
        w.save();
        w.changed(cells);
        cells.forEach((c) => {
          one(c, "input").removeAttribute("aria-invalid");
        });
      });
      input.addEventListener("keydown", (e) => {
        if (e.key === "Enter") {
          e.preventDefault();
          check(false);
        }
      });
    });
    w.on("check", () => {
      check(false);
    });
    const restored = Object.keys(w.state.values).some((k) => String(w.state.values[k]).trim());
    if (restored && w.state.tried) w.notChecked();
    w.state.checked = false;
  };

  KINDS.discussion = (w) => {
    const box = one(w.el, ".ex-notes");
    const notes = one(box, "textarea");
    show(box);
    if (w.state.notes) notes.value = w.state.notes;
    notes.addEventListener("input", () => {
      w.state.notes = notes.value;
      w.save();
    });
    // Hint first, then the model answer: remember what was opened.
    all(w.el, "details.ex-key").forEach((d, i) => {
      if ((w.state.open || [])[i]) d.open = true;
      d.addEventListener("toggle", () => {
        w.state.open = all(w.el, "details.ex-key").map((x) => x.open);
        w.save();
        if (d.open) {
          w.announce((i === 0 ? "Hint: " : "Model answer: ") +
            speech(one(d, ".ex-key__hint, .ex-key__answer")));
        }
      });
    });
  };

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
        forget(w.key);
        const fresh = pristine.cloneNode(true);
        el.replaceWith(fresh);
        const renewed = init(fresh);
        const label = one(fresh, ".ex-label");
        label.setAttribute("tabindex", "-1");
        label.focus();
        renewed.announce("Exercise reset: your answer is cleared.");
      } else if (w.handlers?.[action]) {
        w.handlers[action](b);
      }
    });
    KINDS[kind](w);
    return w;
  }

  function initAll() {
    all(document, ".exercise[data-ex-kind]").forEach(init);
  }

  // Every page shown, from disk too, and after instant navigation.
  window.lessonOnPage(initAll);
  // For tests and other scripts: the fill-in comparison.
  window.lessonExercises = { sameCell: sameCell, init: initAll };
})();
