// Live code: Edit and Run on every Python code block of a served page.
//
// Only `mkdocs serve` (make serve, make present) loads this module: it
// injects it, its style and a configuration (#lesson-live-config: the
// run endpoint and this serve's token) into every page it sends
// (scripts/lessonbuild/liveserve.py). A static build never names it, so
// there the blocks stay plain code and nothing here runs.
//
// Works on the reading pages (Material) and in the deck (present.html,
// reveal.js): each block titled with a Python file gets buttons (Edit,
// Run, Reset) in its title row, taking no room of their own, so the deck's
// fitting of slides to the stage is unchanged. Edit turns the block into a CodeMirror editor at the block's own
// font size (the stage's code size in the deck); Run, or Ctrl/Cmd+Enter
// in the editor, sends the code to the endpoint; the answer appears under
// the block as "Your run", a line diff against the verified output, with
// any table (changed cells marked) and figure it published. In the deck it
// stands in for the verified Output block (the diff holds its lines too),
// within what is left of the stage, scrolling if it must. Reset brings
// the verified code back. In the deck the editor owns the keyboard while
// focused (reveal's keys are off); Esc or a run by Ctrl/Cmd+Enter gives
// the keys back to the deck.
//
// What a page must have for it (present.html included, with nothing to
// add to present.py: the injection covers every HTML page served): a
// `</head>`; each code block as Material renders it, `.highlight` holding
// `.filename` (the file, from the fence's title) and `pre > code`; in the
// deck, `window.Reveal` and reveal's `section` per sub-slide, and
// #deck-config's JSON `height` (the stage; 720 if absent).
const CONFIG_ID = "lesson-live-config";
const configElement = document.getElementById(CONFIG_ID);
const CONFIG = configElement ? JSON.parse(configElement.textContent) : null;
const DECK = Boolean(document.querySelector(".reveal .slides"));
// The stage height (present.html's deck-config), for fitting output.
const STAGE_HEIGHT = (() => {
  const deck = document.getElementById("deck-config");
  try {
    return deck ? JSON.parse(deck.textContent).height : 720;
  } catch {
    return 720;
  }
})();
let codemirror = null; // the bundle, imported on the first Edit

