"""Check one exercise body against its kind's schema.

Every problem is collected (not just the first), each with the file line
it points at and what was expected, so an author fixes a slide in one go.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from typing import Any

from . import answers
from .model import (
    Bucket,
    Buckets,
    Check,
    Discussion,
    Eliminate,
    Exercise,
    FillIn,
    Option,
    Order,
    Predict,
    Problem,
    Table,
)
from .parse import Mapping, Sequence, YamlProblem, load_yaml

__all__ = [
    "TablesUnavailable",
    "build_buckets",
    "build_check",
    "build_discussion",
    "build_eliminate",
    "build_fill_in",
    "build_order",
    "build_predict",
    "normalize_tables",
    "validate",
]

_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_NOTE = {"check": "tempts", "eliminate": "rules_out"}


class TablesUnavailable(Exception):
    """The table source (the snippet engine) could not be loaded."""


TableSource = Callable[[], Any] | dict | None


def normalize_tables(raw: Any) -> dict[str, Table]:
    """{id: {"columns": [...], "rows": [[...]]}} -> {id: Table}."""
    tables: dict[str, Table] = {}
    for table_id, value in dict(raw).items():
        if isinstance(value, Table):
            tables[str(table_id)] = value
            continue
        if isinstance(value, dict):
            columns, rows = value.get("columns"), value.get("rows")
        else:
            columns = getattr(value, "columns", None)
            rows = getattr(value, "rows", None)
        if columns is None or rows is None:
            continue
        tables[str(table_id)] = Table(
            [str(c) for c in columns],
            [[str(cell) for cell in row] for row in rows],
        )
    return tables


class _Checker:
    def __init__(self, path: str, first_line: int):
        self.path = path
        # YAML line 0 is the line after the opening fence.
        self.base = first_line + 1
        self.problems: list[Problem] = []

    def add(self, line0: int, message: str) -> None:
        self.problems.append(Problem(self.path, self.base + line0, message))

    def text(self, value: Any, line0: int, what: str) -> str | None:
        """A Markdown text value, or None after reporting a problem."""
        if isinstance(value, bool):
            word = "true" if value else "false"
            self.add(
                line0,
                f"{what} is the YAML boolean {word}; expected Markdown text"
                f' (quote it: "{value}")',
            )
            return None
        if value is None or (isinstance(value, str) and not value.strip()):
            self.add(line0, f"{what} is empty; expected Markdown text")
            return None
        if not isinstance(value, str):
            got = "a list" if isinstance(value, list) else "a mapping"
            self.add(line0, f"{what} is {got}; expected Markdown text")
            return None
        return value.strip()

    def keys(
        self,
        mapping: Mapping,
        required: tuple[str, ...],
        optional: tuple[str, ...],
        what: str,
    ) -> bool:
        """Report missing and unknown keys; True when all are fine."""
        ok = True
        allowed = required + optional
        expected = ", ".join(required)
        if optional:
            expected += f" (optional: {', '.join(optional)})"
        for key in mapping:
            if key not in allowed:
                ok = False
                hint = _did_you_mean(str(key), allowed)
                self.add(
                    mapping.line_of(key),
                    f"{what} has unknown key '{key}'{hint}; "
                    f"expected keys: {expected}",
                )
        for key in required:
            if key not in mapping:
                ok = False
                self.add(
                    mapping.line,
                    f"{what} is missing '{key}'; expected keys: {expected}",
                )
        return ok

    def sequence(
        self, mapping: Mapping, key: str, what: str, minimum: int
    ) -> Sequence | None:
        value = mapping.get(key)
        line0 = mapping.line_of(key)
        if not isinstance(value, list):
            self.add(
                line0,
                f"'{key}' of {what} is not a list; expected a YAML list "
                f"('- ' items) of at least {minimum}",
            )
            return None
        if len(value) < minimum:
            self.add(
                line0,
                f"'{key}' of {what} has {len(value)} item(s); expected at "
                f"least {minimum}",
            )
            return None
        return value  # type: ignore[return-value]


def _did_you_mean(word: str, choices) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def validate(
    body: str,
    *,
    path: str,
    first_line: int,
    tables: TableSource = None,
    kinds: dict,
) -> tuple[Exercise | None, list[Problem]]:
    """Validate the YAML `body` of a fence that opens at `first_line`.

    `tables` is a mapping of table id -> {"columns", "rows"}, or a
    zero-argument callable returning one (called only for a fill-in, and
    allowed to raise TablesUnavailable). Returns the exercise (None when
    anything is wrong) and the list of problems.
    """
    c = _Checker(path, first_line)
    try:
        data, duplicates = load_yaml(body)
    except YamlProblem as exc:
        if "mapping values are not allowed here" in exc.message:
            expected = (
                "a ': ' inside an unquoted value starts a new key; quote "
                "the value ('…') or write it as a block scalar (|)"
            )
        else:
            expected = (
                "expected a YAML mapping such as 'kind: check' followed "
                "by that kind's keys"
            )
        c.add(exc.line, f"{exc.message}; {expected}")
        return None, c.problems
    for line0, key in duplicates:
        c.add(line0, f"key '{key}' appears twice; expected each key once")
    if not isinstance(data, Mapping):
        c.add(
            0,
            "the exercise body is not a YAML mapping; expected 'kind: …' "
            "followed by that kind's keys",
        )
        return None, c.problems
    names = ", ".join(kinds)  # kinds.KINDS
    kind = data.get("kind")
    if kind is None:
        c.add(data.line, f"exercise has no 'kind'; expected one of: {names}")
        return None, c.problems
    if kind not in kinds:
        hint = _did_you_mean(str(kind), kinds)
        c.add(
            data.line_of("kind"),
            f"unknown exercise kind '{kind}'{hint}; expected one of: {names}",
        )
        return None, c.problems
    entry = kinds[kind]
    c.keys(data, ("kind",) + entry.required, entry.keys, kind)
    common: dict[str, Any] = {"line": first_line}
    if "title" in data:
        common["title"] = c.text(data["title"], data.line_of("title"), "title")
    if "id" in data:
        value = data["id"]
        if isinstance(value, str) and _ID.match(value):
            common["id"] = value
        else:
            c.add(
                data.line_of("id"),
                f"id {value!r} is not a slug; expected lower-case letters, "
                "digits and '-' (it names the answer saved in the browser)",
            )
    exercise = entry.build(c, data, common, tables)
    if c.problems:
        return None, c.problems
    return exercise, []


def _texts(c: _Checker, data: Mapping, keys: tuple[str, ...], kind: str):
    out = {}
    for key in keys:
        if key in data:
            out[key] = c.text(data[key], data.line_of(key), f"'{key}'")
    return out


def build_predict(c, data, common, tables):
    t = _texts(c, data, ("prompt", "answer", "why"), "predict")
    if len(t) == 3 and all(t.values()):
        return Predict(**common, **t)
    return None


def build_discussion(c, data, common, tables):
    t = _texts(c, data, ("prompt", "hint", "answer"), "discussion")
    if len(t) == 3 and all(t.values()):
        return Discussion(**common, **t)
    return None


def _choices(c, data, common, tables, kind):
    note_key = _NOTE[kind]
    t = _texts(c, data, ("question", "explanation"), kind)
    options = c.sequence(data, "options", kind, 2)
    if options is None:
        return None
    if len(options) > 26:
        c.add(
            data.line_of("options"),
            f"{kind} has {len(options)} options; "
            "expected at most 26 (they are lettered A–Z)",
        )
        return None
    result: list[Option] = []
    seen: dict[str, str] = {}
    for i, raw in enumerate(options):
        letter = chr(ord("A") + i)
        line0 = options.line_of(i)
        what = f"option {letter}"
        if not isinstance(raw, Mapping):
            c.add(
                line0,
                f"{what} is not a mapping; expected "
                f"'- text: …' with 'correct: true' or '{note_key}: …'",
            )
            continue
        c.keys(raw, ("text",), ("correct", note_key), what)
        text = c.text(raw.get("text"), raw.line_of("text"), f"{what} text")
        correct = raw.get("correct", False)
        if not isinstance(correct, bool):
            c.add(
                raw.line_of("correct"),
                f"{what} has 'correct: {correct}'; expected 'correct: true' "
                "(or leave it out for a wrong option)",
            )
            correct = False
        note = None
        if note_key in raw:
            note = c.text(
                raw[note_key], raw.line_of(note_key), f"{what} '{note_key}'"
            )
            if correct:
                c.add(
                    raw.line_of(note_key),
                    f"{what} is the correct one but has '{note_key}'; "
                    f"expected '{note_key}' only on wrong options",
                )
        elif not correct and "text" in raw:
            c.add(
                raw.line,
                f"{what} is wrong but has no '{note_key}'; expected "
                + (
                    "'tempts: …' saying why it tempts people"
                    if kind == "check"
                    else "'rules_out: …' saying what rules it out"
                ),
            )
        if text is not None:
            if text in seen:
                c.add(
                    raw.line_of("text"),
                    f"{what} repeats option {seen[text]}; expected "
                    "different options",
                )
            seen.setdefault(text, letter)
        result.append(Option(letter, text or "", bool(correct), note))
    right = [o.letter for o in result if o.correct]
    if len(right) != 1:
        got = (
            "no option"
            if not right
            else f"{len(right)} options ({', '.join(right)})"
        )
        noun = "correct option" if kind == "check" else "survivor"
        c.add(
            data.line_of("options"),
            f"{kind} has {got} marked 'correct: true'; expected exactly "
            f"one {noun}",
        )
    if c.problems or len(t) != 2:
        return None
    cls = Check if kind == "check" else Eliminate
    return cls(
        **common,
        question=t["question"],
        options=result,
        explanation=t["explanation"],
    )


def build_check(c, data, common, tables):
    return _choices(c, data, common, tables, "check")


def build_eliminate(c, data, common, tables):
    return _choices(c, data, common, tables, "eliminate")


def build_buckets(c, data, common, tables):
    t = _texts(c, data, ("prompt",), "buckets")
    buckets = c.sequence(data, "buckets", "buckets", 2)
    if buckets is None:
        return None
    result: list[Bucket] = []
    names: dict[str, int] = {}
    items_seen: dict[str, str] = {}
    for i, raw in enumerate(buckets):
        line0 = buckets.line_of(i)
        what = f"bucket {i + 1}"
        if not isinstance(raw, Mapping):
            c.add(
                line0,
                f"{what} is not a mapping; expected '- name: …' with "
                "'items:' and 'explanation:'",
            )
            continue
        c.keys(raw, ("name", "items", "explanation"), (), what)
        name = c.text(raw.get("name"), raw.line_of("name"), f"{what} name")
        if name is not None:
            what = f"bucket '{name}'"
            if name in names:
                c.add(
                    raw.line_of("name"),
                    f"{what} repeats bucket {names[name]}'s name; expected "
                    "distinct bucket names",
                )
            names.setdefault(name, i + 1)
        explanation = None
        if "explanation" in raw:
            explanation = c.text(
                raw["explanation"],
                raw.line_of("explanation"),
                f"{what} explanation",
            )
        items: list[str] = []
        raw_items = raw.get("items")
        if "items" not in raw:
            pass  # reported as missing
        elif not isinstance(raw_items, list) or not raw_items:
            c.add(
                raw.line_of("items"),
                f"{what} has no items; expected a list of at least one "
                "item ('- …')",
            )
        else:
            for k, item in enumerate(raw_items):
                text = c.text(item, raw_items.line_of(k), f"{what} item")
                if text is None:
                    continue
                if text in items_seen:
                    c.add(
                        raw_items.line_of(k),
                        f"item '{text}' appears twice (in {items_seen[text]}"
                        f" and {what}); expected each item once",
                    )
                    continue
                items_seen[text] = what
                items.append(text)
        result.append(Bucket(name or "", items, explanation or ""))
    if not c.problems:
        _check_buckets_against_table(c, data, tables, result)
    if c.problems or not t.get("prompt"):
        return None
    return Buckets(**common, prompt=t["prompt"], buckets=result)


def _table(c, data, tables, table_id, kind):
    """The generated table ``table_id``, or None with a problem added."""
    try:
        raw = tables() if callable(tables) else tables
    except TablesUnavailable as exc:
        c.add(
            data.line_of("table"),
            f"{kind} needs table '{table_id}', but the generated tables "
            f"are unavailable ({exc}); expected the tables the snippet "
            "engine published (lessonbuild.engine.check)",
        )
        return None
    known = normalize_tables(raw or {})
    if table_id not in known:
        hint = _did_you_mean(table_id, known)
        listing = ", ".join(sorted(known)[:12]) or "(none were generated)"
        if len(known) > 12:
            listing += f", … ({len(known)} in all)"
        c.add(
            data.line_of("table"),
            f"{kind} names unknown table '{table_id}'{hint}; expected a "
            f"table a snippet publishes (<snippet stem>.<name>): {listing}",
        )
        return None
    return known[table_id]


def _check_buckets_against_table(c, data, tables, buckets):
    """Buckets drawn from a generated table must still match it.

    With ``table``, ``group_by`` and ``item_column`` the author says "these
    buckets are that table's rows grouped by one column"; when a snippet's
    output changes, the build fails here instead of the slide going stale.
    """
    given = [k for k in ("table", "group_by", "item_column") if k in data]
    if not given:
        return
    if len(given) != 3:
        c.add(
            data.line_of(given[0]),
            "buckets from a table need all of 'table', 'group_by' and "
            "'item_column'; missing "
            + ", ".join(
                f"'{k}'"
                for k in ("table", "group_by", "item_column")
                if k not in given
            ),
        )
        return
    table_id = c.text(data["table"], data.line_of("table"), "'table'")
    group_by = c.text(data["group_by"], data.line_of("group_by"), "group_by")
    item_col = c.text(
        data["item_column"], data.line_of("item_column"), "item_column"
    )
    if None in (table_id, group_by, item_col):
        return
    table = _table(c, data, tables, table_id, "buckets")
    if table is None:
        return
    for key, column in (("group_by", group_by), ("item_column", item_col)):
        if column not in table.columns:
            c.add(
                data.line_of(key),
                f"{key} names unknown column '{column}' of table "
                f"'{table_id}'{_did_you_mean(column, table.columns)}; "
                "expected one of: "
                + ", ".join(f"'{h}'" for h in table.columns),
            )
            return
    g, i = table.columns.index(group_by), table.columns.index(item_col)
    expected: dict[str, list[str]] = {}
    for row in table.rows:
        expected.setdefault(row[g], []).append(row[i])
    actual = {b.name.strip().strip("`").strip(): b.items for b in buckets}
    if {k: sorted(v) for k, v in actual.items()} != {
        k: sorted(v) for k, v in expected.items()
    }:
        want = "; ".join(
            f"{name}: {', '.join(items)}" for name, items in expected.items()
        )
        c.add(
            data.line_of("table"),
            f"the buckets no longer match table '{table_id}' grouped by "
            f"'{group_by}'; expected (name: items) {want}",
        )


def build_order(c, data, common, tables):
    t = _texts(c, data, ("prompt", "why"), "order")
    steps = c.sequence(data, "steps", "order", 2)
    if steps is None:
        return None
    result: list[str] = []
    for i, raw in enumerate(steps):
        text = c.text(raw, steps.line_of(i), f"step {i + 1}")
        if text is None:
            continue
        if text in result:
            c.add(
                steps.line_of(i),
                f"step {i + 1} repeats step {result.index(text) + 1}; "
                "expected distinct steps",
            )
        result.append(text)
    if c.problems or len(t) != 2:
        return None
    return Order(**common, prompt=t["prompt"], steps=result, why=t["why"])


def build_fill_in(c, data, common, tables):
    t = _texts(c, data, ("prompt",), "fill-in")
    table_id = column = None
    if "table" in data:
        table_id = c.text(data["table"], data.line_of("table"), "'table'")
    if "column" in data:
        column = c.text(data["column"], data.line_of("column"), "'column'")
    if table_id is None or column is None:
        return None
    table = _table(c, data, tables, table_id, "fill-in")
    if table is None:
        return None
    if column not in table.columns:
        hint = _did_you_mean(column, table.columns)
        c.add(
            data.line_of("column"),
            f"fill-in names unknown column '{column}' of table "
            f"'{table_id}'{hint}; expected one of: "
            + ", ".join(f"'{h}'" for h in table.columns),
        )
        return None
    if not table.rows:
        c.add(
            data.line_of("table"),
            f"table '{table_id}' has no rows; expected at least one row "
            "to fill in",
        )
        return None
    if len(table.columns) < 2:
        c.add(
            data.line_of("table"),
            f"table '{table_id}' has a single column; expected another "
            "column to label the rows",
        )
        return None
    hide = _fill_in_hide(c, data, table, column)
    accept = _fill_in_accept(c, data, table, column, hide)
    if c.problems or not t.get("prompt") or hide is None or accept is None:
        return None
    return FillIn(
        **common,
        prompt=t["prompt"],
        table=table_id,
        column=column,
        data=table,
        hide=hide,
        accept=accept,
    )


def _fill_in_hide(c, data, table: Table, column: str) -> list[str] | None:
    """``hide:``: columns left out, e.g. an "actual" column beside the
    blanks that would give the answers away."""
    if "hide" not in data:
        return []
    raw = data["hide"]
    names = [raw] if isinstance(raw, str) else raw
    if not isinstance(names, list) or not all(
        isinstance(n, str) for n in names
    ):
        c.add(
            data.line_of("hide"),
            "'hide' is not a list of column names; expected e.g. "
            "hide: [actual shape]",
        )
        return None
    for name in names:
        if name not in table.columns or name == column:
            what = "the blanks' own column" if name == column else "unknown"
            c.add(
                data.line_of("hide"),
                f"'hide' names {what} '{name}'; expected other columns "
                "of the table: "
                + ", ".join(f"'{h}'" for h in table.columns if h != column),
            )
            return None
    if len(table.columns) - len(names) < 2:
        c.add(
            data.line_of("hide"),
            "'hide' leaves only the blanks; expected a column to label "
            "the rows",
        )
        return None
    return list(names)


def _fill_in_accept(c, data, table, column, hide) -> dict | None:
    """``accept:`` maps a row's label to other forms of its answer; every
    expected value and listed form must pass the matcher students meet."""
    hidden = table.columns.index(column)
    shown = [i for i, h in enumerate(table.columns) if h not in (hide or [])]
    label = next((i for i in shown if i != hidden), None)
    accept: dict[int, list[str]] = {}
    raw = data.get("accept", {})
    if not isinstance(raw, dict) or label is None:
        if "accept" in data:
            c.add(
                data.line_of("accept"),
                "'accept' is not a mapping; expected row label: [forms], "
                "e.g. d_k: [scalar, '()']",
            )
        return None
    labels = [row[label] for row in table.rows]
    for key, forms in raw.items():
        line0 = raw.line_of(key)
        if str(key) not in labels:
            c.add(
                line0,
                f"'accept' names row '{key}'"
                f"{_did_you_mean(str(key), labels)}; expected a row label "
                f"of column '{table.columns[label]}': " + ", ".join(labels),
            )
            continue
        forms = [forms] if isinstance(forms, str) else forms
        if not isinstance(forms, list) or not all(
            isinstance(f, str) and f.strip() for f in forms
        ):
            c.add(line0, f"'accept' for row '{key}' is not a list of texts")
            continue
        accept[labels.index(str(key))] = [f.strip() for f in forms]
    for r, row in enumerate(table.rows):
        expected = row[hidden]
        for form in [expected, *accept.get(r, [])]:
            if not answers.matches(form, expected, accept.get(r, [])):
                c.add(
                    data.line_of("table"),
                    f"row '{row[label]}': the answer {form!r} fails its own "
                    "matcher (lessonbuild/exercises/answers.py), so no "
                    "student could be marked right; expected a value "
                    "with text in it",
                )
    return accept
