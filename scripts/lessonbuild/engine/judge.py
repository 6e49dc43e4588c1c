"""Judge the two runs of a snippet (servers with different hash seeds
and RNG state): failure, hang, nondeterminism (reported, never cached),
or ok."""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

#: Lines of a traceback or a hang dump shown in a problem.
TAIL_LINES = 10
#: Lines of each run's output diffed (two huge outputs took minutes).
DIFF_LINES = 2000
_SERVER_FILE = str(Path(__file__).with_name("server.py"))


def judge(root: Path, rel: str, a, b, timeout: float) -> dict:
    """``{"ok": True, "stdout", "tables", "cacheable"}`` or
    ``{"ok": False, "message", "detail"}``."""
    # A run that caused its runner's death explains more than a run the
    # death merely cancelled.
    if failed := sorted(
        [r for r in (a, b) if r.failure], key=lambda r: r.collateral
    ):
        reason, _, rest = clean(root, failed[0].failure).partition("\n")
        return _fail(f"could not run {rel}: {reason}", rest.strip())
    if hung := [r for r in (a, b) if r.timed_out]:
        # The faulthandler dump, without the frames of the runner itself.
        dump = [
            line
            for line in hung[0].stderr.splitlines()
            if "<frozen runpy>" not in line
            and not line.strip().startswith(f'File "{_SERVER_FILE}"')
        ]
        detail = tail(clean(root, "\n".join(dump)))
        return _fail(
            f"{rel} did not finish within {timeout:g} s and was "
            f"killed (a hang? the timeout is set with --timeout, "
            f"SNIPPET_TIMEOUT or snippet_timeout under the lesson "
            f"plugin in mkdocs.yml)",
            "where it was:\n" + detail if detail else "",
        )
    if outside := [r.outside for r in (a, b) if r.outside]:
        return _fail(
            f"{rel} read {', '.join(outside[0][:5])}, outside the "
            "repository: a build on another machine would not have "
            "it (put the data under the repository, or make it in "
            "the snippet)"
        )
    for run, other in ((a, b), (b, a)):
        if run.exit != 0 or run.file_full or run.memory_full:
            return _failed_run(root, rel, run, other)
    if a.stdout != b.stdout:
        diff = unified_diff(
            a.stdout.splitlines()[:DIFF_LINES],
            b.stdout.splitlines()[:DIFF_LINES],
            "stdout of run 1",
            "stdout of run 2",
        )
    elif table_records(a.tables) != table_records(b.tables):
        diff = "the published tables differ between the two runs"
    else:
        cacheable = not (a.uncached or b.uncached)
        return dict(
            ok=True, stdout=a.stdout, tables=a.tables, cacheable=cacheable
        )
    return _fail(
        f"{rel} is nondeterministic: two runs printed different "
        f"output (seed torch with torch.manual_seed; do not print "
        f"times, ids, or set order)",
        diff,
    )


def _fail(message: str, detail: str = "") -> dict:
    return {"ok": False, "message": message, "detail": detail}


def _failed_run(root: Path, rel: str, run, other) -> dict:
    """A run that exited non-zero or hit a limit, with its last line."""
    err = clean(root, run.stderr)
    last = (err.strip().splitlines() or [""])[-1]
    if run.exit < 0:
        message = f"{rel} was killed by signal {-run.exit}"
    else:
        message = f"{rel} exited with status {run.exit}"
    if other.exit == 0:
        message += " (the other run succeeded: it is nondeterministic)"
    if run.limits is not None and (hit := run.limits.message(run)):
        message += f"; {hit}"
    if last:
        message += f": {last[:300]}"
    return _fail(message, tail(err))


def table_records(raw: str) -> list:
    """The JSON records a run published, one per line."""
    out = []
    for line in raw.splitlines():
        try:
            out.append(json.loads(line))
        except (ValueError, RecursionError):  # nested past the parser
            out.append(line)
    return out


def clean(root: Path, text: str) -> str:
    """Paths under the root as the contributor types them."""
    return text.replace(str(root) + os.sep, "")


def tail(text: str) -> str:
    lines = text.rstrip().splitlines()
    head = ["..."] if len(lines) > TAIL_LINES else []
    return "\n".join(head + lines[-TAIL_LINES:])


def unified_diff(expected, actual, from_name, to_name) -> str:
    return "\n".join(
        difflib.unified_diff(
            expected, actual, from_name, to_name, lineterm="", n=2
        )
    )
