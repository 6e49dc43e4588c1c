// Bundle the live-code editor (CodeMirror 6, Python mode) into one ES
// module, docs/assets/vendor/codemirror/codemirror.js: `make codemirror`.
//
// The bundle is committed, like the other vendored libraries: `make serve`
// then needs neither node_modules nor the network, and the exact code a
// page loads is reviewed in git. Its inputs are pinned in package.json and
// package-lock.json; esbuild (pinned too) is deterministic, so the same
// lockfile rebuilds the same bytes (tests/test_live_bundle.py checks that
// the banner names the locked versions). Only pages served by
// `mkdocs serve` load it (scripts/lessonbuild/live.py injects live.js,
// which imports it when a block is first edited).
import { readFileSync } from "node:fs";
import { build } from "esbuild";

const OUT = "docs/assets/vendor/codemirror/codemirror.js";
// What live.js uses, and nothing else: a small editor, not basicSetup.
const ENTRY = `
export { EditorView, keymap, lineNumbers, drawSelection,
  highlightActiveLine } from "@codemirror/view";
export { EditorState } from "@codemirror/state";
export { defaultKeymap, history, historyKeymap, indentWithTab }
  from "@codemirror/commands";
export { HighlightStyle, syntaxHighlighting, indentOnInput,
  bracketMatching, indentUnit } from "@codemirror/language";
export { tags } from "@lezer/highlight";
export { python } from "@codemirror/lang-python";
`;

const lock = JSON.parse(readFileSync("package-lock.json", "utf8"));
const bundled = Object.entries(lock.packages)
  .filter(([path]) => /node_modules\/(@codemirror|@lezer)\//.test(path) || /node_modules\/(style-mod|w3c-keyname|crelt)$/.test(path))
  .map(([path, info]) => `${path.replace(/^.*node_modules\//, "")}@${info.version}`)
  .sort();

await build({
  stdin: { contents: ENTRY, resolveDir: process.cwd(), loader: "js" },
  bundle: true,
  format: "esm",
  minify: true,
  target: "es2020",
  legalComments: "eof",
  outfile: OUT,
  banner: {
    js: `// CodeMirror 6 for the lesson's live code, built by scripts/build_codemirror.mjs\n// (make codemirror) with esbuild from package-lock.json; MIT licensed.\n// Bundled: ${bundled.join(" ")}`,
  },
  logLevel: "warning",
});
console.log(`${OUT}: ${bundled.length} packages`);
