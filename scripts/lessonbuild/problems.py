"""The one error type: every check appends ``Problem``s and carries on,
so a contributor sees every problem at once; ``report`` makes one text
of them and the caller fails once (build.Build.fail, the CLI)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    """What sort of problem (a ``Kind`` equals its value: ``"drift"``)."""

    ERROR = "error"
    DRIFT = "drift"  # an Output block differs: make update-outputs
    TABLE = "table"  # a published table, value or figure
    NO_OUTPUT = "no-output"  # a snippet prints; no Output block follows
    UNUSED = "unused"  # a snippet no page includes
    MISSING = "missing"  # an include of a file or section not there
    INLINE = "inline"  # Python typed into a page, not included
    ORPHAN = "orphan"  # an Output block with no snippet's code above it


@dataclass
class Problem:
    """One problem at a file (relative to the root) and a 1-based line."""

    path: str
    line: int
    message: str
    detail: str = ""
    kind: Kind = Kind.ERROR

    def __post_init__(self):
        self.kind = Kind(self.kind)  # an unknown kind fails here, loudly

    def __str__(self) -> str:
        message = _cut(self.message, 1000, "... ")  # may quote stderr
        detail = _cut(self.detail, 4000, "\n... ")  # a diff or traceback
        indented = ("    " + s if s else "" for s in detail.splitlines())
        return "\n".join([f"{self.path}:{self.line}: {message}", *indented])


def _cut(text: str, limit: int, joint: str) -> str:
    if (more := len(text) - limit) <= 0:
        return text
    return f"{text[:limit]}{joint}({more} more characters not shown)"


def report(problems: list[Problem]) -> str:
    """All problems by file and line (checks run by kind, not by line),
    each block once (two references naming one missing exercise read
    the same), then their count."""
    ordered = sorted(problems, key=lambda p: (p.path, p.line))
    lines = list(dict.fromkeys(map(str, ordered)))
    n = len(lines)
    return "\n".join([*lines, f"{n} problem{'' if n == 1 else 's'} found."])


def did_you_mean(word: str, choices) -> str:
    """A hint naming the closest of ``choices``, or nothing."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""
