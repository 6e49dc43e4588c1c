"""One definition of "passes axe" for every browser test."""

from __future__ import annotations

BLOCKING = ("serious", "critical")


def violations(
    page, context: str | None = None, impacts=None, rules=None
) -> list[str]:
    """axe-core's findings on ``page`` (only ``impacts`` and ``rules``,
    when given), one readable line per offending element."""
    from axe_playwright_python.base import AXE_SCRIPT

    # Only violations are read: axe then stops gathering every passing
    # node (a quarter of its time per page here).
    options = {"resultTypes": ["violations"]}
    if rules:
        options["runOnly"] = list(rules)
    if page.evaluate("() => typeof axe") == "undefined":  # once a page
        page.evaluate(AXE_SCRIPT)
    response = page.evaluate(
        "([context, options]) => axe.run(context ?? document, options)",
        [context, options],
    )
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {node['target']}: "
        + node["html"][:80]
        for v in response["violations"]
        if impacts is None or v["impact"] in impacts
        for node in v["nodes"]
    ]


def serious_violations(page, context: str | None = None) -> list[str]:
    """axe-core's serious and critical findings on ``page``, readable."""
    return violations(page, context, impacts=BLOCKING)
