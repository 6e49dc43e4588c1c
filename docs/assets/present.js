// The deck (present.html): fit every slide to the stage, then start reveal.js.
//
// scripts/lessonbuild/present.py wrote one <section> stack per slide from
// the rendered reading pages. What it cannot know is how tall the content
// is in the real fonts, so here, before reveal.js starts, every sub-slide
// taller than the 1280x720 stage is split: its trailing blocks move to a
// new sub-slide below it (a code block taller than the stage is cut by
// lines). The speaker view's preview frames and the print view run this
// same code on the same HTML, so their slide indices agree.
(function () {
  "use strict";

  var CONFIG = JSON.parse(document.getElementById("deck-config").textContent);
  var W = CONFIG.width;
  var H = CONFIG.height;
  var PRINT = /print-pdf/.test(window.location.search);
  // The speaker view's preview frames (reveal's notes plugin adds it).
  var RECEIVER = /[?&]receiver/.test(window.location.search);

  function all(root, selector) {
    return Array.prototype.slice.call(root.querySelectorAll(selector));
  }

  // --- fitting -----------------------------------------------------------

  // Bottom of the content of a sub-slide laid out at stage width, in px.
  function contentHeight(section) {
    var box = section.getBoundingClientRect();
    var bottom = box.top;
    // Every element, not only the blocks: a widget's parts can spill out
    // of its box. KaTeX's stretchy SVGs are clipped by KaTeX itself.
    all(section, ".deck-body *, .deck-meta, .deck-cont").forEach(function (el) {
      if (el.closest(".katex") && !el.classList.contains("katex")) return;
      var r = el.getBoundingClientRect();
      if (!r.width && !r.height) return;
      var style = window.getComputedStyle(el);
      bottom = Math.max(bottom, r.bottom + parseFloat(style.marginBottom || 0));
    });
    return bottom - box.top + parseFloat(window.getComputedStyle(section).paddingBottom);
  }

  function fits(section) {
    return contentHeight(section) <= H;
  }

  // A sub-slide like `section` (meta line, "continued" title, notes), empty.
  function sibling(section) {
    var next = document.createElement("section");
    var meta = section.querySelector(".deck-meta");
    if (meta) next.appendChild(meta.cloneNode(true));
    var cont = section.querySelector(".deck-cont");
    if (!cont) {
      cont = document.createElement("p");
      cont.className = "deck-cont";
      cont.setAttribute("aria-hidden", "true");
      cont.textContent = section.parentNode.getAttribute("data-title");
    }
    next.appendChild(cont.cloneNode(true));
    var body = document.createElement("div");
    body.className = "md-typeset deck-body";
    next.appendChild(body);
    var notes = section.querySelector("aside.notes");
    if (notes) next.appendChild(notes.cloneNode(true));
    // The slide's time is shared by its sub-slides.
    var t = parseInt(section.getAttribute("data-timing") || "", 10);
    if (t > 0) {
      section.setAttribute("data-timing", String(Math.ceil(t / 2)));
      next.setAttribute("data-timing", String(Math.floor(t / 2)));
    }
    section.parentNode.insertBefore(next, section.nextSibling);
    return next;
  }

  // Split a code block in two at the line that crosses the stage bottom.
  function splitCode(block, section) {
    var code = block.querySelector("pre code");
    if (!code) return null;
    var lines = code.innerHTML.split("\n");
    if (lines[lines.length - 1] === "") lines.pop();
    var lo = 1;
    var hi = lines.length - 1;
    var keep = 0;
    // Largest number of lines that still fits.
    while (lo <= hi) {
      var mid = (lo + hi) >> 1;
      code.innerHTML = lines.slice(0, mid).join("\n") + "\n";
      if (fits(section)) {
        keep = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    if (keep === 0) {
      code.innerHTML = lines.join("\n") + "\n";
      return null;
    }
    code.innerHTML = lines.slice(0, keep).join("\n") + "\n";
    var rest = block.cloneNode(true);
    rest.querySelector("pre code").innerHTML = lines.slice(keep).join("\n") + "\n";
    rest.classList.add("deck-continued");
    return rest;
  }

  function fitSection(section, guard) {
    if (guard > 12 || fits(section)) return;
    var body = section.querySelector(".deck-body");
    var blocks = Array.prototype.slice.call(body.children);
    var moved = [];
    // Move trailing blocks out until the rest fits (keep at least one).
    while (blocks.length > 1 && !fits(section)) {
      var last = blocks.pop();
      moved.unshift(last);
      body.removeChild(last);
    }
    if (!fits(section) && blocks.length === 1) {
      var rest = splitCode(blocks[0], section);
      if (rest) moved.unshift(rest);
    }
    if (!moved.length) return;
    var next = sibling(section);
    next.classList.add("deck-measure");
    var nextBody = next.querySelector(".deck-body");
    moved.forEach(function (el) {
      nextBody.appendChild(el);
    });
    fitSection(next, guard + 1);
  }

  function fitAll() {
    var slides = document.querySelector(".reveal .slides");
    slides.classList.add("deck-measuring");
    slides.style.width = W + "px";
    all(document, ".reveal .slides > section > section").forEach(function (s) {
      // Measure at the tallest state: folded answers that are steps open.
      var folded = all(s, "details.fragment");
      folded.forEach(function (d) {
        d.open = true;
      });
      s.classList.add("deck-measure");
      fitSection(s, 0);
      all(s.parentNode, "section").forEach(function (x) {
        x.classList.remove("deck-measure");
      });
      all(s.parentNode, "details.fragment").forEach(function (d) {
        d.open = PRINT;
      });
    });
    slides.style.width = "";
    slides.classList.remove("deck-measuring");
  }

  // --- reveal.js ----------------------------------------------------------

  function currentStack() {
    var slide = window.Reveal.getCurrentSlide();
    return slide && slide.closest("[data-slide]");
  }

  function toReading() {
    var stack = currentStack();
    if (stack) window.location.href = stack.getAttribute("data-reading");
  }

  // Exercises keep their own keys: Space and Enter press their buttons,
  // and typing in a field never moves the deck.
  function keyboardCondition(event) {
    var target = event.target;
    if (!target || !target.closest) return true;
    if (target.closest("section.exercise, details, summary, a, button")) {
      var key = event.key;
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
    fitAll();
    var keys = {};
    if (!RECEIVER) {
      // R: back to the reading page of the slide on screen.
      keys[82] = { key: "R", description: "Reading page", callback: toReading };
    }
    window.Reveal.initialize({
      width: W,
      height: H,
      margin: 0.04,
      center: false,
      hash: true,
      hashOneBasedIndex: true,
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
      keyboard: keys,
      keyboardCondition: keyboardCondition,
      plugins: window.RevealNotes ? [window.RevealNotes] : []
    });
    window.Reveal.on("fragmentshown", openStep);
    window.Reveal.on("fragmenthidden", openStep);
    window.Reveal.on("ready", function () {
      document.documentElement.setAttribute("data-deck-ready", "");
    });
  }

  function whenFontsReady(fn) {
    if (!document.fonts || !document.fonts.load) return fn();
    Promise.all([
      document.fonts.load("28px 'Source Sans Pro'"),
      document.fonts.load("bold 28px 'Source Sans Pro'"),
      document.fonts.load("italic 28px 'Source Sans Pro'")
    ]).then(fn, fn);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () {
      whenFontsReady(start);
    });
  } else {
    whenFontsReady(start);
  }
})();