function loadEditor() {
  if (!codemirror) {
    codemirror = import(new URL("vendor/codemirror/codemirror.js", import.meta.url));
  }
  return codemirror;
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// --- which blocks --------------------------------------------------------

// A Python code block with its file as title: <div class="highlight">
// <span class="filename">snippets/15_trace.py</span><pre><code>.
function runnableBlocks(root) {
  return Array.from(root.querySelectorAll(".highlight")).filter((block) => {
    const name = block.querySelector(":scope > .filename");
    const code = block.querySelector(":scope > pre > code");
    return (
      name &&
      code &&
      /\.py$/.test(name.textContent.trim()) &&
      !block.hasAttribute("data-live") &&
      !block.closest(".live-output")
    );
  });
}

// --- the deck's keyboard -------------------------------------------------

function deckKeys(on) {
  if (DECK && window.Reveal?.configure) window.Reveal.configure({ keyboard: on });
}

// --- one block -----------------------------------------------------------

class LiveBlock {
  constructor(block) {
    this.block = block;
    this.path = block.querySelector(":scope > .filename").textContent.trim();
    this.pre = block.querySelector(":scope > pre");
    this.verified = this.pre.querySelector("code").textContent.replace(/\n$/, "");
    this.view = null;
    this.output = null;
    this.running = false;
    block.setAttribute("data-live", "");
    this.bar = el("div", "live-bar");
    this.bar.setAttribute("role", "toolbar");
    this.bar.setAttribute("aria-label", `Live code: ${this.path}`);
    this.editButton = this.button("Edit", "Edit this code", () => this.edit());
    this.runButton = this.button("Run", "Run this code (Ctrl+Enter in the editor)", () =>
      this.run()
    );
    this.resetButton = this.button("Reset", "Back to the verified code", () => this.reset());
    this.resetButton.hidden = true;
    this.status = el("span", "live-status");
    this.status.setAttribute("role", "status");
    this.bar.append(this.editButton, this.runButton, this.resetButton, this.status);
    block.append(this.bar);
  }

  button(label, title, action) {
    const b = el("button", `live-button live-${label.toLowerCase()}`, label);
    b.type = "button";
    b.title = title;
    b.addEventListener("click", (event) => {
      event.stopPropagation();
      action();
    });
    return b;
  }

  code() {
    return this.view ? this.view.state.doc.toString() : this.verified;
  }

  async edit() {
    if (this.view) {
      this.view.focus();
      return;
    }
    const cm = await loadEditor();
    const code = window.getComputedStyle(this.pre.querySelector("code"));
    const host = el("div", "live-editor");
    host.style.fontSize = code.fontSize;
    host.style.lineHeight = code.lineHeight;
    // Out of the editor, onto its Run button (Edit is hidden while
    // editing: the focus fell to the page and a keyboard lost its place).
    const leave = () => {
      this.view.contentDOM.blur();
      this.runButton.focus();
      return true;
    };
    // In the deck a run from the keyboard gives the keys back to the
    // deck, as Esc does: the next press of a clicker (→, Space) moves the
    // deck instead of typing into the code. A click in the code edits
    // again. On a reading page the editor keeps them, for the next edit.
    const run = () => {
      this.run();
      return DECK ? leave() : true;
    };
    this.view = new cm.EditorView({
      parent: host,
      state: cm.EditorState.create({
        doc: this.verified,
        extensions: [
          cm.lineNumbers(),
          cm.history(),
          cm.drawSelection(),
          cm.indentOnInput(),
          cm.bracketMatching(),
          cm.indentUnit.of("    "),
          cm.python(),
          cm.syntaxHighlighting(highlightStyle(cm)),
          cm.EditorView.lineWrapping,
          cm.keymap.of([
            { key: "Mod-Enter", run, preventDefault: true },
            { key: "Escape", run: leave },
            ...cm.defaultKeymap,
            ...cm.historyKeymap,
            cm.indentWithTab
          ]),
          cm.EditorView.contentAttributes.of({
            "aria-label": `Editable code: ${this.path}. Ctrl+Enter runs it, Escape leaves.`
          })
        ]
      })
    });
    // While the editor has the focus, no key reaches the deck (or the
    // page's own shortcuts): Escape and Ctrl+Enter are handled here.
    host.addEventListener("keydown", (event) => event.stopPropagation());
    host.addEventListener("focusin", () => deckKeys(false));
    host.addEventListener("focusout", () => deckKeys(true));
    this.pre.style.display = "none";
    this.pre.after(host);
    this.host = host;
    this.block.classList.add("live-editing");
    this.editButton.hidden = true;
    this.resetButton.hidden = false;
    this.view.focus();
    // The editor, taller than the block it replaces, pushed a run's
    // output off the stage.
    if (DECK && this.output) fitToStage(this.output, host.querySelector(".cm-editor"));
  }

  reset() {
    if (this.view) {
      this.view.destroy();
      this.view = null;
      this.host.remove();
      this.host = null;
      deckKeys(true);
    }
    this.pre.style.display = "";
    this.block.classList.remove("live-editing");
    this.clearOutput();
    this.editButton.hidden = false;
    this.resetButton.hidden = true;
    this.status.textContent = "";
    this.editButton.focus();
  }

  async run() {
    if (this.running) return;
    this.running = true;
    // aria-disabled, not disabled: a disabled button loses the focus (a
    // run from the keyboard leaves it there), and `running` ignores clicks.
    this.runButton.setAttribute("aria-disabled", "true");
    this.status.textContent = "Running…";
    const started = performance.now();
    let answer;
    try {
      const response = await fetch(CONFIG.endpoint, {
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          "X-Lesson-Live-Token": CONFIG.token
        },
        body: JSON.stringify({ path: this.path, shown: this.verified, code: this.code() })
      });
      answer = await response.json();
    } catch (error) {
      answer = { ok: false, status: "error", message: `The server did not answer: ${error}` };
    }
    this.running = false;
    this.runButton.removeAttribute("aria-disabled");
    this.status.textContent = "";
    this.show(answer, Math.round(performance.now() - started));
  }

  // The verified Output block right below this one, if any.
  verifiedOutput() {
    const next = this.block.nextElementSibling;
    const title = next?.querySelector(":scope > .filename");
    return title && title.textContent.trim() === "Output" ? next : null;
  }

  clearOutput() {
    this.output?.remove();
    this.output = null;
    this.pre.style.maxHeight = ""; // (fitToStage's, for the output gone)
    const verified = this.verifiedOutput();
    if (verified) verified.style.display = "";
  }

  show(answer, ms) {
    this.clearOutput();
    const out = el("section", `live-output live-${answer.status || "error"}`);
    out.setAttribute("aria-label", "Your run");
    out.setAttribute("data-status", answer.status || "error");
    const head = el("p", "live-head");
    head.append(el("strong", "live-mark", "Your run"), " ", answer.message || "");
    if (answer.ok) head.append(el("span", "live-time", ` (${ms} ms)`));
    out.append(head);
    // (A program that prints nothing, as verified: no diff, not its legend
    // over no lines.)
    if (answer.diff?.length) out.append(diffView(answer.diff, answer.stdout_cut));
    else if (answer.stdout) out.append(el("pre", "live-stdout", answer.stdout));
    if (answer.error) out.append(el("pre", "live-error", answer.error));
    if (answer.stderr) out.append(el("pre", "live-stderr", answer.stderr));
    for (const table of answer.tables || []) out.append(tableView(table));
    for (const figure of answer.figures || []) out.append(figureView(figure));
    const verified = DECK ? this.verifiedOutput() : null;
    if (verified) {
      verified.style.display = "none";
      // Your run shows the output: where the verified one was the next
      // step, that step is taken (→ revealed a hidden block: a press that
      // changed nothing on the stage). A later step is never opened.
      const step = Number(verified.getAttribute("data-fragment-index"));
      const now = window.Reveal?.getIndices?.().f ?? -1;
      if (verified.classList.contains("fragment") && step === now + 1) {
        window.Reveal.navigateFragment(step);
      }
    }
    this.block.after(out);
    this.output = out;
    if (DECK) fitToStage(out, this.view ? this.host.querySelector(".cm-editor") : this.pre);
  }
}

