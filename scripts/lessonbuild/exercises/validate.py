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
    Cell,
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
    WrongForm,
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
    table_id = table = None
    if "variants" in data:
        table_id = c.text(
            data["variants"], data.line_of("variants"), "'variants'"
        )
        if table_id is None:
            return None
        table = _variants_table(c, data, tables, table_id, kind)
        if table is None:
            return None
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
    ids: dict[str, str] = {}
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
        optional = ("correct", note_key, "id", "column", "formula")
        c.keys(raw, ("text",), optional, what)
        option_id = raw.get("id")
        if option_id is not None and not (
            isinstance(option_id, str) and _ID.match(option_id)
        ):
            c.add(
                raw.line_of("id"),
                f"{what} has id {option_id!r}; expected a slug (lower-case "
                "letters, digits and '-') that {{ ref(exercise, option) }} "
                "can name",
            )
            option_id = None
        elif option_id in ids:
            c.add(
                raw.line_of("id"),
                f"{what} repeats the id '{option_id}' of option "
                f"{ids[option_id]}; expected option ids unique in an "
                "exercise",
            )
        elif option_id is not None:
            ids[option_id] = letter
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
        column, formula, fline = _option_value(c, raw, what, table)
        result.append(
            Option(
                letter,
                text or "",
                bool(correct),
                note,
                option_id,
                column,
                formula,
                fline,
            )
        )
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
    rows = []
    if len(result) == len(options):
        rows = _choice_variants(
            c, data, options, result, (table, table_id), kind
        )
    if c.problems or len(t) != 2:
        return None
    return (Check if kind == "check" else Eliminate)(
        **common,
        question=t["question"],
        options=result,
        explanation=t["explanation"],
        variants=table_id,
        rows=rows,
    )


def _option_value(c, raw, what, table):
    """An option's (column, formula, formula line): the engine's number
    for it in each variant, and what that number must equal."""
    given = [k for k in ("column", "formula") if k in raw]
    if not given:
        return None, None, None
    if table is None:
        c.add(
            raw.line_of(given[0]),
            f"{what} has '{given[0]}' but the exercise has no 'variants' "
            "table; expected 'variants: \"<snippet stem>.<table>\"' to go "
            "with option columns",
        )
        return None, None, None
    if len(given) == 1:
        missing = "formula" if given[0] == "column" else "column"
        c.add(
            raw.line_of(given[0]),
            f"{what} has '{given[0]}' but no '{missing}'; expected both: "
            "the variants table's column holding the option's number and "
            "its formula in the lesson's symbols",
        )
        return None, None, None
    column = c.text(raw["column"], raw.line_of("column"), f"{what} column")
    formula = c.text(raw["formula"], raw.line_of("formula"), f"{what} formula")
    if column is None or formula is None:
        return None, None, None
    if column not in table.columns:
        c.add(
            raw.line_of("column"),
            f"{what} names unknown column '{column}'"
            f"{_did_you_mean(column, table.columns)}; expected one of: "
            + ", ".join(f"'{h}'" for h in table.columns),
        )
        return None, None, None
    return column, formula, c.base + raw.line_of("formula")


