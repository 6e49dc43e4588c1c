// The deck (present.html): fit every slide to the stage, then start reveal.js.
//
// scripts/lessonbuild/present.py wrote one <section> stack per slide from
// the rendered reading pages. What it cannot know is how tall the content
// is in the real fonts, so here, before reveal.js starts, every sub-slide
// taller than the 1280x720 stage is split: its trailing blocks move to a
// new sub-slide below it (a code block taller than the stage is cut by
// lines). The speaker view's preview frames and the print view run this
// same code on the same HTML, so their slide indices agree.
(() => {
  

  const CONFIG = JSON.parse(document.getElementById("deck-config").textContent);
  const W = CONFIG.width;
  const H = CONFIG.height;
  const PRINT = /print-pdf/.test(window.location.search);
  // The speaker view's preview frames (reveal's notes plugin adds it).
  const RECEIVER = /[?&]receiver/.test(window.location.search);

  function all(root, selector) {
    return Array.prototype.slice.call(root.querySelectorAll(selector));
  }

  // --- fitting -----------------------------------------------------------

  // On screen once shown: not display:none, not inside a closed <details>
  // (opacity is ignored: a step not yet shown still needs its room).
  function visible(el) {
    if (el.checkVisibility) return el.checkVisibility();
    return !el.closest("details:not([open]) > :not(summary)");
  }

  // Bottom of the content of a sub-slide laid out at stage width, in px.
  function contentHeight(section) {
    const box = section.getBoundingClientRect();
    let bottom = box.top;
    // Every element, not only the blocks: a widget's parts can spill out
    // of its box. KaTeX's stretchy SVGs are clipped by KaTeX itself.
    all(section, ".deck-body *, .deck-meta, .deck-cont").forEach((el) => {
      if (el.closest(".katex") && !el.classList.contains("katex")) return;
      // A closed <details> still lays its content out (content-visibility),
      // and that content has a box: it is not on screen, so it is skipped.
      if (!visible(el)) return;
      const r = el.getBoundingClientRect();
      if (!r.width && !r.height) return;
      const style = window.getComputedStyle(el);
      bottom = Math.max(bottom, r.bottom + parseFloat(style.marginBottom || 0));
    });
    return bottom - box.top + parseFloat(window.getComputedStyle(section).paddingBottom);
  }

  function fits(section) {
    return contentHeight(section) <= H;
  }

  // A sub-slide like `section` (meta line, "continued" title, notes), empty.
  function sibling(section) {
    const next = document.createElement("section");
    const meta = section.querySelector(".deck-meta");
    if (meta) next.appendChild(meta.cloneNode(true));
    let cont = section.querySelector(".deck-cont");
    if (!cont) {
      cont = document.createElement("p");
      cont.className = "deck-cont";
      cont.setAttribute("aria-hidden", "true");
      cont.textContent = section.parentNode.getAttribute("data-title");
    }
    next.appendChild(cont.cloneNode(true));
    const body = document.createElement("div");
    body.className = "md-typeset deck-body";
    next.appendChild(body);
    const notes = section.querySelector("aside.notes");
    if (notes) next.appendChild(notes.cloneNode(true));
    // The slide's time is shared by its sub-slides.
    const t = parseInt(section.getAttribute("data-timing") || "", 10);
    if (t > 0) {
      section.setAttribute("data-timing", String(Math.ceil(t / 2)));
      next.setAttribute("data-timing", String(Math.floor(t / 2)));
    }
    section.parentNode.insertBefore(next, section.nextSibling);
    return next;
  }

  // Split a code block in two at the line that crosses the stage bottom.
  function splitCode(block, section) {
    const code = block.querySelector("pre code");
    if (!code) return null;
    const lines = code.innerHTML.split("\n");
    if (lines[lines.length - 1] === "") lines.pop();
    let lo = 1;
    let hi = lines.length - 1;
    let keep = 0;
    // Largest number of lines that still fits.
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      code.innerHTML = `${lines.slice(0, mid).join("\n")}\n`;
      if (fits(section)) {
        keep = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    if (keep === 0) {
      code.innerHTML = `${lines.join("\n")}\n`;
      return null;
    }
    code.innerHTML = `${lines.slice(0, keep).join("\n")}\n`;
    const rest = block.cloneNode(true);
    rest.querySelector("pre code").innerHTML = `${lines.slice(keep).join("\n")}\n`;
    rest.classList.add("deck-continued");
    return rest;
  }

  // Split a list in two at the item that crosses the stage bottom; the
  // second part goes on numbering where the first stopped.
  function splitList(list, section) {
    const items = all(list, ":scope > li");
    const rest = list.cloneNode(false);
    const start = parseInt(list.getAttribute("start") || "1", 10);
    let keep = items.length;
    while (keep > 1 && !fits(section)) {
      keep -= 1;
      rest.insertBefore(items[keep], rest.firstChild);
    }
    if (!rest.children.length) return null;
    if (list.tagName === "OL") rest.setAttribute("start", String(start + keep));
    return rest;
  }

  // The part of a block taller than the stage that goes to the next
  // sub-slide (null where the block cannot be cut).
  function splitBlock(block, section) {
    if (/^(OL|UL)$/.test(block.tagName)) return splitList(block, section);
    return splitCode(block, section);
  }

  function fitSection(section, guard) {
    if (guard > 12 || fits(section)) return;
    const body = section.querySelector(".deck-body");
    const blocks = Array.prototype.slice.call(body.children);
    const moved = [];
    // Move trailing blocks out until the rest fits (keep at least one).
    while (blocks.length > 1 && !fits(section)) {
      const last = blocks.pop();
      moved.unshift(last);
      body.removeChild(last);
    }
    if (!fits(section) && blocks.length === 1) {
      const rest = splitBlock(blocks[0], section);
      if (rest) moved.unshift(rest);
    }
    if (!moved.length) return;
    const next = sibling(section);
    next.classList.add("deck-measure");
    const nextBody = next.querySelector(".deck-body");
    moved.forEach((el) => {
      nextBody.appendChild(el);
    });
    fitSection(next, guard + 1);
  }

  // Items to sort that are short go in two columns (present.css): long
  // ones would wrap to many lines in half the width.
  const SHORT_ITEM = 48; // characters
  function columns() {
    all(document, ".deck-body .ex-zone--pool .ex-items").forEach((list) => {
      let longest = 0;
      all(list, ".ex-item__text").forEach((t) => {
        longest = Math.max(longest, t.textContent.trim().length);
      });
      list.classList.toggle("deck-two-columns", longest <= SHORT_ITEM);
    });
  }

  function fitAll() {
    columns();
    const slides = document.querySelector(".reveal .slides");
    slides.classList.add("deck-measuring");
    slides.style.width = `${W}px`;
    all(document, ".reveal .slides > section > section").forEach((s) => {
      // Measure at the tallest state: folded answers that are steps open.
      const folded = all(s, "details.fragment");
      folded.forEach((d) => {
        d.open = true;
      });
      s.classList.add("deck-measure");
      s.parentNode.classList.add("deck-measure-stack");
      fitSection(s, 0);
      s.parentNode.classList.remove("deck-measure-stack");
      all(s.parentNode, "section").forEach((x) => {
        x.classList.remove("deck-measure");
      });
      all(s.parentNode, "details.fragment").forEach((d) => {
        d.open = PRINT;
      });
    });
    slides.style.width = "";
    slides.classList.remove("deck-measuring");
  }

  // --- print: one page per slide -------------------------------------------

  // The handout (make pdf) has one page per slide, every step shown: each
  // slide's sub-slides are put back together into one section, and a slide
  // taller than the page is scaled down until it fits (CSS zoom, so the
  // text reflows to the wider box it then has).
  function flattenForPrint() {
    all(document, ".reveal .slides > section").forEach((stack) => {
      const subs = all(stack, ":scope > section");
      const page = document.createElement("section");
      Array.prototype.forEach.call(stack.attributes, (a) => {
        page.setAttribute(a.name, a.value);
      });
      const meta = subs.length && subs[0].querySelector(".deck-meta");
      if (meta) page.appendChild(meta);
      const body = document.createElement("div");
      body.className = "md-typeset deck-body";
      subs.forEach((sub) => {
        const part = sub.querySelector(".deck-body");
        while (part?.firstChild) body.appendChild(part.firstChild);
      });
      page.appendChild(body);
      stack.parentNode.replaceChild(page, stack);
    });
  }

  // Largest zoom (to 1/100) of the slide's body at which it fits the page.
  function fitPage(section) {
    const body = section.querySelector(".deck-body");
    if (fits(section)) return;
    let lo = 20;
    let hi = 100;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      body.style.zoom = String(mid / 100);
      if (fits(section)) lo = mid;
      else hi = mid - 1;
    }
    body.style.zoom = String(lo / 100);
  }

  function fitPrint() {
    flattenForPrint();
    columns();
    const slides = document.querySelector(".reveal .slides");
    slides.classList.add("deck-measuring-page");
    slides.style.width = `${W}px`;
    all(slides, ":scope > section").forEach((s) => {
      all(s, "details.fragment").forEach((d) => {
        d.open = true;
      });
      s.classList.add("deck-measure");
      fitPage(s);
      s.classList.remove("deck-measure");
    });
    slides.style.width = "";
    slides.classList.remove("deck-measuring-page");
  }

  // --- reveal.js ----------------------------------------------------------

  function currentStack() {
    const slide = window.Reveal.getCurrentSlide();
    return slide?.closest("[data-slide]");
  }

  function toReading() {
    const stack = currentStack();
    if (stack) window.location.href = stack.getAttribute("data-reading");
  }

  // Exercises keep their own keys: Space and Enter press their buttons,
  // and typing in a field never moves the deck.
  function keyboardCondition(event) {
    const target = event.target;
    if (!target?.closest) return true;
    if (target.closest(".exercise, details, summary, a, button")) {
      const key = event.key;
      if (key === " " || key === "Enter") return false;
    }
    return true;
  }

  function openStep(event) {
    if (event.fragment && event.fragment.tagName === "DETAILS") {
      event.fragment.open = event.type === "fragmentshown";
    }
  }

  function start() {
    if (PRINT) fitPrint();
    else fitAll();
    window.Reveal.initialize({
      width: W,
      height: H,
      margin: 0.04,
      center: false,
      hash: true,
      // Always one slide at a time. reveal.js 5 turns a window narrower
      // than 435 px (every phone) into a scrolling page, which drops the
      // slide in the address: a reading page's Present link (#/15)
      // opened slide 1 there (hakimel/reveal.js#3815).
      scrollActivationWidth: null,
      // One-based in the address bar (#/15 is slide 15); the speaker
      // view's preview frames get zero-based hashes from the notes plugin,
      // and reading them one-based moved the deck back a slide.
      hashOneBasedIndex: !RECEIVER,
      respondToHashChanges: true,
      transition: "none",
      backgroundTransition: "none",
      controls: true,
      progress: true,
      showNotes: false,
      // Slides without a "Time:" note get one minute in the pacing.
      defaultTiming: 60,
      pdfSeparateFragments: false,
      pdfMaxPagesPerSlide: 1,
      keyboardCondition: keyboardCondition,
      plugins: window.RevealNotes ? [window.RevealNotes] : []
    });
    if (!RECEIVER) {
      // R: back to the reading page of the slide on screen (listed in
      // reveal's keyboard help, "?").
      window.Reveal.addKeyBinding(
        { keyCode: 82, key: "R", description: "Reading page of this slide" },
        toReading
      );
    }
    window.Reveal.on("fragmentshown", openStep);
    window.Reveal.on("fragmenthidden", openStep);
    window.Reveal.on("ready", () => {
      document.documentElement.setAttribute("data-deck-ready", "");
    });
  }

  // Measure once the fonts and images are in: an image not yet loaded
  // has no height, and the slide it is on would overflow once it loads.
  function whenFontsReady(fn) {
    const waits = all(document, ".reveal img").map((img) => {
      if (img.complete) return Promise.resolve();
      return new Promise((done) => {
        img.addEventListener("load", done);
        img.addEventListener("error", done);
      });
    });
    if (document.fonts?.load) {
      waits.push(
        document.fonts.load("28px 'Source Sans Pro'"),
        document.fonts.load("bold 28px 'Source Sans Pro'"),
        document.fonts.load("italic 28px 'Source Sans Pro'")
      );
    }
    Promise.all(waits).then(fn, fn);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", () => {
      whenFontsReady(start);
    });
  } else {
    whenFontsReady(start);
  }
})();
