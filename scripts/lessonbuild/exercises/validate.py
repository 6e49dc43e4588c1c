"""Check one exercise body against its kind's schema.

Every problem is collected, at its file line and saying what was
expected, so an author fixes a slide in one go.
"""

from __future__ import annotations

import difflib
import json
import random
import re
from collections.abc import Callable
from typing import Any

from ..problems import Problem, did_you_mean
from ..yamltext import Mapping, Sequence, YamlProblem, load_yaml
from . import answers, model
from .model import KINDS, PLACEHOLDER, Table

_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_MATH = re.compile(r"\\\(.*?\\\)|\\\[.*?\\\]", re.DOTALL)
#: A value that starts with a character YAML reserves (`, @, %).
_CANNOT_START = re.compile(r"found character '(.+?)' that cannot start")
_QUOTE = 'quote the value ("…") or write it as a block scalar (|)'
#: A formula's own numbers (4 in 4*d_model^2), not an exponent's.
_CONSTANT = re.compile(r"(?<![\w.^])\d+(?![\w.])")


class TablesUnavailable(Exception):
    """The table source (the snippet engine) could not be loaded."""


#: Table id -> {"columns", "rows"}, or a callable returning that.
TableSource = Callable[[], Any] | dict | None


def _yaml_hint(exc: YamlProblem, body: str) -> str:
    """What to do about a YAML error, by its likely cause (contributors
    were told "expected a YAML mapping such as 'kind: check'" for each)."""
    lines = body.splitlines()
    here = lines[exc.line] if 0 <= exc.line < len(lines) else ""
    if "quote it does not close" in exc.message:  # said by load_yaml
        return ""
    if "mapping values are not allowed" in exc.message:
        # A 'key: value' indented deeper than the key above reads as more
        # of that line's value: quoting it changes nothing.
        above = next((t for t in reversed(lines[: exc.line]) if t.strip()), "")
        top = len(above) - len(above.lstrip(" -"))
        deeper = len(here) - len(here.lstrip()) > top
        if ": " in here and ": " in above and deeper:
            return (
                "; this line is indented deeper than the one above, so it "
                "reads as part of that line's value: line its key up with "
                "the keys beside it"
            )
        return (
            "; a ': ' inside an unquoted value starts a new key; quote the "
            "value ('…') or write it as a block scalar (|)"
        )
    if start := _CANNOT_START.search(exc.message):
        return f"; an unquoted value may not start with '{start[1]}': {_QUOTE}"
    if "tab character" in exc.message:
        return "; indent with spaces: YAML does not take tabs"
    value = here.strip().removeprefix("- ").partition(": ")[2].lstrip()
    if value[:1] in ("{", "["):  # `text: {w_o} rows`
        return (
            f"; an unquoted value may not start with '{value[0]}' (YAML "
            f"reads it as its own syntax): {_QUOTE}"
        )
    if re.search(r"did not find expected (key|'-')", exc.message):
        return (
            "; this line is not lined up with the keys around it: the keys "
            "of one mapping (the exercise's, one option's) start in the "
            "same column"
        )
    if "alias" in exc.message or "block scalar" in exc.message:
        return ""
    return (
        "; expected a YAML mapping such as 'kind: check' followed by that "
        "kind's keys"
    )


def _quoted(names, left="'", right="'") -> str:
    return ", ".join(f"{left}{name}{right}" for name in names)


