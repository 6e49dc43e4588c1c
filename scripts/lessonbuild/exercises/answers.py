"""Read a fill-in's answers and formulas the way a student may write them.

A number or a shape in any form the lesson or PyTorch uses (``(2, 5, 8)``,
``torch.Size([2, 5, 8])``, ``2 × 5 × 8``, ``1,048,576``, ``2^20``,
``1M``), or an expression in the lesson's symbols (``4 d_model^2``).
The build evaluates formulas here; the browser (docs/assets/judge.js)
judges typed answers against their values, on the shared cases of
tests/exercise_fixtures/answer_cases.json. ``values`` uses sympy's
parser, never one of our own.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from itertools import accumulate

#: What a student may type (lower-cased) -> the lesson's symbol
#: (ARCHITECTURE.md, Notation): "Tq" and "num_heads" were refused as
#: unreadable (a fresh-eyes student).
SYMBOLS = {
    "dmodel": "d_model",
    "dk": "d_k",
    "tq": "t_q",
    "tk": "t_k",
    "num_heads": "h",
} | {s: s for s in ("d_model", "d_k", "h", "t", "t_q", "t_k", "b", "bias")}

_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")
_OPERATORS = str.maketrans("\u2212÷·⋅\u2217", "-/***")
_THOUSANDS = re.compile(r"(?<=\d)[,_\u202f\u2009 ](?=\d{3}(?!\d))")
_ALLOWED = re.compile(r"^[0-9a-z_.+\-*/^() ]+$")
_NAME = re.compile(r"[a-z_][a-z0-9_]*")
#: A number as Python and mathjs read it (``1.048576e6`` is no name).
_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?")
_ROUNDED = re.compile(r"^(\d+(?:\.\d+)?)\s*([kmg])$")
#: "2 x 5", "2x5" and "2X5" (lower-cased): an axis each side of an x.
_TIMES = re.compile(r"([0-9a-z_)])\s*x\s*(?=[0-9a-z_(])")
#: "2 5 8", "b t d_model" (as NumPy prints a shape): numbers and names
#: with only spaces between them, an axis each.
_ATOMS = re.compile(
    r"(?:[0-9.]+|[a-z_][a-z0-9_]*)(?:\s+(?:[0-9.]+|[a-z_][a-z0-9_]*))+"
)
_TORCH_SIZE = re.compile(r"^torch\s*\.\s*size\s*\((.*)\)$", re.DOTALL)


def canonical_symbol(name: str) -> str | None:
    """The scope key a typed or published name stands for, or None."""
    return SYMBOLS.get(name.strip().lower())


def _common(text: str) -> str:
    # "//" as Python writes d_model // h: the lesson's sizes divide
    # exactly, so it is the division.
    s = str(text).strip().lower().translate(_OPERATORS)
    s = s.replace("**", "^").replace("//", "/")
    return re.sub(
        r"[⁰¹²³⁴⁵⁶⁷⁸⁹]+", lambda m: "^" + m[0].translate(_SUPERSCRIPT), s
    )


def _unwrap(s: str) -> str:
    """Drop brackets around the whole text: ``([2, 5])`` -> ``2, 5``."""
    while len(s) >= 2 and s[0] in "([" and s[-1] in ")]":
        if 0 in accumulate((c in "([") - (c in ")]") for c in s[:-1]):
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
    """The parts of an answer, one per axis of a shape (cut at commas, else
    at ``×``, else at spaces) or one for a number (without thousands
    separators), in ASCII; None when there is nothing to read."""
    s = _common(text)
    if m := _TORCH_SIZE.match(s):
        s = m[1].strip()
    if shape:
        s = _unwrap(s)
        parts = _cut(s, ",")
        if len(parts) > 1 and parts[-1] == "":
            parts = parts[:-1]  # "(5,)": a one-axis tuple
        if len(parts) == 1:
            parts = _cut(_TIMES.sub(r"\1×", parts[0]), "×")
        if len(parts) == 1 and _ATOMS.fullmatch(parts[0]):
            parts = parts[0].split()
    else:
        parts = [_THOUSANDS.sub("", s)]  # one pass removes them all
    parts = [p.replace("×", "*") for p in parts]
    return parts if all(parts) else None


@lru_cache(maxsize=4096)
def _compiled(side: str):
    """One side as (its symbols' names, a float function of them), or
    None. Floats, as the browser's mathjs; sympy's ``evalf(subs=...)``
    for each of a build's ~5,000 evaluations was a fifth of a warm build."""
    if not side or not _ALLOWED.match(side):
        return None
    names = set(_NAME.findall(_NUMBER.sub(" ", side)))
    if any(canonical_symbol(n) is None for n in names):
        return None
    from sympy import Symbol, lambdify
    from sympy.parsing import sympy_parser as sp

    local = {n: Symbol(canonical_symbol(n)) for n in names}
    try:
        expr = sp.parse_expr(
            side,
            local_dict=local,
            transformations=sp.standard_transformations
            + (sp.implicit_multiplication, sp.convert_xor),
        )
    except Exception:  # noqa: BLE001 - any parse failure: not an answer
        return None
    symbols = sorted(expr.free_symbols, key=lambda s: s.name)
    return [s.name for s in symbols], lambdify(symbols, expr, modules="math")


def _evaluate(side: str, scope: dict[str, float]) -> float | None:
    if (compiled := _compiled(side)) is None:
        return None
    names, function = compiled
    if any(n not in scope for n in names):
        return None
    try:
        value = complex(function(*(scope[n] for n in names)))
    except Exception:  # noqa: BLE001 - division by zero, overflow, ...
        return None
    if value.imag or not math.isfinite(value.real):
        return None
    return value.real


def close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def _rounded(part: str) -> tuple[float, float, float] | None:
    """``1M`` -> (1e6 value, half a unit of its last digit, 2^20 value)."""
    if not (m := _ROUNDED.match(part)):
        return None
    power = "kmg".index(m[2]) + 1
    digits = len(m[1].partition(".")[2])
    number = float(m[1])
    decimal = number * 1000**power
    # Half a unit of its last digit, and never more than 5 %: "1M" is
    # 1,048,576 or 1,000,000 give or take, not 786,432.
    tolerance = min(0.5 * 1000**power / 10**digits, 0.05 * decimal)
    return decimal, tolerance, number * 1024**power


def values(part: str, scope: dict[str, float]) -> float | tuple | None:
    """One part's value in ``scope``: a float, a rounded number (``1M``)
    as (value, tolerance, binary value), or None when it cannot be read or
    the sides of a chain ``4*8^2 = 256`` disagree."""
    if (rounded := _rounded(part)) is not None:
        return rounded
    sides = [_evaluate(side.strip(), scope) for side in part.split("=")]
    if None in sides or not all(close(v, sides[0]) for v in sides):
        return None
    return sides[0]
