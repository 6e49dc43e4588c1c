"""Answers that must be earned, across the whole deck.

A student who notices that the answer is always option A, or that an
elimination slide already answered the check on the next slide, learns
nothing from either. The build refuses a deck where more than half of
the check and eliminate exercises have their correct option in one
position, and any two that offer the same set of options.
"""

from __future__ import annotations

from collections import Counter

from .model import Check, Eliminate, Exercise, Problem

__all__ = ["MIN_FOR_SPREAD", "check_spread", "option_key"]

#: Below this many choice exercises a spread says nothing.
MIN_FOR_SPREAD = 4


def option_key(ex: Check | Eliminate) -> frozenset[str]:
    """The exercise's options as a set, ignoring order, case and spaces."""
    return frozenset(" ".join(o.text.lower().split()) for o in ex.options)


def check_spread(found: list[tuple[str, Exercise]]) -> list[Problem]:
    """``found``: (path, exercise) for every exercise of the deck."""
    choices = [
        (path, ex) for path, ex in found if isinstance(ex, Check | Eliminate)
    ]
    problems = []
    seen: dict[frozenset[str], tuple[str, Exercise]] = {}
    for path, ex in choices:
        key = option_key(ex)
        if key in seen:
            first_path, first = seen[key]
            problems.append(
                Problem(
                    path,
                    ex.line,
                    f"this {ex.kind} offers the same options as the "
                    f"{first.kind} at {first_path}:{first.line}, so one "
                    "answers the other; expected a different question "
                    "with its own options (or one merged exercise)",
                )
            )
        else:
            seen[key] = (path, ex)
    if len(choices) >= MIN_FOR_SPREAD:
        positions = Counter(
            next(o.letter for o in ex.options if o.correct)
            for _, ex in choices
        )
        letter, count = positions.most_common(1)[0]
        if count * 2 > len(choices):
            where = ", ".join(
                f"{path}:{ex.line}"
                for path, ex in choices
                if next(o.letter for o in ex.options if o.correct) == letter
            )
            problems.append(
                Problem(
                    choices[0][0],
                    choices[0][1].line,
                    f"{count} of the {len(choices)} check/eliminate "
                    f"exercises have their correct option at {letter} "
                    f"({where}); expected at most half in one position: "
                    "reorder some exercises' options",
                )
            )
    return problems
