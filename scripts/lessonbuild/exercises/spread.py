"""Answers that must be earned: the build refuses a deck where more than
half of the check and eliminate exercises have their correct option in
one position (the answer is "always A"), or two offer the same options
(one answers the other).
"""

from __future__ import annotations

from collections import Counter

from ..problems import Problem
from .model import Choices, Exercise

#: Below this many choice exercises a spread says nothing.
MIN_FOR_SPREAD = 4


def check_spread(found: list[tuple[str, Exercise]]) -> list[Problem]:
    """``found``: (path, exercise) for every exercise of the deck."""
    choices = [(path, ex) for path, ex in found if isinstance(ex, Choices)]
    problems = []
    seen: dict[frozenset[str], tuple[str, Choices]] = {}
    for path, ex in choices:  # options as a set: no order, case or spaces
        key = frozenset(" ".join(o.text.lower().split()) for o in ex.options)
        if key in seen:
            first_path, first = seen[key]
            message = (
                f"this {ex.kind} offers the same options as the {first.kind} "
                f"at {first_path}:{first.line}, so one answers the other; "
                "expected a different question with its own options (or one "
                "merged exercise)"
            )
            problems.append(Problem(path, ex.line, message))
        else:
            seen[key] = (path, ex)
    if len(choices) < MIN_FOR_SPREAD:
        return problems
    right = [
        (path, ex, next(o.letter for o in ex.options if o.correct))
        for path, ex in choices
    ]
    letter, count = Counter(r for _, _, r in right).most_common(1)[0]
    if count * 2 <= len(choices):
        return problems
    where = ", ".join(f"{p}:{ex.line}" for p, ex, r in right if r == letter)
    message = (
        f"{count} of the {len(choices)} check/eliminate exercises have "
        f"their correct option at {letter} ({where}); expected at most half "
        "in one position: reorder some exercises' options"
    )
    return [*problems, Problem(choices[0][0], choices[0][1].line, message)]