class _Checker:
    """Collects problems at file lines (YAML line 0 is the line after the
    opening fence) and checks the shapes every kind shares."""

    def __init__(self, path, first_line, tables, values):
        self.path, self.base = path, first_line + 1
        self.tables: TableSource = tables
        self.values: dict[str, str] = values  # published: id -> text
        self.problems: list[Problem] = []
        #: A table was asked for and TablesUnavailable raised (fastcheck).
        self.no_tables = False

    def add(self, line0: int, message: str, detail: str = "") -> None:
        self.problems.append(
            Problem(self.path, self.base + line0, message, detail)
        )

    def text(self, value: Any, line0: int, what: str) -> str | None:
        """A Markdown text value, or None after reporting a problem."""
        if isinstance(value, str) and value.strip():
            return value.strip()
        got, quote = "empty", ""
        if isinstance(value, bool):
            got = f"the YAML boolean {str(value).lower()}"
            quote = ' (quote the word as you typed it, as in "yes")'
        elif value is not None and not isinstance(value, str):
            got = "a list" if isinstance(value, list) else "a mapping"
            if isinstance(value, dict) and len(value) == 1:
                # "- Trained layer: two heads…" is valid YAML: a mapping.
                start = str(next(iter(value)))[:40]
                quote = (
                    f" (the ': ' after '{start}' made it one: quote the "
                    "text ('…') or write it as a block scalar (|))"
                )
        self.add(line0, f"{what} is {got}; expected Markdown text{quote}")
        return None

    def field(self, mapping: Mapping, key: str, what: str) -> str | None:
        """``mapping[key]`` as text (a missing key is empty)."""
        return self.text(mapping.get(key), mapping.line_of(key), what)

    def texts(self, mapping: Mapping, keys) -> dict[str, str | None]:
        """The given ``keys`` as text (a missing one is left to keys())."""
        return {
            k: self.field(mapping, k, f"'{k}'") for k in keys if k in mapping
        }

    def keys(
        self, mapping: Mapping, required, optional, what: str, wanted=None
    ) -> bool:
        """Report missing and unknown keys; True when all are fine.

        ``wanted`` maps an optional key that this mapping needs (a wrong
        option's 'tempts') to the message for its absence. A near
        spelling of a missing key is one mistake, said once at its line
        (not "unknown 'explanaton'" plus "missing 'explanation'")."""
        wanted = wanted or {}
        allowed = required + optional
        expected = ", ".join(required)
        if optional:
            expected += f" (optional: {', '.join(optional)})"
        missing = [k for k in (*required, *wanted) if k not in mapping]
        unknown = [k for k in mapping if k not in allowed]
        for key in unknown:
            line0 = mapping.line_of(key)
            close = difflib.get_close_matches(str(key), missing, 1, 0.6)
            if close:
                missing.remove(close[0])
                self.add(
                    line0,
                    f"{what} has '{key}' where '{close[0]}' is expected; "
                    f"rename it '{close[0]}' (expected keys: {expected})",
                )
                continue
            message = (
                f"{what} has unknown key '{key}'"
                f"{did_you_mean(str(key), allowed)}; expected keys: {expected}"
            )
            if key in ("answer", "correct") and "options" in allowed:
                message += (
                    "; the right option is marked in its own entry, "
                    "'correct: true'"
                )
            self.add(line0, message)
        for key in missing:  # the required ones first, then the wanted
            self.add(
                mapping.line,
                wanted.get(key)
                or f"{what} is missing '{key}'; expected keys: {expected}",
            )
        return not unknown and not missing

    def items(self, mapping: Mapping, key: str, what: str, minimum: int):
        """``mapping[key]`` as a list of at least ``minimum`` items, or
        None after reporting a problem."""
        value = mapping.get(key)
        if not isinstance(value, list):
            got = "is not a list; expected a YAML list ('- ' items) of"
        elif len(value) < minimum:
            got = f"has {len(value)} item(s); expected"
        else:
            return value
        line0 = mapping.line_of(key)
        self.add(line0, f"'{key}' of {what} {got} at least {minimum}")
        return None

    def mappings(self, items: Sequence, name: Callable, expected: str):
        """(index, item, what) of each mapping among ``items``, where
        ``name(index)`` says what the item is; the others are reported."""
        for i, item in enumerate(items):
            if isinstance(item, Mapping):
                yield i, item, name(i)
            else:
                self.add(
                    items.line_of(i),
                    f"{name(i)} is not a mapping; expected {expected}",
                )

    def column(self, line0, what, column, table, of="") -> bool:
        """Is ``column`` one of ``table``'s? (A problem when it is not.)"""
        if column in table.columns:
            return True
        self.add(
            line0,
            f"{what} names unknown column '{column}'{of}"
            f"{did_you_mean(column, table.columns)}; expected one of: "
            + _quoted(table.columns),
        )
        return False


def _again(seen: dict, value, at):
    """Where ``value`` was seen before, or None (and ``at`` is noted)."""
    first = seen.get(value)
    if first is None and value is not None:
        seen[value] = at
    return first


