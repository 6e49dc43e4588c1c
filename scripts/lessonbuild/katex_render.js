// Typeset TeX with the site's vendored KaTeX, for mathrender.py.
//
// One process serves a whole build: it reads JSON lines on stdin,
//   {"id": 1, "tex": "4\\,d_k", "display": false}
// and answers each with one JSON line on stdout, in order,
//   {"id": 1, "html": "<span class=\"katex\">...</span>"}
// or, when KaTeX cannot parse the TeX,
//   {"id": 1, "error": "KaTeX parse error: ...", "position": 7}
// Usage: node katex_render.js PATH/TO/katex.min.js

const readline = require("node:readline");

const katexPath = process.argv[2];
if (!katexPath) {
  process.stderr.write("usage: node katex_render.js PATH/TO/katex.min.js\n");
  process.exit(2);
}
const katex = require(katexPath);

function render(request) {
  // KaTeX with trust false shows a refused command (\href{javascript:…},
  // \includegraphics, \htmlId...) as red text and goes on: here it is an
  // error, so the build fails at the formula instead of publishing it.
  const refused = [];
  try {
    const html = katex.renderToString(request.tex, {
        displayMode: Boolean(request.display),
        // A TeX error must fail the build, never show red TeX on a slide.
        throwOnError: true,
        // HTML for the eye, MathML for screen readers and search.
        output: "htmlAndMathml",
        // \href, \includegraphics and friends: not in a lesson's formulas.
        trust: (context) => {
          refused.push(context.command);
          return false;
        },
        strict: "error",
      });
    if (refused.length) {
      return {
        id: request.id,
        error: `KaTeX: ${refused.join(", ")} is not allowed in a formula (trust: false; links and HTML go in the Markdown)`,
        position: null,
      };
    }
    return { id: request.id, html };
  } catch (e) {
    return {
      id: request.id,
      error: String(e.message || e),
      position: typeof e.position === "number" ? e.position : null,
    };
  }
}

const lines = readline.createInterface({ input: process.stdin });
lines.on("line", (line) => {
  if (!line.trim()) return;
  process.stdout.write(`${JSON.stringify(render(JSON.parse(line)))}\n`);
});