// --- the answer ----------------------------------------------------------

function diffView(diff, cut) {
  const pre = el("pre", "live-diff");
  const legend = el("span", "live-legend", "− verified   + your run\n");
  pre.append(legend);
  for (const [op, line] of diff) {
    const kind = op === "+" ? "live-add" : op === "-" ? "live-del" : "live-same";
    const sign = op === "=" ? "  " : `${op === "-" ? "−" : "+"} `;
    pre.append(el("span", kind, `${sign}${line}\n`));
  }
  if (cut) pre.append(el("span", "live-cut", "… (cut: the output is longer)\n"));
  return pre;
}

function tableView(table) {
  const wrap = el("div", "live-table");
  wrap.append(el("p", "live-caption", `Table ${table.id}`));
  const t = el("table", "live-grid");
  const head = el("tr");
  for (const c of table.columns) {
    const th = el("th", "", c);
    th.scope = "col";
    head.append(th);
  }
  t.append(head);
  const known = table.verified;
  const sameShape =
    known &&
    known.columns.join("\u0000") === table.columns.join("\u0000") &&
    known.rows.length === table.rows.length;
  table.rows.forEach((row, i) => {
    const tr = el("tr");
    row.forEach((cell, j) => {
      const td = el("td");
      const was = sameShape ? known.rows[i][j] : undefined;
      if (was !== undefined && was !== cell) {
        td.className = "live-changed";
        td.append(cellView(was, "del"), " ", cellView(cell, "ins"));
      } else {
        td.append(cellView(cell, "span"));
      }
      tr.append(td);
    });
    t.append(tr);
  });
  wrap.append(t);
  return wrap;
}

// A table's cells are Markdown on the slide: `code` spans become code
// here, the rest stays text, \(TeX\) as its source without the delimiters
// (the page typesets it at build time; a run's table has no build).
function cellView(text, tag) {
  const node = el(tag);
  text.split("`").forEach((part, i) => {
    if (i % 2) {
      node.append(el("code", "", part));
    } else {
      part.split(/\\\((.+?)\\\)/).forEach((bit, j) => {
        node.append(j % 2 ? el("span", "live-tex", bit) : bit);
      });
    }
  });
  return node;
}