def _choice_variants(c, data, raw_options, options, variants, kind):
    """A check or eliminate with ``variants`` (``(table, table_id)``):
    every {placeholder} is a column, each option's number is the engine's
    and equals its formula in every variant, and no two options read the
    same in any variant (an eliminate would have two survivors). Without
    ``variants`` no text may hold a placeholder. Returns the rows."""
    table, table_id = variants
    texts = [
        (f"the {key}", data.get(key), data.line_of(key))
        for key in ("question", "explanation")
    ]
    for o, raw in zip(options, raw_options, strict=True):
        texts.append((f"option {o.letter} text", o.text, raw.line_of("text")))
        if o.note:
            texts.append(
                (
                    f"option {o.letter} '{_NOTE[kind]}'",
                    o.note,
                    raw.line_of(_NOTE[kind]),
                )
            )
    for what, text, line0 in texts:
        if isinstance(text, str):
            _placeholders(c, text, line0, what, table, table_id)
    if table is None or c.problems:
        return []
    rows = [dict(zip(table.columns, row, strict=True)) for row in table.rows]
    answer_columns = {o.column for o in options if o.column}
    symbols, scopes = _symbols(table, rows, answer_columns)
    for o, raw in zip(options, raw_options, strict=True):
        if o.column is None:
            continue
        if f"{{{o.column}}}" not in o.text:
            c.add(
                raw.line_of("text"),
                f"option {o.letter} takes its number from column "
                f"'{o.column}' but its text does not show "
                f"{{{o.column}}}; expected the text to show the engine's "
                "number",
            )
        shape = o.formula.lstrip().startswith(("(", "["))
        _agrees(
            c,
            f"option {o.letter}",
            o.column,
            o.formula,
            shape,
            raw.line_of("formula"),
            (rows, scopes, symbols),
        )
    if c.problems:
        return rows
    for row in rows:
        seen: dict[str, str] = {}
        values: dict[tuple, str] = {}
        for o, raw in zip(options, raw_options, strict=True):
            shown = " ".join(_fill(o.text, row).lower().split())
            same = seen.get(shown)
            if o.column is not None:
                shape = o.formula.lstrip().startswith(("(", "["))
                got = _at(answers.split(row[o.column], shape), [{}])
                if got is not None:
                    key = tuple(round(v, 9) for v in got[0])
                    same = same or values.get(key)
                    values.setdefault(key, o.letter)
            if same is not None:
                c.add(
                    raw.line_of("text"),
                    f"in the variant {_describe(row, symbols)} option "
                    f"{o.letter} comes to the same as option {same} "
                    f"({_fill(o.text, row)!r}), so the question has two "
                    "answers there; expected variant values where no two "
                    "options coincide (change that row of the snippet)",
                )
            seen.setdefault(shown, o.letter)
    return rows


#: {name}: where a variant's value goes (not TeX's \text{model}).
_VAR = re.compile(r"(?<![\w\\}])\{([A-Za-z_][A-Za-z0-9_]*)\}")
_MATH = re.compile(r"\\\(.*?\\\)|\\\[.*?\\\]", re.DOTALL)


def _fill(text: str, row: dict[str, str]) -> str:
    """``text`` with each {column} replaced by the variant's value."""
    return _VAR.sub(lambda m: row.get(m[1], m[0]), text)


def _placeholders(c, text, line0, what, table, table_id) -> None:
    """Each {name} in ``text`` is a column of the variants table, and
    outside math (the page swaps the number in a span, which TeX would
    not take)."""
    for math in _MATH.finditer(text):
        for name in _VAR.findall(math[0]):
            c.add(
                line0,
                f"{what} puts {{{name}}} inside math ({math[0]!r}); "
                f"expected it outside the math, e.g. '\\(h\\) = {{h}}'",
            )
    for name in _VAR.findall(_MATH.sub("", text)):
        if table is None:
            c.add(
                line0,
                f"{what} shows {{{name}}}, but the exercise has no "
                "'variants' table to fill it from; expected 'variants: "
                '"<snippet stem>.<table>"\' (or no braces)',
            )
        elif name not in table.columns:
            c.add(
                line0,
                f"{what} shows {{{name}}}, which table '{table_id}' has "
                f"no column for{_did_you_mean(name, table.columns)}; "
                "expected one of: "
                + ", ".join(f"{{{h}}}" for h in table.columns),
            )


def _symbols(table, rows, answer_columns):
    """The table's columns that give a variant (named like the lesson's
    symbols, and not an answer), and each variant's values of them."""
    symbols = [
        col
        for col in table.columns
        if col not in answer_columns and answers.canonical_symbol(col)
    ]
    scopes = []
    for row in rows:
        scope = {}
        for col in symbols:
            value = answers.values(
                answers.split(row[col], False)[0] if row[col].strip() else "",
                {},
            )
            if isinstance(value, float):
                scope[answers.canonical_symbol(col)] = value
        if "d_k" not in scope and {"d_model", "h"} <= set(scope):
            scope["d_k"] = scope["d_model"] / scope["h"]
        scopes.append(scope)
    return symbols, scopes


def _variants_table(c, data, tables, table_id, kind):
    """The published variants table, with at least two rows, or None."""
    table = _table(c, data, tables, table_id, kind, key="variants")
    if table is None:
        return None
    if len(table.rows) < 2:
        c.add(
            data.line_of("variants"),
            f"table '{table_id}' has {len(table.rows)} row(s); expected at "
            'least two variants, so "Try another" has another to draw',
        )
        return None
    return table