def validate(
    body: str,
    *,
    path: str,
    first_line: int,
    tables: TableSource = None,
    values: dict[str, str] | None = None,
) -> tuple[model.Exercise | None, list[Problem]]:
    """Validate the YAML `body` of a fence that opens at `first_line`.

    `tables` is a mapping of table id -> {"columns", "rows"}, or a
    zero-argument callable returning one (called only when an exercise
    names a table, and allowed to raise TablesUnavailable). ``values``
    (id -> text) lets a suggested fix write ``{{ value(id) }}``. Returns
    the exercise (None when anything is wrong) and the problems.
    """
    c = _Checker(path, first_line, tables, values or {})
    try:
        data, duplicates = load_yaml(body)
    except YamlProblem as exc:
        # (A key misspelt below is reported only once this is fixed:
        # said, so that a second run's news is no surprise.)
        c.add(
            exc.line,
            f"invalid YAML: {exc}{_yaml_hint(exc, body)}; its other checks "
            "run once it reads",
        )
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
    names = ", ".join(KINDS)
    kind = data.get("kind")
    if kind is None:
        c.add(data.line, f"exercise has no 'kind'; expected one of: {names}")
        return None, c.problems
    if not isinstance(kind, str) or kind not in KINDS:
        c.add(
            data.line_of("kind"),
            f"unknown exercise kind '{kind}'"
            f"{did_you_mean(str(kind), KINDS)}; expected one of: {names}",
        )
        return None, c.problems
    cls = KINDS[kind]
    c.keys(data, ("kind", *cls.keys), ("title", "id", *cls.optional), kind)
    common: dict[str, Any] = {"line": first_line}
    if "title" in data:
        common["title"] = c.field(data, "title", "title")
    if "id" in data:
        if isinstance(data["id"], str) and _ID.match(data["id"]):
            common["id"] = data["id"]
        else:
            c.add(
                data.line_of("id"),
                f"id {data['id']!r} is not a slug; expected lower-case "
                "letters, digits and '-' (it names the answer saved in the "
                "browser)",
            )
    fields = _BUILD.get(kind, _texts)(c, data, cls, common.get("id"))
    if c.problems:  # a builder need not check what it reported
        return None, c.problems
    return cls(**common, **fields), []


def _texts(c, data, cls, _id):
    """Predict and discussion: every key is Markdown text."""
    return c.texts(data, cls.keys)


def _choices(c, data, cls, _id):
    kind, (note_key, saying, noun) = cls.kind, cls.note
    fields = c.texts(data, ("question", "explanation"))
    table_id, table = _variants_table(c, data, kind)
    # Without tables (fastcheck) the options are still checked: it passed
    # a wrong option with no 'tempts' that the build refused.
    if "variants" in data and table is None and not c.no_tables:
        return None
    options = c.items(data, "options", kind, 2)
    if options is None:
        return None
    if len(options) > 26:
        c.add(
            data.line_of("options"),
            f"{kind} has {len(options)} options; "
            "expected at most 26 (they are lettered A–Z)",
        )
        return None
    result: list[model.Option] = []
    texts: dict[str, str] = {}  # text -> letter
    ids: dict[str, str] = {}  # option id -> letter
    for i, raw, what in c.mappings(
        options,
        lambda i: f"option {chr(ord('A') + i)}",
        f"'- text: …' with 'correct: true' or '{note_key}: …'",
    ):
        letter = chr(ord("A") + i)
        correct = raw.get("correct", False)  # True, or "true" quoted
        wanted = {}
        if str(correct).lower() != "true" and "text" in raw:
            wanted[note_key] = (
                f"{what} is wrong but has no '{note_key}'; expected "
                f"'{note_key}: …' {saying}"
            )
        optional = ("correct", note_key, "id", "column", "formula")
        c.keys(raw, ("text",), optional, what, wanted)
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
        if (first := _again(ids, option_id, letter)) is not None:
            c.add(
                raw.line_of("id"),
                f"{what} repeats the id '{option_id}' of option {first}; "
                "expected option ids unique in an exercise",
            )
        text = c.field(raw, "text", f"{what} text")
        if isinstance(correct, str) and correct.lower() in ("true", "false"):
            # Quoted, it is text: said once, then read as meant (not
            # also "no option is correct" and "A has no 'tempts'").
            c.add(
                raw.line_of("correct"),
                f"{what} has 'correct: \"{correct}\"', which is text in "
                f"quotes; expected 'correct: {correct.lower()}' without "
                "the quotes",
            )
            correct = correct.lower() == "true"
        elif not isinstance(correct, bool):
            c.add(
                raw.line_of("correct"),
                f"{what} has 'correct: {correct}'; expected 'correct: true' "
                "(or leave it out for a wrong option)",
            )
            correct = False
        note = None
        if note_key in raw:
            note = c.field(raw, note_key, f"{what} '{note_key}'")
            if correct:
                c.add(
                    raw.line_of(note_key),
                    f"{what} is the correct one but has '{note_key}'; "
                    f"expected '{note_key}' only on wrong options",
                )
        if (first := _again(texts, text, letter)) is not None:
            c.add(
                raw.line_of("text"),
                f"{what} repeats option {first}; expected different options",
            )
        value = _option_value(c, raw, what, table)
        result.append(
            model.Option(letter, text or "", correct, note, option_id, *value)
        )
    right = [o.letter for o in result if o.correct]
    if len(right) != 1:
        got = f"{len(right)} options ({', '.join(right)})" if right else ""
        c.add(
            data.line_of("options"),
            f"{kind} has {got or 'no option'} marked 'correct: true'; "
            f"expected exactly one {noun}",
        )
    rows = []
    if len(result) == len(options) and not c.no_tables:
        rows = _choice_variants(c, data, options, result, table, table_id, cls)
    return dict(fields, options=result, variants=table_id, rows=rows)


