"""One way to report what is wrong: ``Problem``s, collected, then one failure.

Every check in the package (deck, engine, exercises, plugin) appends
``Problem(path, line, message, detail)`` to a list and carries on, so a
contributor sees every problem of a build at once. ``BuildFailed`` is the
single exception that stops a build or a CLI command; it carries the
problems, and its text is the report.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Longest detail (a diff, a traceback tail) shown for one problem.
MAX_DETAIL_CHARS = 4000
#: Longest message (it may quote a snippet's last line of stderr).
MAX_MESSAGE_CHARS = 1000


@dataclass
class Problem:
    """One problem at a file and a 1-based line (paths relative to root).

    ``kind`` groups problems for the reader ("drift" means: the output
    changed and ``make update-outputs`` accepts it).
    """

    path: str
    line: int
    message: str
    detail: str = ""
    kind: str = "error"

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


class BuildFailed(Exception):
    """Raised once, with every problem found, to stop a build or command."""

    def __init__(self, problems: list[Problem], advice: str = ""):
        self.problems = sorted(problems, key=lambda p: (p.path, p.line))
        self.advice = advice
        super().__init__(report(self.problems, advice))


def report(problems: list[Problem], advice: str = "") -> str:
    """All problems, one block each, then a count and the advice."""
    lines = [str(p) for p in problems]
    if advice:
        lines.append(advice)
    n = len(problems)
    lines.append(f"{n} problem{'' if n == 1 else 's'} found.")
    return "\n".join(lines)


def fail_if_any(problems: list[Problem], advice: str = "") -> None:
    """Raise ``BuildFailed`` when ``problems`` is not empty."""
    if problems:
        raise BuildFailed(problems, advice)
