"""One definition of "passes axe" for every browser test."""

from __future__ import annotations

BLOCKING = ("serious", "critical")
CONTRAST = "color-contrast"

#: One element per way text is drawn, for axe's colour-contrast rule.
#: Its verdict on an element depends only on the text's colour, size and
#: weight and on what lies behind it: the background colours and images
#: of the element and its ancestors, up to the first opaque one, and
#: their opacity. Elements alike in all of that get the same verdict, so
#: one of each is checked (notebooks/lesson-81.html: 12,350 elements,
#: most of them highlighted code of a few token kinds; the rule took
#: 22 s per palette on the whole page). Positioned ancestors are part of
#: the likeness too: a sticky header sits over other content than its
#: siblings do. Form controls are always checked.
REPRESENTATIVES = """
(scope) => {
  const root = scope ? document.querySelector(scope) : document.body;
  const seen = new Set();
  const picked = [];
  const look = (e) => {
    const s = getComputedStyle(e);
    return [s.color, s.fontSize, s.fontWeight, s.textShadow, s.opacity,
            s.visibility].join(" ");
  };
  const behind = (e) => {
    const parts = [];
    for (let a = e; a; a = a.parentElement) {
      const s = getComputedStyle(a);
      parts.push([s.backgroundColor, s.backgroundImage, s.opacity,
                  s.position, s.mixBlendMode, s.filter].join(" "));
      const rgba = s.backgroundColor.match(/[\\d.]+/g) || [];
      if (rgba.length === 3 || (rgba.length === 4 && rgba[3] === "1")) break;
    }
    return parts.join("|");
  };
  for (const e of root.querySelectorAll("*")) {
    const control = e.matches("input, select, textarea, button");
    const text = [...e.childNodes].some(
      (n) => n.nodeType === Node.TEXT_NODE && n.data.trim());
    if (!control && !text) continue;
    const key = look(e) + "/" + behind(e);
    if (control || !seen.has(key)) {
      seen.add(key);
      picked.push(e);
    }
  }
  return picked;
}
"""

RUN = (
    "async ([context, options, sample]) => {\n"
    f"  const picked = sample ? ({REPRESENTATIVES})(context) : null;\n"
    "  if (picked && !picked.length) return [];\n"
    "  const scope = picked ? {include: picked} : (context ?? document);\n"
    "  return (await axe.run(scope, options)).violations;\n"
    "}"
)


def violations(
    page, context: str | None = None, impacts=None, rules=None
) -> list[str]:
    """axe-core's findings on ``page`` (only ``impacts`` and ``rules``,
    when given), one readable line per offending element.

    Colour contrast is judged on one element per way text is drawn
    (:data:`REPRESENTATIVES`); every other rule on the whole context.
    """
    from axe_playwright_python.base import AXE_SCRIPT

    if page.evaluate("() => typeof axe") == "undefined":  # once a page
        page.evaluate(AXE_SCRIPT)
    wanted = list(rules) if rules else None
    runs = []  # (on representatives?, only these rules | None: all others)
    if wanted is None or CONTRAST in wanted:
        runs.append((True, [CONTRAST]))
    others = [r for r in wanted or [] if r != CONTRAST]
    if wanted is None or others:
        runs.append((False, others or None))
    found = []
    for sample, only in runs:
        # Only violations are read: axe then stops gathering every
        # passing node (a quarter of its time per page here).
        options = {"resultTypes": ["violations"]}
        if only:
            options["runOnly"] = only
        else:
            options["rules"] = {CONTRAST: {"enabled": False}}
        found += page.evaluate(RUN, [context, options, sample])
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {node['target']}: "
        + node["html"][:80]
        for v in found
        if impacts is None or v["impact"] in impacts
        for node in v["nodes"]
    ]


def serious_violations(page, context: str | None = None) -> list[str]:
    """axe-core's serious and critical findings on ``page``, readable."""
    return violations(page, context, impacts=BLOCKING)