def _option_value(c, raw, what, table):
    """An option's (column, formula, formula line): the engine's number
    for it in each variant, and what that number must equal."""
    given = [k for k in ("column", "formula") if k in raw]
    if not given or c.no_tables:
        return None, None, None
    if table is None:
        c.add(
            raw.line_of(given[0]),
            f"{what} has '{given[0]}' but the exercise has no 'variants' "
            "table; expected 'variants: \"<snippet stem>.<table>\"' to go "
            "with option columns",
        )
    elif len(given) == 1:
        missing = "formula" if given[0] == "column" else "column"
        c.add(
            raw.line_of(given[0]),
            f"{what} has '{given[0]}' but no '{missing}'; expected both: "
            "the variants table's column holding the option's number and "
            "its formula in the lesson's symbols",
        )
    else:
        column = c.field(raw, "column", f"{what} column")
        formula = c.field(raw, "formula", f"{what} formula")
        line0 = raw.line_of("column")
        if formula and column and c.column(line0, what, column, table):
            return column, formula, c.base + raw.line_of("formula")
    return None, None, None


def _choice_variants(c, data, raws, options, table, table_id, cls):
    """The rows of a check or eliminate's variants ``table``, whose columns
    are its {placeholders}; each option's number must equal its formula,
    and no two options may read the same, in every variant."""
    note_key = cls.note[0]
    texts = [
        (f"the {key}", data.get(key), data.line_of(key))
        for key in ("question", "explanation")
    ]
    for o, raw in zip(options, raws, strict=True):
        texts.append((f"option {o.letter} text", o.text, raw.line_of("text")))
        if o.note:
            where = raw.line_of(note_key)
            texts.append((f"option {o.letter} '{note_key}'", o.note, where))
    for what, text, line0 in texts:
        if isinstance(text, str):
            _placeholders(c, text, line0, what, table, table_id)
    # Each option's formula is checked whatever else is wrong (an option
    # with no valid column has none): a contributor's three mistakes in
    # one exercise came one build at a time.
    if table is None:
        return []
    variants = _variants(table, {o.column for o in options if o.column})
    rows, symbols, _ = variants
    for o, raw in zip(options, raws, strict=True):
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
        where = raw.line_of("formula")
        _agrees(c, f"option {o.letter}", o.column, o.formula, where, variants)
    if c.problems:
        return rows
    for row in rows:
        seen: dict = {}  # the text as shown, and the number -> letter
        for o, raw in zip(options, raws, strict=True):
            keys = [" ".join(_fill(o.text, row).lower().split())]
            if o.column is not None:  # the engine's number: it agreed
                parts = answers.split(row[o.column], _shape(o.formula))
                keys.append(tuple(round(v, 9) for v in _at(parts, [{}])[0]))
            same = next((seen[k] for k in keys if k in seen), None)
            for key in keys:
                seen.setdefault(key, o.letter)
            if same is not None:
                c.add(
                    raw.line_of("text"),
                    f"in the variant {_describe(row, symbols)} option "
                    f"{o.letter} comes to the same as option {same} "
                    f"({_fill(o.text, row)!r}), so the question has two "
                    "answers there; expected variant values where no two "
                    "options coincide (change that row of the snippet)",
                )
    return rows


