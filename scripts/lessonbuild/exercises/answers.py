"""When does a typed fill-in answer mean the expected one?

A fill-in cell's answer is a number or a shape, and a student may write
it in any form the lesson or PyTorch uses: ``(2, 5, 8)``, ``[2, 5, 8]``,
``torch.Size([2, 5, 8])``, ``2 × 5 × 8``; ``1,048,576``, ``1048576``,
``2^20``, ``4*512**2``, ``1.048576e6``, ``1M``; or an expression in the
lesson's symbols, ``4 d_model^2``, ``4*d_model**2``, ``(d_model,
d_model/h)``. Two answers are the same when every axis has the same
value: at the variant's own numbers, and, when the answer uses symbols,
at several random values of them too (so ``d_model^2 * h / 2`` is not
mistaken for ``4 d_model^2`` just because ``h = 8``).

Expressions are read by sympy's parser (with implicit multiplication and
``^`` for powers), never by a parser of our own. The browser does the
same with mathjs (docs/assets/exercises.js); both read the shared cases
in tests/exercise_fixtures/answer_cases.json.

The steps, here and in the browser:

1. ``split``: lower-case, unicode operators to ASCII (``·`` ``×`` ``÷``
   ``−``, superscript digits), ``**`` to ``^``, ``torch.Size(...)`` and
   the outer brackets dropped; a shape is cut at its commas (or at ``×``
   when it has none), a number loses its thousands separators.
2. ``values``: each part evaluated in a scope of symbol values; a part
   may be a chain ``4*8^2 = 256`` whose sides must all agree; ``1M``,
   ``2.5k`` are rounded numbers, right when the value rounds to them
   (or is exactly ``2^20`` for ``1M``).
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

__all__ = [
    "SYMBOLS",
    "canonical_symbol",
    "close",
    "split",
    "uses_symbols",
    "values",
]

#: The lesson's symbols (ARCHITECTURE.md, Notation), lower-cased as typed
#: answers are; the keys are what a student may type.
SYMBOLS = {
    "d_model": "d_model",
    "dmodel": "d_model",
    "d_k": "d_k",
    "dk": "d_k",
    "h": "h",
    "t": "t",
    "t_q": "t_q",
    "t_k": "t_k",
    "b": "b",
    "bias": "bias",
}

_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")
_THOUSANDS = re.compile(r"(?<=\d)[,_\u202f\u2009 ](?=\d{3}(?!\d))")
_ALLOWED = re.compile(r"^[0-9a-z_.+\-*/^() ]+$")
_NAME = re.compile(r"[a-z_][a-z0-9_]*")
#: A number as Python and mathjs read it (``1.048576e6`` is no name).
_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?")
_ROUNDED = re.compile(r"^(\d+(?:\.\d+)?)\s*([kmg])$")
_TORCH_SIZE = re.compile(r"^torch\s*\.\s*size\s*\((.*)\)$", re.DOTALL)


def canonical_symbol(name: str) -> str | None:
    """The scope key a typed or published name stands for, or None."""
    return SYMBOLS.get(name.strip().lower())


def _common(text: str) -> str:
    s = str(text).strip().lower()
    s = s.replace("\u2212", "-").replace("÷", "/")
    for times in ("·", "⋅", "\u2217"):
        s = s.replace(times, "*")
    s = s.replace("**", "^")
    return re.sub(
        r"[⁰¹²³⁴⁵⁶⁷⁸⁹]+", lambda m: "^" + m[0].translate(_SUPERSCRIPT), s
    )


def _unwrap(s: str) -> str:
    """Drop brackets around the whole text: ``([2, 5])`` -> ``2, 5``."""
    while len(s) >= 2 and s[0] in "([" and s[-1] in ")]":
        depth = 0
        for i, ch in enumerate(s):
            depth += ch in "(["
            depth -= ch in ")]"
            if depth == 0 and i < len(s) - 1:
                return s  # the first bracket closes early: "(a)*(b)"
        s = s[1:-1].strip()
    return s


def _cut(s: str, separators: str) -> list[str]:
    """Split at top-level ``separators`` (not inside brackets)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(s):
        depth += ch in "(["
        depth -= ch in ")]"
        if depth == 0 and ch in separators:
            parts.append(s[start:i])
            start = i + 1
    parts.append(s[start:])
    return [p.strip() for p in parts]


def split(text: str, shape: bool) -> list[str] | None:
    """The parts of an answer: one per axis of a shape, one for a number.
    None when there is nothing to read."""
    s = _common(text)
    m = _TORCH_SIZE.match(s)
    if m:
        s = m[1].strip()
    if shape:
        s = _unwrap(s)
        parts = _cut(s, ",")
        if parts and parts[-1] == "" and len(parts) > 1:
            parts = parts[:-1]  # "(5,)": a one-axis tuple
        if len(parts) == 1:
            parts = _cut(re.sub(r"\s+x\s+", "×", parts[0]), "×")
    else:
        s = s.replace("×", "*")
        while _THOUSANDS.search(s):
            s = _THOUSANDS.sub("", s)
        parts = [s]
    parts = [p.replace("×", "*") for p in parts]
    if not parts or any(not p for p in parts):
        return None
    return parts