function figureView(figure) {
  const box = el("figure", "live-figure");
  const img = el("img");
  img.alt = figure.alt;
  img.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(figure.svg)}`;
  box.append(img, el("figcaption", "", `Your run: ${figure.id}`));
  return box;
}

// In the deck, the slide was fitted to the stage before anything ran: if
// the output does not fit below the code, the code (`code`: the editor,
// or the block as shown) and the output share what is left of the stage,
// each scrolling within its box. A block in a fold's panel (present.css:
// it rises from the stage's foot, up to the meta line at most) shares
// what the panel has: measured as the screen's, the panel stood 720 px
// low, the output got its least and, run without Edit, hung off the
// stage under slide 47's 490 px of code (a tester). The panel then
// takes its full height: its top edge cuts no line of the screen.
function fitToStage(out, code) {
  const section = out.parentElement?.closest("section");
  if (!section) return;
  const panel = out.closest("details.deck-fold[open]");
  out.style.maxHeight = "";
  code.style.maxHeight = "";
  const most = panel ? Number.parseFloat(window.getComputedStyle(panel).maxHeight) : STAGE_HEIGHT;
  if (panel && panel.scrollHeight > panel.clientHeight) panel.style.height = `${most}px`;
  const over = (panel ? panel.scrollHeight : contentBottom(section)) - most;
  if (over <= 0) return;
  // The room code and output have together, shared: the code keeps its
  // height up to half of it, the output gets the rest (at least a few
  // lines): a short edit left half the room empty below an output that
  // scrolled.
  const outHeight = out.offsetHeight;
  const codeHeight = code.offsetHeight;
  const room = outHeight + codeHeight - over;
  const forCode = Math.min(codeHeight, room / 2);
  const forOut = Math.min(outHeight, Math.max(160, room - forCode));
  out.style.maxHeight = `${Math.round(forOut)}px`;
  if (codeHeight > room - forOut) {
    code.style.maxHeight = `${Math.round(Math.max(96, room - forOut))}px`;
  }
  // "more below" at the box's foot while some of it is out of sight (a
  // table under the printed lines looked like the whole output).
  const cue = () =>
    out.classList.toggle("live-more", out.scrollTop + out.clientHeight < out.scrollHeight - 1);
  out.addEventListener("scroll", cue, { passive: true });
  cue();
}

// Layout pixels (the stage's, whatever reveal's scale) from the top of
// `section` to the bottom of what is on screen now: a step not shown yet
// (a fragment) gives its room to the output, which matters more now.
function contentBottom(section) {
  let bottom = 0;
  for (const child of section.querySelectorAll(":scope > *, :scope > * > *")) {
    // A container (the slide's body): its children count, not its height.
    if (child.parentElement === section && child.children.length) continue;
    if (!child.offsetParent || child.closest(".fragment:not(.visible)")) continue;
    let top = 0;
    for (let node = child; node && node !== section; node = node.offsetParent) {
      top += node.offsetTop;
    }
    const margin = parseFloat(window.getComputedStyle(child).marginBottom) || 0;
    bottom = Math.max(bottom, top + child.offsetHeight + margin);
  }
  return bottom + (parseFloat(window.getComputedStyle(section).paddingBottom) || 0);
}

// --- the editor's colours: the page's own code colours -------------------

function highlightStyle(cm) {
  const t = cm.tags;
  return cm.HighlightStyle.define([
    { tag: [t.keyword, t.operatorKeyword, t.controlKeyword], class: "live-k" },
    { tag: [t.string, t.special(t.string)], class: "live-s" },
    { tag: [t.number, t.bool, t.null], class: "live-n" },
    { tag: [t.comment, t.lineComment], class: "live-c" },
    { tag: [t.function(t.variableName), t.function(t.propertyName)], class: "live-f" },
    { tag: [t.className, t.definition(t.variableName)], class: "live-d" },
    { tag: [t.standard(t.variableName), t.self], class: "live-b" }
  ]);
}

// --- start ---------------------------------------------------------------

function enhance() {
  for (const block of runnableBlocks(document)) new LiveBlock(block);
}

if (CONFIG && !window.lessonLive) {
  window.lessonLive = true;
  enhance();
  // Material's instant navigation swaps pages without loading this again.
  if (window.document$?.subscribe) window.document$.subscribe(enhance);
}
