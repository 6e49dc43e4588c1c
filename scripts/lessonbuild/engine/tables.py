"""Published tables: collected from runs, checked against calls, rendered.

``mha_ref.publish_table(name, ...)`` in a snippet publishes the table
``<snippet stem>.<name>``, which ``{{ table(id) }}`` places (figures and
values likewise). Both tables and figures have a size limit.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..problems import Problem, did_you_mean
from .judge import table_records
from .prose import VALUE_CALL
from .svgsafe import UnsafeSvg, sanitise

#: Settings of the published sizes: a table's cells, a figure's KiB.
TABLE_CELLS_ENV = "SNIPPET_MAX_TABLE_CELLS"
FIGURE_KB_ENV = "SNIPPET_MAX_FIGURE_KB"


def render_table(
    table: dict, hide: str | None = None, table_id: str = "?"
) -> str:
    """Markdown for ``{"columns": [...], "rows": [[...]]}``, the cells of
    column ``hide`` blank (a "fill in" slide; ValueError if no column)."""
    columns = list(table["columns"])
    if hide is not None and hide not in columns:
        raise ValueError(unknown_column_message(table_id, hide, columns))
    hidden = columns.index(hide) if hide is not None else -1
    lines = [
        "| " + " | ".join(_cell(c) for c in columns) + " |",
        "|" + "|".join("---" for _ in columns) + "|",
    ]
    for row in table["rows"]:
        cells = ["" if i == hidden else _cell(c) for i, c in enumerate(row)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


#: Markdown's markup characters get a backslash; HTML's and math's ($)
#: are character references.
_MARKDOWN = re.compile(r"[\\`*_{}\[\]#+\-.!|]")  # not ( ): \( is math
_HTML = {"<": "&lt;", ">": "&gt;", "&": "&amp;", "$": "&#36;"}
_SPAN = re.compile(r"`(?P<code>[^`\n]+)`|(?P<math>\\\(.+?\\\))|[^`\\]+|[\s\S]")
#: In a formula: what would end the cell or start HTML, as TeX.
_TEX = {"|": r"\vert{}", "<": r"\lt{}", ">": r"\gt{}", "&": r"\&"}


def _plain(text: str) -> str:
    text = _MARKDOWN.sub(lambda m: "\\" + m[0], text)
    return "".join(_HTML.get(c, c) for c in text).replace("\n", "<br>")


def _cell(text: str) -> str:
    """A cell as plain text (issue 31), but `code` and ``\\( \\)``
    formulas (KaTeX refuses links and HTML)."""

    def span(m: re.Match) -> str:
        if m["code"] is not None:
            return f"<code>{_plain(m['code'])}</code>"
        if m["math"] is not None:
            return "".join(_TEX.get(c, c) for c in m["math"])
        return _plain(m[0])

    return _SPAN.sub(span, text)


def _limit(name: str, default: int) -> int:
    try:
        return max(1, int(os.environ.get(name, default)))
    except ValueError:
        return default


def collect_tables(rel: str, raw: str, where, result) -> None:
    """Add what one run published to ``result``; a record it cannot take
    is a problem at ``where``."""
    for record in table_records(raw):
        fields = record if isinstance(record, dict) else {}
        kind = fields.get("kind")
        kind = kind if kind in ("figure", "value") else "table"
        name, published = fields.get("name"), getattr(result, kind + "s")
        item_id = f"{Path(rel).stem}.{name}"
        item, message = _READ[kind](rel, record)
        if not message and item_id in published:
            message = f"{rel} published {kind} {name!r} twice"
            if kind == "table":
                message += "; table names must be unique per snippet"
        if message:
            result.problems.append(Problem(*where, message))
            result.refused.add(item_id)  # its calls are no second problem
        else:
            published[item_id] = item


def _read_table(rel: str, record) -> tuple[dict | None, str]:
    if not (
        isinstance(record, dict)
        and isinstance(record.get("name"), str)
        and isinstance(record.get("columns"), list)
        and isinstance(record.get("rows"), list)
    ):
        return None, (
            f"{rel} wrote a table record the engine cannot read: "
            f"{str(record)[:80]!r}"
        )
    cells = len(record["columns"]) * (len(record["rows"]) + 1)
    most = _limit(TABLE_CELLS_ENV, 2000)
    if cells > most:
        return None, (
            f"{rel} published table {record['name']!r} with {cells} cells; "
            f"a page table holds at most {most} (publish fewer rows, or set "
            f"{TABLE_CELLS_ENV})"
        )
    columns = [str(c) for c in record["columns"]]
    rows = [[str(c) for c in row] for row in record["rows"]]
    return {"columns": columns, "rows": rows}, ""


def _read_figure(rel: str, record: dict) -> tuple[dict | None, str]:
    """A published figure, and its layout for a phone if it has one."""
    name, alt = record.get("name"), record.get("alt")
    unreadable = f"{rel} wrote a figure record the engine cannot read"
    if not isinstance(name, str):
        return None, unreadable
    if not isinstance(alt, str) or not alt.strip():
        return None, (
            f"{rel}: figure {name!r} has no alt text; pass "
            "publish_figure(name, fig, alt='what the figure shows')"
        )
    figure, most = {"alt": alt.strip()}, _limit(FIGURE_KB_ENV, 2048)
    for key in ["svg", "narrow"] if "narrow" in record else ["svg"]:
        svg = record.get(key)
        what = f"figure {name!r}" + (" (narrow)" if key == "narrow" else "")
        if not isinstance(svg, str):
            return None, unreadable
        if not svg.lstrip().startswith(("<?xml", "<svg")):
            return None, f"{rel}: {what} is not SVG"
        if len(svg.encode()) > most << 10:
            return None, (
                f"{rel}: {what} is {len(svg.encode()) >> 10} KiB; a "
                f"figure is at most {most} KiB (fewer points, a raster for "
                f"dense data, or set {FIGURE_KB_ENV})"
            )
        try:
            figure[key] = sanitise(svg)[0]
        except UnsafeSvg as exc:
            return None, f"{rel}: {what} cannot be published: {exc}"
    return figure, ""


def _read_value(rel: str, record: dict) -> tuple[str | None, str]:
    text = record.get("text")
    if not isinstance(record.get("name"), str) or not isinstance(text, str):
        return None, f"{rel} wrote a value record the engine cannot read"
    return text, ""


_READ = {"table": _read_table, "figure": _read_figure, "value": _read_value}


def check_calls(slides, result) -> None:
    """Every literal ``figure(id)``, ``table(id, hide=col)`` and
    ``{{ value("id") }}`` call names what a snippet published; the id of
    a failed snippet or a refused record is no second problem."""
    failed = {Path(rel).stem for rel in result.failed}

    def unknown(kind: str, item_id: str, how: str = "") -> str:
        published = getattr(result, kind + "s")
        if (
            item_id in published
            or item_id in result.refused
            or item_id.split(".")[0] in failed
        ):
            return ""
        return unknown_message(kind, item_id, sorted(published), how)

    how = " (mha_ref.tables.publish_value)"
    for slide in slides:
        found = [
            (c.line, unknown("figure", c.figure_id)) for c in slide.figures
        ]
        for call in slide.tables:
            table = result.tables.get(call.table_id)
            if table and call.hide not in [None, *table["columns"]]:
                message = unknown_column_message(
                    call.table_id, call.hide, table["columns"]
                )
            else:
                message = unknown("table", call.table_id)
            found.append((call.line, message))
        found += [
            (i, unknown("value", match.group("id"), how))
            for i, line in enumerate(slide.lines, 1)
            for match in VALUE_CALL.finditer(line)
        ]
        result.problems += [
            Problem(slide.path, line, message, kind="table")
            for line, message in found
            if message
        ]


def unknown_message(kind: str, item_id: str, known, how: str = "") -> str:
    """``table('x.y'): no snippet published this table; ...``, for a
    table, figure or value."""
    return (
        f"{kind}({item_id!r}): no snippet published this {kind}{how}"
        f"{did_you_mean(item_id, known)}; "
        f"known {kind}s: {', '.join(known) or 'none'}"
    )


def unknown_column_message(table_id: str, hide: str, columns) -> str:
    return (
        f"table({table_id!r}, hide={hide!r}): no such column; columns: "
        + ", ".join(columns)
    )


#: ``label: 12``, ``label=1,048,576``, ``label = 0.5`` in printed output.
_PAIR = re.compile(
    r"(?P<label>[A-Za-z_][A-Za-z0-9_]*)\s*[:=]\s*"
    r"(?P<number>[+-]?\d[\d,]*(?:\.\d+)?)(?![\d.])"
)


def _number(text: str) -> float | None:
    try:
        return float(text.strip().replace(",", ""))
    except ValueError:
        return None


def _label(column: str) -> str:
    """A column's label: one word, maybe with a note in parentheses
    (``params (d=512)`` -> params); "" for a longer header."""
    match = re.fullmatch(
        r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*", column
    )
    return match.group(1).lower() if match else ""


def table_output_conflicts(rel: str, stdout: str, tables: dict) -> list:
    """Where a table contradicts the same run's printed output: a line
    naming a row's first cell (``h= 8``) must agree with every other cell
    it names (``params=1,048,576``). (table id, row, column, cell, line)s."""
    pairs = []
    for line in stdout.splitlines():
        found = {
            m.group("label").lower(): _number(m.group("number"))
            for m in _PAIR.finditer(line)
        }
        if found:
            pairs.append((line.strip(), found))
    conflicts = []
    for table_id, table in sorted(tables.items()):
        labels = [_label(c) for c in table["columns"]]
        if not labels or not labels[0]:
            continue
        for row in table["rows"]:
            key = _number(row[0])
            for line, found in pairs:
                if key is None or found.get(labels[0]) != key:
                    continue
                for label, column, cell in zip(
                    labels[1:], table["columns"][1:], row[1:], strict=True
                ):
                    printed, value = found.get(label), _number(cell)
                    if None not in (printed, value) and printed != value:
                        conflicts.append((table_id, row, column, cell, line))
    return conflicts