def _agrees(c, what, column, formula, shape, where, variants) -> bool:
    """The engine's value in ``column`` equals ``formula`` in every
    variant; each disagreement is a problem at line ``where``."""
    rows, scopes, symbols = variants
    parts = answers.split(formula, shape)
    ok = True
    for row, scope in zip(rows, scopes, strict=True):
        engine = answers.split(row[column], shape)
        want = _at(parts, [scope])
        got = _at(engine, [{}]) if engine else None
        if want is None:
            c.add(
                where,
                f"{what} formula {formula!r} cannot be evaluated for the "
                f"variant {_describe(row, symbols)}"
                "; expected every symbol it uses to be a column of the "
                "variants table",
            )
            return False
        if got is None or not _same(got[0], want[0]):
            ok = False
            c.add(
                where,
                f"{what} ({column}), variant "
                f"{_describe(row, symbols)}: the "
                f"snippet engine computed {row[column]!r}, but the formula "
                f"{formula!r} gives {_show(want[0])}; mha_ref or the formula "
                "changed: expected them to agree (fix whichever is wrong, "
                "then rebuild)",
            )
    return ok


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


def _table(c, data, tables, table_id, kind, key="table"):
    """The generated table ``table_id``, or None with a problem added."""
    try:
        raw = tables() if callable(tables) else tables
    except TablesUnavailable as exc:
        c.add(
            data.line_of(key),
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
            data.line_of(key),
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
    """Blanks whose answers the snippet engine computed, per variant.

    ``variants`` names a table a snippet publishes, one row per variant;
    its columns named like the lesson's symbols (d_model, h, T, B, bias)
    give the variant, and each cell's ``column`` holds the engine's
    answer. Each cell's ``formula`` (in the symbols) must give the
    engine's value for every variant: when mha_ref changes one, the
    build stops here, at the cell's line.
    """
    t = _texts(c, data, ("prompt",), "fill-in")
    table_id = None
    if "variants" in data:
        table_id = c.text(
            data["variants"], data.line_of("variants"), "'variants'"
        )
    if table_id is None:
        return None
    table = _variants_table(c, data, tables, table_id, "fill-in")
    if table is None:
        return None
    raw_cells = c.sequence(data, "cells", "fill-in", 1)
    if raw_cells is None:
        return None
    answer_columns = {
        cell.get("column") for cell in raw_cells if isinstance(cell, Mapping)
    }
    rows = [dict(zip(table.columns, row, strict=True)) for row in table.rows]
    symbols, scopes = _symbols(table, rows, answer_columns)
    points = _random_points(common.get("id") or t.get("prompt") or table_id)
    prompt = t.get("prompt")
    if prompt:
        _placeholders(
            c, prompt, data.line_of("prompt"), "the prompt", table, table_id
        )
    cells = []
    for i, raw in enumerate(raw_cells):
        cell = _fill_in_cell(
            c,
            raw,
            raw_cells.line_of(i),
            i,
            table,
            (rows, scopes, symbols),
            points,
        )
        if cell is not None:
            cells.append(cell)
    if c.problems or not prompt:
        return None
    return FillIn(
        **common,
        prompt=prompt,
        variants=table_id,
        symbols=symbols,
        rows=rows,
        cells=cells,
        points=points,
    )


def _random_points(seed: str) -> list[dict[str, float]]:
    """Four random, consistent values of the lesson's symbols (h divides
    d_model), the same on every build: symbolic answers are compared at
    each, besides the variant's own numbers."""
    import random

    rng = random.Random(seed)
    points = []
    for _ in range(4):
        h = rng.randint(2, 12)
        d_k = rng.randint(3, 40)
        t_q, t_k = rng.randint(2, 40), rng.randint(2, 40)
        points.append(
            {
                "h": h,
                "d_k": d_k,
                "d_model": h * d_k,
                "t": t_q,
                "t_q": t_q,
                "t_k": t_k,
                "b": rng.randint(1, 9),
                "bias": rng.randint(0, 1),
            }
        )
    return points


def _describe(row: dict[str, str], symbols: list[str]) -> str:
    return ", ".join(f"{s}={row[s]}" for s in symbols) or "(no symbols)"


def _fill_in_cell(c, raw, line0, i, table, variants, points):
    what = f"cell {i + 1}"
    if not isinstance(raw, Mapping):
        c.add(
            line0,
            f"{what} is not a mapping; expected '- label: …' with 'column',"
            " 'formula', 'wrong' and 'otherwise'",
        )
        return None
    ok = c.keys(
        raw, ("label", "column", "formula", "wrong", "otherwise"), (), what
    )
    label = c.text(raw.get("label"), raw.line_of("label"), f"{what} label")
    column = c.text(raw.get("column"), raw.line_of("column"), f"{what} column")
    formula = c.text(
        raw.get("formula"), raw.line_of("formula"), f"{what} formula"
    )
    otherwise = c.text(
        raw.get("otherwise"), raw.line_of("otherwise"), f"{what} otherwise"
    )
    if not ok or None in (label, column, formula, otherwise):
        return None
    if column not in table.columns:
        c.add(
            raw.line_of("column"),
            f"{what} names unknown column '{column}'"
            f"{_did_you_mean(column, table.columns)}; expected one of: "
            + ", ".join(f"'{h}'" for h in table.columns),
        )
        return None
    shape = formula.lstrip().startswith(("(", "["))
    rows, scopes, symbols = variants
    where = raw.line_of("formula")
    # The formula, at every random point (it must use known symbols).
    parts = answers.split(formula, shape)
    at = _at(parts, points)
    if at is None:
        c.add(
            where,
            f"{what} formula {formula!r} does not evaluate; expected "
            "arithmetic in the lesson's symbols ("
            + ", ".join(sorted(set(answers.SYMBOLS.values())))
            + "), e.g. '4*d_model^2' or '(B, h, T, T)'",
        )
        return None
    # The engine's value of every variant must be the formula's.
    _agrees(c, what, column, formula, shape, where, variants)
    wrong = []
    raw_wrong = raw.get("wrong")
    if not isinstance(raw_wrong, list) or not raw_wrong:
        c.add(
            raw.line_of("wrong"),
            f"{what} has no wrong forms; expected a list of '- form: …' "
            "with 'why: …' for its common wrong answers",
        )
        return None
    for k, item in enumerate(raw_wrong):
        wline = raw_wrong.line_of(k)
        if not isinstance(item, Mapping) or not c.keys(
            item, ("form", "why"), (), f"{what} wrong form {k + 1}"
        ):
            if not isinstance(item, Mapping):
                c.add(
                    wline,
                    f"{what} wrong form {k + 1} is not a mapping; "
                    "expected '- form: …' and 'why: …'",
                )
            continue
        form = c.text(item.get("form"), item.line_of("form"), "form")
        why = c.text(item.get("why"), item.line_of("why"), "why")
        if form is None or why is None:
            continue
        form_parts = answers.split(form, shape)
        if _at(form_parts, points) is None:
            c.add(
                wline,
                f"wrong form {form!r} does not evaluate; expected "
                "arithmetic in the lesson's symbols",
            )
            continue
        if all(
            _same(_at(form_parts, [scope])[0], _at(parts, [scope])[0])
            for scope in scopes
        ):
            c.add(
                wline,
                f"wrong form {form!r} equals the answer in every variant, "
                "so no student could give it; expected a form that is "
                "wrong for at least one variant",
            )
        wrong.append(WrongForm(form, why))
    return Cell(
        label, column, formula, shape, wrong, otherwise, c.base + where
    )


def _at(parts, scopes):
    """Each scope's values of ``parts`` (a list per scope), or None."""
    if not parts:
        return None
    out = []
    for scope in scopes:
        vals = [answers.values(p, scope) for p in parts]
        if any(not isinstance(v, float) for v in vals):
            return None
        out.append(vals)
    return out


def _same(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(
        answers.close(x, y) for x, y in zip(a, b, strict=True)
    )


def _show(values: list[float]) -> str:
    text = [f"{v:,.0f}" if v == int(v) else f"{v:g}" for v in values]
    return f"({', '.join(text)})" if len(text) > 1 else text[0]
