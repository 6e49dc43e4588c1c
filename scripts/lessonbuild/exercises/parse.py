"""Load an exercise fence's YAML body, keeping the line of every value.

The deck (lessonbuild.deck) finds the fences; this module only reads the
YAML inside one, so problems can point at the line of the bad value.
Anchors and aliases are refused: an alias bomb would otherwise expand
to gigabytes before any check ran.
"""

from __future__ import annotations

import yaml


class Mapping(dict):
    """A YAML mapping that remembers the 0-based line of each key."""

    line: int = 0
    key_lines: dict

    def line_of(self, key) -> int:
        return self.key_lines.get(key, self.line)


class Sequence(list):
    """A YAML sequence that remembers the 0-based line of each item."""

    line: int = 0
    item_lines: list

    def line_of(self, index: int) -> int:
        if 0 <= index < len(self.item_lines):
            return self.item_lines[index]
        return self.line


class YamlProblem(Exception):
    """The YAML does not parse; `line` is 0-based within the body."""

    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line = line
        self.message = message


class _Loader(yaml.SafeLoader):
    """SafeLoader that keeps lines, flags duplicate keys, and keeps the
    source text of numbers and dates (`1,048,576`, `1e-5`, `0.10` stay
    exactly as typed: exercise values are display text)."""

    def __init__(self, stream):
        super().__init__(stream)
        self.duplicates: list[tuple[int, str]] = []

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            raise YamlProblem(
                self.peek_event().start_mark.line,
                "aliases (*name) are not allowed in an exercise; write "
                "the value out",
            )
        return super().compose_node(parent, index)


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> Mapping:
    loader.flatten_mapping(node)
    result = Mapping()
    result.line = node.start_mark.line
    result.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str | int | float | bool) or key is None:
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


def _construct_source_text(loader: _Loader, node: yaml.ScalarNode) -> str:
    return node.value


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
_Loader.add_constructor("tag:yaml.org,2002:seq", _construct_sequence)
for _tag in ("int", "float", "timestamp"):
    _Loader.add_constructor(
        f"tag:yaml.org,2002:{_tag}", _construct_source_text
    )


def load_yaml(text: str) -> tuple[object, list[tuple[int, str]]]:
    """Parse one fence body: (value, duplicate keys as (line, key)).

    Raises YamlProblem with a 0-based line when the YAML is invalid.
    """
    loader = _Loader(text)
    try:
        value = loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line if mark is not None else 0
        what = exc.problem or exc.context or "invalid YAML"
        raise YamlProblem(line, f"invalid YAML: {what}") from None
    except yaml.YAMLError as exc:
        raise YamlProblem(0, f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    return value, loader.duplicates