def _buckets(c, data, cls, _id):
    fields = c.texts(data, ("prompt",))
    buckets = c.items(data, "buckets", "buckets", 2)
    if buckets is None:
        return None
    result: list[model.Bucket] = []
    names: dict[str, int] = {}  # name -> bucket number
    items_seen: dict[str, str] = {}  # item -> which bucket
    for i, raw, what in c.mappings(
        buckets,
        lambda i: f"bucket {i + 1}",
        "'- name: …' with 'items:' and 'explanation:'",
    ):
        c.keys(raw, ("name", "items", "explanation"), (), what)
        name = c.field(raw, "name", f"{what} name")
        if name is not None:
            what = f"bucket '{name}'"
            if (first := _again(names, name, i + 1)) is not None:
                c.add(
                    raw.line_of("name"),
                    f"{what} repeats bucket {first}'s name; expected "
                    "distinct bucket names",
                )
        explanation = None
        if "explanation" in raw:
            explanation = c.field(raw, "explanation", f"{what} explanation")
        items: list[str] = []
        raw_items = raw.get("items")  # a missing one: reported by keys()
        if "items" in raw and not (isinstance(raw_items, list) and raw_items):
            c.add(
                raw.line_of("items"),
                f"{what} has no items; expected a list of at least one "
                "item ('- …')",
            )
        elif isinstance(raw_items, list):
            for k, item in enumerate(raw_items):
                line0 = raw_items.line_of(k)
                text = c.text(item, line0, f"{what} item")
                if (first := _again(items_seen, text, what)) is not None:
                    c.add(
                        line0,
                        f"item '{text}' appears twice (in {first} and "
                        f"{what}); expected each item once",
                    )
                elif text is not None:
                    items.append(text)
        result.append(model.Bucket(name or "", items, explanation or ""))
    if not c.problems:
        _buckets_match_table(c, data, result)
    return dict(fields, buckets=result)


def _buckets_match_table(c, data, buckets):
    """With ``table``, ``group_by`` and ``item_column`` the buckets are
    that table's rows grouped by one column: when a snippet's output
    changes, the build fails here instead of the slide going stale."""
    keys = model.Buckets.optional
    given = [k for k in keys if k in data]
    if not given:
        return
    if len(given) != 3:
        c.add(
            data.line_of(given[0]),
            "buckets from a table need all of 'table', 'group_by' and "
            "'item_column'; missing "
            + _quoted(k for k in keys if k not in given),
        )
        return
    table_id = c.field(data, "table", "'table'")
    group_by = c.field(data, "group_by", "group_by")
    item_col = c.field(data, "item_column", "item_column")
    if None in (table_id, group_by, item_col):
        return
    table = _table(c, data, table_id, "buckets", "table")
    if table is None:
        return
    of = f" of table '{table_id}'"
    for key, column in (("group_by", group_by), ("item_column", item_col)):
        if not c.column(data.line_of(key), key, column, table, of):
            return
    g, i = table.columns.index(group_by), table.columns.index(item_col)
    expected: dict[str, list[str]] = {}
    for row in table.rows:
        expected.setdefault(row[g], []).append(row[i])
    actual = {b.name.strip().strip("`").strip(): b.items for b in buckets}
    if {k: sorted(v) for k, v in actual.items()} == {
        k: sorted(v) for k, v in expected.items()
    }:
        return
    # The YAML to paste, each string quoted (names and items hold commas),
    # in the author's code style; a published name as its reference (typed
    # out, the paste failed the build again as a value typed by hand).
    tick = "`" * any(b.name.strip().startswith("`") for b in buckets)
    ids = {text: i for i, text in sorted(c.values.items(), reverse=True)}
    want = ["buckets:"]
    for name, items in expected.items():
        name = f"{{{{ value('{ids[name]}') }}}}" if name in ids else name
        want.append(f"  - name: {json.dumps(tick + name + tick)}")
        want.append(f"    items: {json.dumps(items, ensure_ascii=False)}")
    c.add(
        data.line_of("table"),
        f"the buckets no longer match table '{table_id}' grouped by "
        f"'{group_by}'; expected these names and items (paste them "
        "over the buckets' own, keeping each explanation):",
        "\n".join(want),
    )


