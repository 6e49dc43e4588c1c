// Render the lesson's math with the vendored KaTeX (no CDN). Material's
// instant navigation swaps pages without reloading, so render on every
// page change through its document$ observable.
(function () {
  function render() {
    if (typeof renderMathInElement !== "function") return;
    document.querySelectorAll(".arithmatex").forEach(function (el) {
      renderMathInElement(el, {
        delimiters: [
          { left: "\\(", right: "\\)", display: false },
          { left: "\\[", right: "\\]", display: true },
        ],
        throwOnError: false,
      });
    });
  }
  if (typeof document$ !== "undefined") {
    document$.subscribe(render);
  } else {
    document.addEventListener("DOMContentLoaded", render);
  }
})();
