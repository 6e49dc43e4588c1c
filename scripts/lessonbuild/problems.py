"""One way to report what is wrong: ``Problem``s, collected, then one failure.

Every check in the package (deck, engine, exercises, plugin) appends
``Problem(path, line, message, detail)`` to a list and carries on, so a
contributor sees every problem of a build at once. Then ``report`` makes
one text of them all, and the caller stops once:

- ``mkdocs build`` (``build.Build.fail``) logs the report and raises
  MkDocs' ``Abort``, leaving no site folder behind;
- ``mkdocs serve`` shows the report on every page instead (the failure
  page), since serve waits forever for a build that aborts;
- the CLI (``python -m lessonbuild check``, ``fastcheck``) prints it and
  exits 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    """What sort of problem: groups problems for the reader and the
    advice. A ``Kind`` compares equal to its value (``"drift"``)."""

    ERROR = "error"
    #: An Output block differs from its snippet's output:
    #: ``make update-outputs`` accepts the new one.
    DRIFT = "drift"
    TABLE = "table"  # a published table, value or figure
    NO_OUTPUT = "no-output"  # a snippet prints; no Output block follows
    UNUSED = "unused"  # a snippet no page includes
    MISSING = "missing"  # an include of a file or section that is not there
    INLINE = "inline"  # Python typed into a page, not included
    ORPHAN = "orphan"  # an Output block with no snippet's code above it


#: Longest detail (a diff, a traceback tail) shown for one problem.
MAX_DETAIL_CHARS = 4000
#: Longest message (it may quote a snippet's last line of stderr).
MAX_MESSAGE_CHARS = 1000


@dataclass
class Problem:
    """One problem at a file and a 1-based line (paths relative to root).

    ``kind`` is a ``Kind`` (given as one or as its value).
    """

    path: str
    line: int
    message: str
    detail: str = ""
    kind: Kind = Kind.ERROR

    def __post_init__(self):
        self.kind = Kind(self.kind)  # an unknown kind fails here, loudly

    def __str__(self) -> str:
        message = _cut(self.message, MAX_MESSAGE_CHARS, "... ")
        head = f"{self.path}:{self.line}: {message}"
        if not self.detail:
            return head
        detail = _cut(self.detail, MAX_DETAIL_CHARS, "\n... ")
        body = "\n".join("    " + s if s else "" for s in detail.splitlines())
        return head + "\n" + body


def _cut(text: str, limit: int, joint: str) -> str:
    """``text`` up to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return (
        f"{text[:limit]}{joint}({len(text) - limit} more characters not shown)"
    )


def report(problems: list[Problem], advice: str = "") -> str:
    """All problems, one block each, then a count and the advice."""
    lines = [str(p) for p in problems]
    if advice:
        lines.append(advice)
    n = len(problems)
    lines.append(f"{n} problem{'' if n == 1 else 's'} found.")
    return "\n".join(lines)
