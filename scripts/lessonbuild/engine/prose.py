"""Computed numbers in a slide's prose: referenced, never typed by hand.

A snippet publishes the figures its prose restates (``publish_value``) and
the slide writes ``{{ value("23_params.total") }}``. :func:`expand_values`
puts them into exercise text (HTML before mkdocs-macros sees the page);
:func:`hand_typed` finds a published value typed by hand into prose,
exercise text or notes: a number of three or more digits or a non-integer
in any spelling (``1{,}048{,}576``), or a list or shape of numbers. A
smaller integer is too common to tell, and a number shown as the result
of arithmetic on its line (``4 \\cdot 512^2 = 1{,}048{,}576``) is derived.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections import Counter
from collections.abc import Iterable, Mapping

from ..problems import Problem

VALUE_CALL = re.compile(
    r"""\{\{-?\s*value\(\s*(["'])(?P<id>[^"']+)\1\s*\)\s*-?\}\}"""
)
_NOT_PROSE = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|<!--.*?-->")
#: Thousands separators as prose and TeX write them.
_SEPARATOR = r"(?:,|\{,\}|\\,|_|\u202f|\u2009| )"
_NUMBER = re.compile(r"([+-]?)(\d+)(\.\d+)?")
#: Exercise YAML keys whose values are names or expressions, not text.
_NOT_TEXT_KEY = re.compile(
    r"\s*(?:-\s+)?(?:id|kind|table|group_by|item_column|column|formula"
    r"|form|variants|correct)\s*:"
)
_SMALL = 100
_DIGIT = re.compile(r"\d")


def expand_values(text: str, values: Mapping[str, str]) -> str:
    """``text`` with every known ``{{ value(id) }}`` replaced by its value
    (the engine reports an unknown one at its line)."""
    return VALUE_CALL.sub(lambda m: values.get(m["id"], m[0]), text)


def hand_typed(
    slides, values: Mapping[str, str], tables: Iterable[str] = ()
) -> list[Problem]:
    """Every published value typed by hand into a slide's prose; one in
    a table row is told the table (of ``tables``) its snippet publishes."""
    patterns = [
        (value_id, text, pattern)
        for value_id, text in sorted(values.items())
        if (pattern := _copy_pattern(text)) is not None
    ]
    found: Counter[tuple] = Counter()  # (path, line, typed, id, ...)
    for slide in slides:
        shows = {inc.path.rsplit("/", 1)[-1][:-3] for inc in slide.includes}
        for number, line in prose_lines(slide):
            if not _DIGIT.search(line):  # every copy has one: a sixth left
                continue
            row = line.lstrip().startswith("|")
            for value_id, text, pattern in patterns:
                for match in pattern.finditer(line):
                    if not _derived(line, match, text):
                        shown = value_id.split(".")[0] in shows
                        key = (slide.path, number, match[0].strip())
                        key += (value_id, text, row, shown)
                        found[key] += 1
    return [
        _problem(*key, times, sorted(tables)) for key, times in found.items()
    ]


def _problem(path, number, typed, value_id, text, row, shown, times, tables):
    stem = value_id.split(".")[0]
    # Arithmetic beside it can derive one number, not a list or a shape.
    derive = (
        " (or show the arithmetic that gives it, as in "
        "'4 \\cdot 512^2 = 1{,}048{,}576')"
        if len(_numbers(text)) == 1
        else ""
    )
    where = f" ({times} times on this line)" if times > 1 else ""
    own = [t for t in tables if t.split(".")[0] == stem]
    write = (
        "write the table the snippet publishes, "
        + " or ".join(f'{{{{ table("{t}") }}}}' for t in own)
        + ", so every row is what the run computed"
        if row and own
        else f'write {{{{ value("{value_id}") }}}} so the page shows what '
        f"the run computed{derive}"
    )
    # A slide showing none of the snippet's code may mean another
    # quantity with the same digits (a count of 128 beside a T = 128).
    other = (
        ""
        if shown
        else f"; this slide shows no code of snippets/{stem}.py: if its "
        f"{typed!r} is another quantity that shares the digits, publish it "
        "from the snippet that computes it and refer to that instead "
        '(CONTRIBUTING, "Numbers in prose")'
    )
    return Problem(
        path,
        number,
        f"{typed!r} is typed by hand{where}, but snippets/{stem}.py "
        f"publishes it as {value_id!r}; {write}{other}",
        kind="table",
    )


def prose_lines(slide):
    """(1-based line, text) of the prose: outside front matter and fences
    but exercises, macros removed."""
    hidden = set()
    for fence in slide.fences:
        end = len(slide.lines) if fence.end is None else fence.end
        # An exercise's text is prose; its names and formulas are not.
        hidden.update(
            i
            for i in range(fence.start, end + 1)
            if not fence.is_exercise
            or i in (fence.start, end)
            or _NOT_TEXT_KEY.match(slide.lines[i])
        )
    for i in range(slide.body_line - 1, len(slide.lines)):
        line = slide.lines[i]
        if i not in hidden and "--8<--" not in line:
            yield i + 1, _NOT_PROSE.sub(" ", line.rstrip("\r\n"))


def _numbers(text: str) -> list[str] | None:
    """The numbers of a value that is a number, a list or a shape
    (``1,048,576``; ``1, 2, 4``; ``(2, 5, 8)``), else None."""
    text = text.strip()
    if re.fullmatch(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?", text):
        return [text.replace(",", "")]
    inner = text[1:-1] if text[:1] == "(" and text[-1:] == ")" else text
    parts = [p for p in map(str.strip, inner.split(",")) if p]
    return parts if parts and all(map(_NUMBER.fullmatch, parts)) else None


def _spelled(number: str) -> str:
    """A regex for one number as prose may write it."""
    sign, whole, fraction = _NUMBER.fullmatch(number).groups()
    # Groups of three digits from the right: 1|048|576.
    groups = re.findall(r"\d{1,3}(?=(?:\d{3})*$)", whole)
    return (
        re.escape(sign)
        + (_SEPARATOR + "?").join(groups)
        + re.escape(fraction or "")
    )


def _copy_pattern(text: str):
    """A regex for hand-typed copies of a value, or None."""
    numbers = _numbers(text)
    if numbers is None:
        return None
    if len(numbers) == 1:
        n = float(numbers[0])
        if n.is_integer() and abs(n) < _SMALL:
            return None
        body = _spelled(numbers[0])
    else:
        body = r"\s*,\s*(?:and\s+)?".join(_spelled(n) for n in numbers)
        if text.strip().startswith("("):
            body = r"\(\s*" + body + r"\s*,?\s*\)"
    return re.compile(
        r"(?<![\w.,])(?<!,\s)(?<!\{,\})" + body + r"(?![\w]|[.,]\d|\s*,\s*\d)"
    )


_TEX = [
    (re.compile(r"\{,\}|\\,|\\!|\\;"), ""),
    (re.compile(r"\\cdot|\\times|·|×"), "*"),
    (re.compile(r"\\left|\\right"), ""),
    (re.compile(r"[{]"), "("),
    (re.compile(r"[}]"), ")"),
    (re.compile(r"\^"), "**"),
    (re.compile(r"(?<=\d),(?=\d{3}(?!\d))"), ""),
]

_ARITHMETIC = r"[\d\s.+\-*/()]*"


def _plain(tex: str) -> str:
    for pattern, repl in _TEX:
        tex = pattern.sub(repl, tex)
    return tex


def _derived(line: str, match, text: str) -> bool:
    """Is the copy at ``match`` the result of arithmetic right beside it
    (``4 \\cdot 512^2 = <copy>`` or ``<copy> = 4 \\cdot 512^2``)?"""
    numbers = _numbers(text)
    if numbers is None or len(numbers) != 1:
        return False
    target = float(numbers[0])
    before = line[: match.start()].rstrip()
    after = line[match.end() :].lstrip(" \\()")
    # Each side is the longest arithmetic beside the copy that reads, as
    # a reader reads it: not a part of it (512^2 of '7 \\cdot 512^2 =
    # 262{,}144').
    sides = []
    if before.endswith("="):
        side = _plain(before[:-1].split("=")[-1])
        tail = re.search(_ARITHMETIC + "$", side)[0]
        sides.append([tail[i:] for i in range(len(tail))])
    if after.startswith("="):
        head = re.match(_ARITHMETIC, _plain(after[1:].split("=")[0]))[0]
        sides.append([head[:i] for i in range(len(head), 0, -1)])
    close = 1e-9 * max(1.0, abs(target))
    for expressions in sides:  # the first that is arithmetic
        values = (v for v in map(_evaluate, expressions) if v is not None)
        if abs(next(values, math.inf) - target) <= close:
            return True
    return False


_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}


def _evaluate(expr: str) -> float | None:
    """Arithmetic with one operator at least (a bare number is a copy);
    None for anything else."""
    try:
        tree = ast.parse(expr.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(tree, ast.BinOp):
        return None

    def walk(node):
        if isinstance(node, ast.Constant) and isinstance(
            node.value, int | float
        ):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > 64:
                raise ValueError("exponent too large")
            return _OPS[type(node.op)](left, right)
        raise ValueError("not arithmetic")

    try:
        return float(walk(tree))
    except (ValueError, ZeroDivisionError, OverflowError, TypeError):
        return None