def _order(c, data, cls, _id):
    fields = c.texts(data, ("prompt", "why"))
    steps = c.items(data, "steps", "order", 2)
    if steps is None:
        return None
    first: dict[str, int] = {}  # a step's text -> its number
    for i, raw in enumerate(steps, 1):
        text = c.text(raw, steps.line_of(i - 1), f"step {i}")
        if (before := _again(first, text, i)) is not None:
            c.add(
                steps.line_of(i - 1),
                f"step {i} repeats step {before}; expected distinct steps",
            )
    return dict(fields, steps=list(first))


def _fill_in(c, data, cls, ex_id):
    """Blanks whose answers the snippet engine computed, per variant: when
    mha_ref changes one, the build stops here, at the cell's formula."""
    prompt = c.texts(data, ("prompt",)).get("prompt")
    table_id, table = _variants_table(c, data, "fill-in")
    if table is None:
        return None
    raw_cells = c.items(data, "cells", "fill-in", 1)
    if raw_cells is None:
        return None
    answer_columns = {
        cell["column"]
        for cell in raw_cells
        if isinstance(cell, Mapping) and isinstance(cell.get("column"), str)
    }
    rows, symbols, scopes = variants = _variants(table, answer_columns)
    self_attention = all(s.get("t_q") == s.get("t_k") for s in scopes)
    points = _random_points(ex_id or prompt or table_id, self_attention)
    if prompt:
        line0 = data.line_of("prompt")
        _placeholders(c, prompt, line0, "the prompt", table, table_id)
    cells = [
        _fill_in_cell(c, raw, what, table, variants, points)
        for _, raw, what in c.mappings(
            raw_cells,
            lambda i: f"cell {i + 1}",
            "'- label: …' with 'column', 'formula', 'wrong' and 'otherwise'",
        )
    ]
    formulas = [cell.formula for cell in cells if cell]
    shown = {answers.canonical_symbol(col): col for col in symbols}
    for i, scope in enumerate(scopes):
        typed = {shown.get(k, k): v for k, v in scope.items()}
        _variant_apart(c, data.line_of("variants"), i, typed, formulas)
    fields = dict(prompt=prompt, variants=table_id, symbols=symbols, rows=rows)
    return dict(fields, scopes=scopes, cells=cells, points=points)


def _variant_apart(c, line: int, i: int, scope: dict, formulas) -> None:
    """Each variant gives each symbol a value of its own, and none a
    number the formulas write: else a wrong answer reads right there (a
    student's study pass: B = h = 3 took (h, B, T, T) for (B, h, T, T),
    h = 4 took h*d_model^2 for 4*d_model^2). The first, the one every
    student meets first (the deck shows it), most of all."""
    which = "the first variant" if i == 0 else f"variant {i + 1}"
    named = {k: v for k, v in scope.items() if k.lower() != "bias"}
    lengths = [k for k in named if k.lower() in ("t", "t_q", "t_k")]
    if len({named[k] for k in lengths}) == 1:  # self-attention: one T
        for k in lengths[1:]:
            named.pop(k)
    seen: dict[float, str] = {}
    for name, value in named.items():
        if value in seen:
            c.add(
                line,
                f"{which} gives {seen[value]} and {name} the same value, "
                f"{value:g}: an answer that swaps them reads right. Give "
                f"row {i + 1} of the variants table numbers that differ",
            )
        seen.setdefault(value, name)
    told = set()
    for formula in formulas:
        for number in map(float, _CONSTANT.findall(formula)):
            if number > 1 and number in seen and number not in told:
                told.add(number)
                c.add(
                    line,
                    f"{which} gives {seen[number]} the value {number:g}, a "
                    f"number the formula {formula!r} writes: an answer "
                    f"with {seen[number]} in its place reads right. Give "
                    f"row {i + 1} of the variants table another "
                    f"{seen[number]}",
                )


def _random_points(seed: str, self_attention: bool) -> list[dict[str, float]]:
    """Four consistent values of the lesson's symbols (h divides d_model),
    the same on every build, where symbolic answers are also compared."""
    rng = random.Random(seed)
    points = []
    for _ in range(4):
        h, d_k = rng.randint(2, 12), rng.randint(3, 40)
        t_q, t_k = rng.randint(2, 40), rng.randint(2, 40)
        t_k = t_q if self_attention else t_k
        point = dict(h=h, d_k=d_k, d_model=h * d_k, t=t_q, t_q=t_q, t_k=t_k)
        point.update(b=rng.randint(1, 9), bias=rng.randint(0, 1))
        points.append(point)
    return points