def uses_symbols(parts: list[str]) -> bool:
    """Does any part name a symbol (``1M``'s ``M`` is a unit, not one)?"""
    return any(
        not _ROUNDED.match(p) and _NAME.search(_NUMBER.sub(" ", p))
        for p in parts
    )


@lru_cache(maxsize=4096)
def _parse(side: str):
    """A sympy expression for one side, or None (unknown names, junk)."""
    if not side or not _ALLOWED.match(side):
        return None
    names = set(_NAME.findall(_NUMBER.sub(" ", side)))
    if any(canonical_symbol(n) is None for n in names):
        return None
    from sympy import Symbol
    from sympy.parsing.sympy_parser import (
        convert_xor,
        implicit_multiplication,
        parse_expr,
        standard_transformations,
    )

    local = {n: Symbol(canonical_symbol(n)) for n in names}
    try:
        return parse_expr(
            side,
            local_dict=local,
            transformations=standard_transformations
            + (implicit_multiplication, convert_xor),
        )
    except Exception:  # noqa: BLE001 - any parse failure: not an answer
        return None


def _evaluate(side: str, scope: dict[str, float]) -> float | None:
    expr = _parse(side)
    if expr is None:
        return None
    try:
        missing = {s.name for s in expr.free_symbols} - set(scope)
        if missing:
            return None
        subs = {s: scope[s.name] for s in expr.free_symbols}
        value = complex(expr.evalf(subs=subs))
    except Exception:  # noqa: BLE001 - division by zero, overflow, ...
        return None
    if value.imag or not math.isfinite(value.real):
        return None
    return value.real


def close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def _rounded(part: str) -> tuple[float, float, float] | None:
    """``1M`` -> (1e6 value, half a unit of its last digit, 2^20 value)."""
    m = _ROUNDED.match(part)
    if not m:
        return None
    power = "kmg".index(m[2]) + 1
    digits = len(m[1].split(".")[1]) if "." in m[1] else 0
    number = float(m[1])
    decimal = number * 1000**power
    # Half a unit of its last digit, and never more than 5 %: "1M" is
    # 1,048,576 or 1,000,000 give or take, not 786,432.
    tolerance = min(0.5 * 1000**power / 10**digits, 0.05 * decimal)
    return decimal, tolerance, number * 1024**power


def values(part: str, scope: dict[str, float]) -> float | tuple | None:
    """The value of one part in ``scope``: a float, a rounded number as
    (value, tolerance, binary value), or None when it cannot be read or
    the sides of a chain ``a = b`` disagree."""
    rounded = _rounded(part)
    if rounded is not None:
        return rounded
    sides = [_evaluate(side.strip(), scope) for side in part.split("=")]
    if not sides or any(v is None for v in sides):
        return None
    if not all(close(v, sides[0]) for v in sides):
        return None
    return sides[0]


def matches(value, target: float) -> bool:
    """Does a part's value (from ``values``) equal ``target``?"""
    if value is None:
        return False
    if isinstance(value, tuple):
        decimal, tolerance, binary = value
        return abs(decimal - target) <= tolerance or close(binary, target)
    return close(value, target)


def _same_as(parts, scope, points, at_variant, at_points) -> bool:
    mine = [values(p, scope) for p in parts]
    if len(mine) != len(at_variant):
        return False
    if not all(matches(v, t) for v, t in zip(mine, at_variant, strict=True)):
        return False
    if not uses_symbols(parts):
        return True
    # At other values of the symbols, a chain's plain numbers
    # ("4 d_model^2 = 1,048,576") no longer apply: its symbolic sides do.
    parts = [_symbolic_sides(p) for p in parts]
    return all(
        matches(values(p, point), target)
        for point, targets in zip(points, at_points, strict=True)
        for p, target in zip(parts, targets, strict=False)
    )


def _symbolic_sides(part: str) -> str:
    sides = [x for x in part.split("=") if uses_symbols([x.strip()])]
    return "=".join(sides) if sides else part


def judge(text: str, cell: dict, v: int, spec: dict) -> dict:
    """The verdict on one typed answer, as the browser gives it:
    ``{"ok": True}``, or ``{"ok": False, "wrong": k}`` (the author's
    wrong form k matched; -1: none did). ``cell`` and ``spec`` are the
    fill-in's spec (render.fill_in_view), ``v`` the variant shown."""
    parts = split(text, cell["shape"])
    if not parts:
        return {"ok": False, "wrong": -1}
    scope, points = spec["scopes"][v], spec["points"][v]
    if _same_as(parts, scope, points, cell["answer"][v], cell["points"][v]):
        return {"ok": True}
    for k, w in enumerate(cell["wrong"]):
        if _same_as(parts, scope, points, w["variants"][v], w["points"][v]):
            return {"ok": False, "wrong": k}
    return {"ok": False, "wrong": -1}
