"""Render a published table as a Markdown table."""

from __future__ import annotations


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def render_table(table: dict, hide: str | None = None) -> str:
    """Markdown for ``{"columns": [...], "rows": [[...]]}``.

    ``hide`` names a column whose cells are left blank (a "fill in"
    slide); a ``ValueError`` names the columns when it is not one.
    """
    columns = list(table["columns"])
    if hide is not None and hide not in columns:
        raise ValueError(f"no column {hide!r}; columns: {', '.join(columns)}")
    hidden = columns.index(hide) if hide is not None else -1
    lines = [
        "| " + " | ".join(_cell(c) for c in columns) + " |",
        "|" + "|".join("---" for _ in columns) + "|",
    ]
    for row in table["rows"]:
        cells = ["" if i == hidden else _cell(c) for i, c in enumerate(row)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