def _fill_in_cell(c, raw, what, table, variants, points):
    required = ("label", "column", "formula", "wrong", "otherwise")
    ok = c.keys(raw, required, (), what)
    label, column, formula, otherwise = (
        c.field(raw, key, f"{what} {key}")
        for key in ("label", "column", "formula", "otherwise")
    )
    if not ok or None in (label, column, formula, otherwise):
        return None
    if not c.column(raw.line_of("column"), what, column, table):
        return None
    shape = _shape(formula)
    where = raw.line_of("formula")
    parts = answers.split(formula, shape)
    if _at(parts, points) is None:
        c.add(
            where,
            f"{what} formula {formula!r} does not evaluate; expected "
            "arithmetic in the lesson's symbols ("
            + ", ".join(sorted(set(answers.SYMBOLS.values())))
            + "), e.g. '4*d_model^2' or '(B, h, T, T)'",
        )
        return None
    _agrees(c, what, column, formula, where, variants)
    raw_wrong = raw.get("wrong")
    if not isinstance(raw_wrong, list) or not raw_wrong:
        c.add(
            raw.line_of("wrong"),
            f"{what} has no wrong forms; expected a list of '- form: …' "
            "with 'why: …' for its common wrong answers",
        )
        return None
    scopes = variants[2]
    answer = _at(parts, scopes)
    wrong = []
    for k, item, name in c.mappings(
        raw_wrong,
        lambda k: f"{what} wrong form {k + 1}",
        "'- form: …' and 'why: …'",
    ):
        if not c.keys(item, ("form", "why"), (), name):
            continue
        form, why = (c.field(item, key, key) for key in ("form", "why"))
        if form is None or why is None:
            continue
        form_parts = answers.split(form, shape)
        if _at(form_parts, points) is None:
            problem = (
                "does not evaluate; expected arithmetic in the lesson's "
                "symbols"
            )
        elif (mine := _at(form_parts, scopes)) is None:
            problem = (
                "cannot be evaluated in every variant; expected every symbol "
                "it uses to be a column of the variants table"
            )
        elif answer is not None and all(map(_same, mine, answer)):
            problem = (
                "equals the answer in every variant, so no student could "
                "give it; expected a form that is wrong for at least one "
                "variant"
            )
        else:
            wrong.append(model.WrongForm(form, why))
            continue
        c.add(raw_wrong.line_of(k), f"wrong form {form!r} {problem}")
    return model.Cell(
        label, column, formula, shape, wrong, otherwise, c.base + where
    )


def _table(c, data, table_id, kind, key):
    """The generated table ``table_id``, or None with a problem added."""
    try:
        raw = c.tables() if callable(c.tables) else c.tables
    except TablesUnavailable as exc:
        c.no_tables = True
        c.add(
            data.line_of(key),
            f"{kind} needs table '{table_id}', but the generated tables "
            f"are unavailable ({exc}); expected the tables the snippet "
            "engine published (lessonbuild.engine.check)",
        )
        return None
    known = {str(name): value for name, value in (raw or {}).items()}
    if table_id not in known:
        listing = ", ".join(sorted(known)[:12]) or "(none were generated)"
        if len(known) > 12:
            listing += f", … ({len(known)} in all)"
        c.add(
            data.line_of(key),
            f"{kind} names unknown table '{table_id}'"
            f"{did_you_mean(table_id, known)}; expected a table a "
            f"snippet publishes (<snippet stem>.<name>): {listing}",
        )
        return None
    rows = [[str(x) for x in row] for row in known[table_id]["rows"]]
    return Table([str(col) for col in known[table_id]["columns"]], rows)


def _variants_table(c, data, kind):
    """(table id, table) of the ``variants`` table with at least two rows;
    the table None after a problem, both when there is none."""
    if "variants" not in data:
        return None, None
    table_id = c.field(data, "variants", "'variants'")
    table = table_id and _table(c, data, table_id, kind, "variants")
    if table and len(table.rows) < 2:
        c.add(
            data.line_of("variants"),
            f"table '{table_id}' has {len(table.rows)} row(s); expected at "
            'least two variants, so "Try another" has another to draw',
        )
        return table_id, None
    return table_id, table


