// The fill-in judge: is a typed answer right, and if not, why not.
//
// exercises.js loads this file, and the vendored mathjs it evaluates
// with, on a fill-in's first focus or Check: a page's first visit
// downloads neither (the bytes a student waits for, `make bench`).
window.lessonJudge = (() => {
  // Fill-in answers: the same steps as lessonbuild/exercises/answers.py
  // (tests/exercise_fixtures/answer_cases.json holds the cases both must
  // pass). The student's text is cut into parts (axes of a shape, or one
  // number); mathjs evaluates
  // each part at the variant's symbol values and, when the answer uses
  // symbols, at the random points the build sampled. The build computed
  // every expected value (the engine's answers, the formula's and the
  // wrong forms' values with sympy): no author expression is parsed here.
  const SYMBOLS = {
    d_model: "d_model", dmodel: "d_model", d_k: "d_k", dk: "d_k", h: "h",
    num_heads: "h", t: "t", t_q: "t_q", tq: "t_q", t_k: "t_k", tk: "t_k",
    b: "b", bias: "bias",
  };
  const SUPERSCRIPT = "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079";
  const THOUSANDS = /(\d)[,_\u202f\u2009 ](?=\d{3}(?!\d))/;
  const NUMBER = /(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?/g;
  const NAME = /[a-z_][a-z0-9_]*/g;
  const ROUNDED = /^(\d+(?:\.\d+)?)\s*([kmg])$/;
  function common(text) {
    let s = String(text).trim().toLowerCase();
    s = s.replace(/\u2212/g, "-").replace(/\u00f7/g, "/");
    s = s.replace(/[\u00b7\u22c5\u2217]/g, "*").replace(/\*\*/g, "^");
    // Python's d_model // h: the lesson's sizes divide exactly.
    s = s.replace(/\/\//g, "/");
    return s.replace(/[\u2070\u00b9\u00b2\u00b3\u2074-\u2079]+/g, (m) => {
      let digits = "";
      for (let i = 0; i < m.length; i++) digits += SUPERSCRIPT.indexOf(m[i]);
      return `^${digits}`;
    });
  }
  function unwrap(s) {
    while (s.length >= 2 && "([".includes(s[0]) && ")]".includes(s[s.length - 1])) {
      let depth = 0;
      for (let i = 0; i < s.length; i++) {
        if ("([".includes(s[i])) depth++;
        if (")]".includes(s[i])) depth--;
        if (depth === 0 && i < s.length - 1) return s;
      }
      s = s.slice(1, -1).trim();
    }
    return s;
  }
  function cut(s, separators) {
    const parts = [];
    let depth = 0;
    let start = 0;
    for (let i = 0; i < s.length; i++) {
      if ("([".includes(s[i])) depth++;
      if (")]".includes(s[i])) depth--;
      if (depth === 0 && separators.includes(s[i])) {
        parts.push(s.slice(start, i));
        start = i + 1;
      }
    }
    parts.push(s.slice(start));
    return parts.map((p) => p.trim());
  }
  function splitAnswer(text, shape) {
    let s = common(text);
    const size = /^torch\s*\.\s*size\s*\(([\s\S]*)\)$/.exec(s);
    if (size) s = size[1].trim();
    let parts;
    if (shape) {
      parts = cut(unwrap(s), ",");
      if (parts.length > 1 && parts[parts.length - 1] === "") parts.pop();
      // "2 x 5", "2x5" and "2X5" (lower-cased) all read as 2 × 5.
      const times = /([0-9a-z_)])\s*x\s*(?=[0-9a-z_(])/g;
      if (parts.length === 1) parts = cut(parts[0].replace(times, "$1\u00d7"), "\u00d7");
      // "2 5 8", "b t d_model" (as NumPy prints a shape): an axis each.
      const atoms = /^(?:[0-9.]+|[a-z_][a-z0-9_]*)(?:\s+(?:[0-9.]+|[a-z_][a-z0-9_]*))+$/;
      if (parts.length === 1 && atoms.test(parts[0])) parts = parts[0].split(/\s+/);
    } else {
      s = s.replace(/\u00d7/g, "*");
      while (THOUSANDS.test(s)) s = s.replace(THOUSANDS, "$1");
      parts = [s];
    }
    parts = parts.map((p) => p.replace(/\u00d7/g, "*"));
    return parts.length && parts.every(Boolean) ? parts : null;
  }
  function usesSymbols(parts) {
    return parts.some((p) => !ROUNDED.test(p) &&
      (p.replace(NUMBER, " ").match(NAME) || []).length > 0);
  }
  // Why an answer was not read: the symbols of its scope, as written.
  const WRITTEN = { t: "T", t_q: "T_q", t_k: "T_k", b: "B" };
  // ``typed``: what was not read; a T where the queries and the keys have
  // lengths of their own is told which ("(B, h, T, T)" in a cross-attention
  // cell was only "could not be read": a fresh-eyes student).
  function unreadable(what, scope, typed = "") {
    const names = [...new Set(Object.values(SYMBOLS))].filter((k) => k in scope);
    const t = !("t" in scope) && "t_q" in scope && /\bt\b/.test(common(typed));
    return `could not be read as a number or ${what} in the lesson's ` +
      `symbols (${names.map((k) => WRITTEN[k] || k).join(", ")}).` +
      (t ? " T has two lengths here: T_q, the queries', and T_k, the keys'." : "");
  }
  function close(a, b) {
    return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
  }
  function evaluateSide(math, side, scope) {
    if (!side || !/^[0-9a-z_.+\-*/^() ]+$/.test(side)) return null;
    const names = side.replace(NUMBER, " ").match(NAME) || [];
    if (names.some((n) => !SYMBOLS[n])) return null;
    const vars = {};
    names.forEach((n) => {
      vars[n] = scope[SYMBOLS[n]];
    });
    if (Object.keys(vars).some((n) => vars[n] === undefined)) return null;
    try {
      const v = math.evaluate(side, vars);
      return typeof v === "number" && Number.isFinite(v) ? v : null;
    } catch (_e) {
      return null;
    }
  }
  // A part's value: a number, or {decimal, tolerance, binary} for "1M".
  function partValue(math, part, scope) {
    const r = ROUNDED.exec(part);
    if (r) {
      const power = "kmg".indexOf(r[2]) + 1;
      const digits = r[1].includes(".") ? r[1].split(".")[1].length : 0;
      const decimal = parseFloat(r[1]) * 1000 ** power;
      return {
        decimal: decimal,
        tolerance: Math.min(0.5 * 1000 ** power / 10 ** digits, 0.05 * decimal),
        binary: parseFloat(r[1]) * 1024 ** power,
      };
    }
    const sides = part.split("=").map((x) => evaluateSide(math, x.trim(), scope));
    if (!sides.length || sides.some((v) => v === null)) return null;
    return sides.every((v) => close(v, sides[0])) ? sides[0] : null;
  }
  function partMatches(value, target) {
    if (value === null || target === null) return false;
    if (typeof value === "object") {
      return Math.abs(value.decimal - target) <= value.tolerance ||
        close(value.binary, target);
    }
    return close(value, target);
  }
  // Same as the expected values: at the variant, and each part that uses
  // symbols at every random point too (a part in numbers answers for
  // these numbers only: "(2, 7, d_model)" is right for B = 2, T = 7).
  function sameAs(math, parts, scope, points, atVariant, atPoints) {
    const mine = parts.map((p) => partValue(math, p, scope));
    if (mine.length !== atVariant.length) return false;
    if (!mine.every((v, i) => partMatches(v, atVariant[i]))) return false;
    // At other values of the symbols, a chain's plain numbers
    // ("4 d_model^2 = 1,048,576") no longer apply: its symbolic sides do.
    const symbolic = parts.map((p) => {
      if (!usesSymbols([p])) return null;
      return p.split("=").filter((x) => usesSymbols([x.trim()])).join("=");
    });
    return points.every((point, k) => symbolic.every((p, i) =>
      p === null || partMatches(partValue(math, p, point), atPoints[k][i])));
  }
  // The verdict for one cell: {ok, wrong: index of the wrong form, axes},
  // or unread (no number or expression), or named (it uses the symbol the
  // cell asks for).
  function judgeCell(math, text, cell, v, spec) {
    const parts = splitAnswer(text, cell.shape);
    if (!parts) return { ok: false, wrong: -1, unread: true };
    if (cell.asks && parts.some((p) => (p.replace(NUMBER, " ").match(NAME) || [])
      .some((n) => SYMBOLS[n] === cell.asks))) {
      return { ok: false, wrong: -1, named: true };
    }
    const scope = spec.scopes[v];
    const points = spec.points[v];
    const wrong = (k) => sameAs(math, parts, scope, points,
      cell.wrong[k].variants[v], cell.wrong[k].points[v]);
    if (sameAs(math, parts, scope, points, cell.answer[v], cell.points[v])) {
      // "9k" rounds 9,408 (with biases) and 9,216 (without) alike: a
      // rounding that fits a wrong form too cannot tell them apart.
      const rounded = parts.some((p) => ROUNDED.test(p));
      if (rounded && cell.wrong.some((_, k) => wrong(k))) return { ok: false, wrong: -1, rounded: true };
      return { ok: true };
    }
    const k = cell.wrong.findIndex((_, i) => wrong(i));
    if (k >= 0) return { ok: false, wrong: k };
    const unread = parts.some((p) => partValue(math, p, scope) === null);
    // A part that puts one of these numbers into a formula ("96/h") is
    // judged as a formula, for every size: it says so, if it was right here.
    const mixed = !unread && parts.some((p, i) => usesSymbols([p]) &&
      /\d/.test(p.replace(/_\w+|\^\s*\d+|\*\*\s*\d+/g, "")) &&
      partMatches(partValue(math, p, scope), cell.answer[v][i]));
    return { ok: false, wrong: -1, unread: unread, mixed: mixed, axes: parts.length };
  }

  return {
    judge: (text, cell, v, spec) => judgeCell(window.math, text, cell, v, spec),
    split: splitAnswer,
    usesSymbols: usesSymbols,
    unreadable: unreadable,
  };
})();
