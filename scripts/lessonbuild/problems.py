"""One way to report what is wrong: ``Problem``s, collected, then one failure.

Every check (deck, engine, exercises, plugin) appends ``Problem(path,
line, message, detail)`` to a list and carries on, so a contributor
sees every problem at once; ``report`` makes one text of them, and the
caller stops once: ``mkdocs build`` logs it and raises MkDocs' ``Abort``
(``build.Build.fail``), ``mkdocs serve`` shows it on every page (serve
would wait forever for a build that aborts), the CLI prints it and
exits 1.
"""

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


MAX_DETAIL_CHARS = 4000  # of a diff or traceback shown for one problem
MAX_MESSAGE_CHARS = 1000  # it may quote a snippet's stderr


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
        message = _cut(self.message, MAX_MESSAGE_CHARS, "... ")
        detail = _cut(self.detail, MAX_DETAIL_CHARS, "\n... ")
        lines = [f"{self.path}:{self.line}: {message}"]
        lines += ["    " + s if s else "" for s in detail.splitlines()]
        return "\n".join(lines)


def _cut(text: str, limit: int, joint: str) -> str:
    """``text`` up to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return (
        f"{text[:limit]}{joint}({len(text) - limit} more characters not shown)"
    )


def report(problems: list[Problem]) -> str:
    """All problems, one block each, by file and line, then their count.
    (A drift ends on its own "accept with" line: outputs.compare.) A
    block found twice is shown once: two references on one line naming
    the same missing exercise were two lines no one could tell apart. In
    the order found, one page's read 76, 73, 74, 88 (checks run by kind,
    not by line: a contributor's first exercise)."""
    ordered = sorted(problems, key=lambda p: (p.path, p.line))
    lines = list(dict.fromkeys(str(p) for p in ordered))
    n = len(lines)
    return "\n".join([*lines, f"{n} problem{'' if n == 1 else 's'} found."])


def did_you_mean(word: str, choices) -> str:
    """A hint naming the closest of ``choices``, or nothing."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""
