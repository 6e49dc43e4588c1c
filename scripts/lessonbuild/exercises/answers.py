"""When does a typed fill-in answer mean the expected one?

The same rules run twice: here, when the site is built (a fill-in whose
own expected value or listed forms fail them is refused), and in
docs/assets/exercises.js (``sameCell``), when a student presses Check.
Keep the two in step; tests/test_exercises.py holds the shared cases.

An answer matches when, after normalising both sides, it is

- the same text: case, spaces and thousands separators ignored
  (``1,048,576`` = ``1048576`` = ``1 048 576``), ``·``/``×`` read as
  ``*``, superscript digits as powers (``8²`` = ``8^2``), the brackets
  around a tuple optional (``(2, 5, 8)`` = ``2,5,8``);
- or the same number: the expected value's last ``=`` side is a number
  and every side of the answer is arithmetic with that value
  (``256``, ``4*8^2``, ``4*8^2=256`` all mean ``4·8²=256``);
- or one of the forms the author listed (``accept:``), by the same rules.
"""

from __future__ import annotations

import ast
import operator
import re

__all__ = ["forms", "matches", "value"]

_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")
_THOUSANDS = re.compile(r"(?<=\d)[,_ ](?=\d{3}(?!\d))")
_ARITHMETIC = re.compile(r"[0-9.+\-*/^()]+")


def _common(text: str) -> str:
    s = str(text).strip().lower().replace("\u2212", "-")
    for times in ("·", "×", "⋅", "\u2217"):
        s = s.replace(times, "*")
    s = s.replace("**", "^")
    return re.sub(
        r"[⁰¹²³⁴⁵⁶⁷⁸⁹]+", lambda m: "^" + m[0].translate(_SUPERSCRIPT), s
    )


def _squash(s: str) -> str:
    return re.sub(r"\s+", "", s)


def _unbracket(s: str) -> str:
    """``(2,5,8)`` -> ``2,5,8``: a tuple's brackets are optional."""
    if s.startswith("(") and s.endswith(")") and "," in s:
        inner = s[1:-1]
        if "(" not in inner and ")" not in inner:
            return inner
    return s


def forms(text: str) -> set[str]:
    """The normal forms of ``text`` (two orders of the same steps, so
    ``2,500,8`` and ``2, 500, 8`` agree whichever way it was typed)."""
    s = _common(text)
    out = {_squash(_THOUSANDS.sub("", s)), _THOUSANDS.sub("", _squash(s))}
    return {_unbracket(f) for f in out if f}


def _evaluate(expr: str) -> float | None:
    """An arithmetic side (digits, + - * / ^ and brackets), or None."""
    if not expr or not _ARITHMETIC.fullmatch(expr):
        return None
    try:
        tree = ast.parse(expr.replace("^", "**"), mode="eval")
    except SyntaxError:
        return None
    ops = {
        ast.Add: operator.add,
        ast.Sub: operator.sub,
        ast.Mult: operator.mul,
        ast.Div: operator.truediv,
        ast.Pow: operator.pow,
    }

    def walk(node):
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(
            node.value, int | float
        ):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > 64:
                raise ValueError("exponent too large")
            return ops[type(node.op)](left, right)
        raise ValueError("not arithmetic")

    try:
        return float(walk(tree))
    except (ValueError, ZeroDivisionError, OverflowError, TypeError):
        return None


def value(text: str) -> float | None:
    """The number an expected value ends on (``4·8²=256`` -> 256)."""
    s = _squash(_THOUSANDS.sub("", _common(text)))
    return _evaluate(s.split("=")[-1])


def _same_number(given: str, expected: str) -> bool:
    target = value(expected)
    if target is None:
        return False
    sides = _squash(_THOUSANDS.sub("", _common(given))).split("=")
    values = [_evaluate(side) for side in sides]
    if not values or any(v is None for v in values):
        return False
    return all(abs(v - target) <= 1e-9 * max(1.0, abs(target)) for v in values)


def matches(given: str, expected: str, accept: list[str] = ()) -> bool:
    """Does the typed ``given`` mean ``expected`` (or a listed form)?"""
    if not str(given).strip():
        return False
    for want in (expected, *accept):
        if forms(given) & forms(want) or _same_number(given, want):
            return True
    return False