def _variants(table: Table, answer_columns):
    """(rows, symbols, scopes): each row by column; the table's columns
    that give a variant (named like the lesson's symbols, and not an
    answer); and each variant's values of the symbols."""
    rows = [dict(zip(table.columns, row, strict=True)) for row in table.rows]
    symbols = [
        col
        for col in table.columns
        if col not in answer_columns and answers.canonical_symbol(col)
    ]
    scopes = []
    for row in rows:
        scope = {}
        for col in symbols:
            parts = answers.split(row[col], False)
            value = answers.values(parts[0], {}) if parts else None
            if isinstance(value, float):
                scope[answers.canonical_symbol(col)] = value
        if "d_k" not in scope and {"d_model", "h"} <= set(scope):
            scope["d_k"] = scope["d_model"] / scope["h"]
        # T alone is self-attention: T_q = T_k = T, the lesson's names
        # for the weights' axes, (B, h, T_q, T_k).
        if "t" in scope and not {"t_q", "t_k"} & set(scope):
            scope["t_q"] = scope["t_k"] = scope["t"]
        scopes.append(scope)
    return rows, symbols, scopes


def _fill(text: str, row: dict[str, str]) -> str:
    """``text`` with each {column} replaced by the variant's value."""
    return PLACEHOLDER.sub(lambda m: row.get(m[1], m[0]), text)


def _placeholders(c, text, line0, what, table, table_id) -> None:
    """Each {name} in ``text`` is a column of the variants table, and
    outside math (the page swaps the number in a span, which TeX would
    not take)."""
    for math in _MATH.finditer(text):
        for name in PLACEHOLDER.findall(math[0]):
            c.add(
                line0,
                f"{what} puts {{{name}}} inside math ({math[0]!r}); "
                f"expected it outside the math, e.g. '\\(h\\) = {{h}}'",
            )
    for name in PLACEHOLDER.findall(_MATH.sub("", text)):
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
                f"no column for{did_you_mean(name, table.columns)}; "
                "expected one of: " + _quoted(table.columns, "{", "}"),
            )


def _agrees(c, what, column, formula, where, variants) -> None:
    """The engine's value in ``column`` equals ``formula`` in every
    variant; each disagreement is a problem at line ``where``."""
    rows, symbols, scopes = variants
    shape = _shape(formula)
    parts = answers.split(formula, shape)
    for row, scope in zip(rows, scopes, strict=True):
        engine = answers.split(row[column], shape)
        want = _at(parts, [scope])
        got = _at(engine, [{}])
        if want is None:
            c.add(
                where,
                f"{what} formula {formula!r} cannot be evaluated for the "
                f"variant {_describe(row, symbols)}; expected every symbol "
                "it uses to be a column of the variants table",
            )
            return
        if got is None or not _same(got[0], want[0]):
            c.add(
                where,
                f"{what} ({column}), variant {_describe(row, symbols)}: the "
                f"snippet engine computed {row[column]!r}, but the formula "
                f"{formula!r} gives {_show(want[0])}; mha_ref or the formula "
                "changed: expected them to agree (fix whichever is wrong, "
                "then rebuild)",
            )


def _shape(formula: str) -> bool:
    """Is the answer a shape (a tuple of axes) rather than one number?"""
    return formula.lstrip().startswith(("(", "["))


def _describe(row: dict[str, str], symbols: list[str]) -> str:
    return ", ".join(f"{s}={row[s]}" for s in symbols) or "(no symbols)"


def _at(parts, scopes):
    """Each scope's values of ``parts`` (a list per scope), or None."""
    if not parts:
        return None
    out = [[answers.values(p, scope) for p in parts] for scope in scopes]
    floats = all(isinstance(v, float) for vals in out for v in vals)
    return out if floats else None


def _same(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(map(answers.close, a, b))


def _show(values: list[float]) -> str:
    text = [f"{v:,.0f}" if v == int(v) else f"{v:g}" for v in values]
    return f"({', '.join(text)})" if len(text) > 1 else text[0]


#: Each kind's builder but _texts': (checker, data, class, id) -> its
#: fields besides the common ones, or None; used only when no problem was
#: added.
_BUILD = {
    "check": _choices,
    "eliminate": _choices,
    "buckets": _buckets,
    "order": _order,
    "fill-in": _fill_in,
}
