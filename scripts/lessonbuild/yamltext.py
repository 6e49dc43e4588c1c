"""The one reader of the project's own YAML: front matter and exercises.

Each mapping and sequence keeps the 0-based line of each key and item; a
duplicate key is reported, not kept last; an alias is refused before
anything is built (an alias bomb). libyaml parses where PyYAML has it:
5.6 against 25.8 ms for the lesson's front matter, paid by every edit.
"""

from __future__ import annotations

import re

import yaml

_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Mapping(dict):
    """A YAML mapping that remembers the 0-based line of each key (an
    empty one stands for front matter with no keys)."""

    line: int = 0

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.key_lines: dict = {}

    def line_of(self, key) -> int:
        return self.key_lines.get(key, self.line)


class Sequence(list):
    """A YAML sequence that remembers the 0-based line of each item."""

    line: int = 0
    item_lines: list

    def line_of(self, index: int) -> int:
        inside = 0 <= index < len(self.item_lines)
        return self.item_lines[index] if inside else self.line


class YamlProblem(Exception):
    """The YAML does not parse; `line` is 0-based within the text."""

    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line, self.message = line, message


class _Loader(_BASE):
    def __init__(self, stream):
        super().__init__(stream)
        self.duplicates: list[tuple[int, str]] = []  # (0-based line, key)


class _TextNumbers(_Loader):
    """Numbers and dates keep their source text (an exercise's values are
    display text: `0.10` stays as typed)."""


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> Mapping:
    loader.flatten_mapping(node)
    result = Mapping()
    result.line = node.start_mark.line
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, dict):  # `answer: {{ value("x") }}`
            raise YamlProblem(
                key_node.start_mark.line,
                "a value starting with '{' is a YAML mapping, not text: "
                "unquoted, '{{ value(...) }}' reads as one; write the "
                "value as a block scalar (|, the text on the next lines) "
                "or quote it",
            )
        if not isinstance(key, str | int | float | bool):
            raise YamlProblem(
                key_node.start_mark.line, f"unsupported key {key!r}"
            )
        if key in result:
            loader.duplicates.append((key_node.start_mark.line, str(key)))
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = key_node.start_mark.line
    return result


def _construct_sequence(loader: _Loader, node: yaml.SequenceNode) -> Sequence:
    result = Sequence(
        loader.construct_object(child, deep=True) for child in node.value
    )
    result.line = node.start_mark.line
    result.item_lines = [child.start_mark.line for child in node.value]
    return result


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
_Loader.add_constructor("tag:yaml.org,2002:seq", _construct_sequence)
for _tag in ("int", "float", "timestamp"):
    _TextNumbers.add_constructor(
        f"tag:yaml.org,2002:{_tag}", lambda loader, node: node.value
    )


def load_yaml(
    text: str, *, numbers_as_text: bool = True
) -> tuple[object, list[tuple[int, str]]]:
    """Parse ``text``: (value, duplicate keys as (0-based line, key)).
    Raises YamlProblem when the YAML is invalid or holds an alias."""
    try:
        # libyaml's events first: refused at the first alias, nothing built.
        for event in yaml.parse(text, Loader=_BASE):
            if isinstance(event, yaml.AliasEvent):
                raise YamlProblem(
                    event.start_mark.line,
                    "aliases (*name) are not allowed; write the value out",
                )
        loader = (_TextNumbers if numbers_as_text else _Loader)(text)
        try:
            value = loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line if mark is not None else 0
        what = exc.problem or exc.context or "invalid YAML"
        if what == "found character that cannot start any token" and mark:
            # libyaml leaves out which character (PyYAML's own names it).
            row = (text.splitlines()[line : line + 1] or [""])[0]
            char = row[mark.column : mark.column + 1]
            what = f"found character {char!r} that cannot start any token"
        # An unclosed quote runs on into the lines below, and YAML stops
        # lines later ("did not find expected key" under an unclosed
        # title: a contributor): point at the quote.
        if quote := _unclosed_quote(text.splitlines(), line - 1):
            opened, mark = quote
            below = line - opened
            what = (
                f"this line opens a {mark} quote it does not close (YAML "
                f"read on and stopped {below} line{'s' * (below != 1)} "
                f"below: {what}); close it on this line"
            )
            line = opened
        raise YamlProblem(line, what) from None
    except yaml.YAMLError as exc:
        raise YamlProblem(0, str(exc)) from None
    return value, loader.duplicates


_QUOTED = {
    '"': re.compile(r'"(?:[^"\\]|\\.)*"\s*(?:#.*)?'),
    "'": re.compile(r"'(?:[^']|'')*'\s*(?:#.*)?"),
}


def _unclosed_quote(lines: list[str], upto: int) -> tuple[int, str] | None:
    """(0-based line, quote) of the last line at or above ``upto`` whose
    ``key: value`` opens a quote that neither it nor a line below it (to
    ``upto``) closes, or None. (A quoted value may span lines: one that
    a later line closes, an odd count of its quote there, is no fault.)"""
    for i in range(min(upto, len(lines) - 1), -1, -1):
        _, colon, value = lines[i].strip().removeprefix("- ").partition(":")
        value = value.strip()
        if colon and value[:1] in _QUOTED:
            mark = value[0]
            if _QUOTED[mark].fullmatch(value):
                continue
            below = lines[i + 1 : upto + 1]
            odd = any(b.replace(mark * 2, "").count(mark) % 2 for b in below)
            return None if odd else (i, mark)
    return None
