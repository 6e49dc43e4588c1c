"""Live code: run an edited code block of a slide, beside its verified run.

``Live.run`` (liveserve.py's endpoint) finds the include whose shown text
the page showed, puts the edit in place of those lines of the file (the
unshown rest still runs), runs that in a fork of the engine's server with
its sandbox and ``LIMITS``, and answers against the build's verified run:
a line diff, tables beside the verified ones, the traceback in the
reader's terms. Nothing reaches the build: own pool, own folder, the
repository read-only. One thread owns the pool (a fork server dies with
the thread that started it); ``MAX_WAITING`` runs may wait, more are
refused.
"""

from __future__ import annotations

import contextlib
import difflib
import itertools
import json
import os
import queue
import re
import shutil
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from .deck import PYTHON_LANGS, sections
from .engine.cache import base_key
from .engine.judge import table_records
from .engine.preload import preload_plan
from .engine.runner import Limits, Pool
from .live_child import ERROR_MARK

CHILD = Path(__file__).with_name("live_child.py")
TIME_LIMIT = 10.0  # seconds (a slide's snippet needs well under one)
TIMEOUT_ENV = "LESSON_LIVE_TIMEOUT"
#: Memory above what the fork maps already, MiB of any file it writes
#: (stdout included), processes.
LIMITS = Limits(memory_mb=2048, processes=32, file_mb=1)
#: The first lines / characters of stdout and stderr an answer shows.
SHOWN_LINES, SHOWN_CHARS = 400, 40_000
REPEATS = 3  # a repeated frame shown, then counted (as CPython does)
MAX_WAITING = 2  # runs waiting behind the one running
MAX_CODE = 50_000  # characters of a request's code
_LINE = re.compile(r"\bline (\d+)\b")  # in a SyntaxError's message
_DUMP_FRAME = re.compile(r'^\s*File "(?P<file>.*)", line (?P<line>\d+)')


class Refused(Exception):
    """A request this module will not run; ``status`` is its HTTP code."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass
class Verified:
    """What the build checked: the deck (which files pages include) and
    the engine's result (stdout, tables and figures of each snippet)."""

    deck: object | None = None
    result: object | None = None


@dataclass
class Block:
    """Where an edited block goes: its file's text, split around it."""

    path: str  # relative to the root: snippets/15_trace.py
    before: list[str]  # the file's lines above the shown part
    after: list[str]  # and below it (the closing marker first)
    indent: str  # taken off the shown lines (dedented sections)
    shown: int  # lines the page showed


def _normal(text: str) -> str:
    """Code as a page shows it: no trailing blanks, \\n line ends."""
    lines = text.replace("\r\n", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip("\n")


def locate(root: Path, deck, path: str, shown: str) -> Block:
    """The block of ``path`` whose shown text is ``shown``: only a Python
    file a page includes, only while the page shows what the file holds
    (else 409: reload). A block of the package (often two sections
    joined: no splice can put an edit back) runs after the whole module,
    in its namespace (a method: live_child's ``Namespace``)."""
    # (Looked up at the call: a test points it at a module of mha_ref.)
    from .engine.check import used_snippets

    targets = {
        inc.section
        for page in (deck.pages if deck is not None else [])
        for inc in page.includes
        if inc.path == path
        and inc.fence is not None
        and inc.fence.lang in PYTHON_LANGS
    }
    if not targets or not path.endswith(".py"):
        raise Refused(404, f"{path} is not a code block of this lesson")
    try:
        lines = (root / path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise Refused(404, f"{path} cannot be read: {exc.strerror}") from None
    want = _normal(shown).split("\n")
    if path not in used_snippets(deck):
        module = [*lines, "", "# --- the code shown on the slide, as edited"]
        return Block(path, module, [], "", len(want))
    found = sections(lines) | {None: (0, len(lines))}
    for name in sorted(targets & found.keys(), key=str):
        first, end = found[name]
        # Shown dedented, perhaps in part: a run of the section's lines.
        text = textwrap.dedent("\n".join(lines[first:end])).rstrip()
        body = [line.rstrip() for line in text.splitlines()]
        for at in range(len(body) - len(want) + 1):
            if body[at : at + len(want)] == want:
                indents = [
                    line[: len(line) - len(line.lstrip())]
                    for line in lines[first:end]
                    if line.strip()
                ]
                indent = os.path.commonprefix(indents)
                start, stop = first + at, first + at + len(want)
                return Block(
                    path, lines[:start], lines[stop:], indent, len(want)
                )
    raise Refused(
        409,
        f"the code shown for {path} is no longer what the file holds "
        "(it changed since this page loaded): reload the page",
    )


def program(block: Block, code: str) -> tuple[str, int, int]:
    """(source, first line of the edit, line count of the edit), 1-based:
    the file with the edited lines in place of the shown ones."""
    edited = _normal(code).split("\n") if code.strip() else []
    edited = [block.indent + line if line else "" for line in edited]
    lines = [*block.before, *edited, *block.after]
    return "\n".join(lines) + "\n", len(block.before) + 1, len(edited)


@dataclass
class Lines:
    """Names the program's lines as the reader sees them."""

    path: str
    first: int  # program line of the edit's first line
    count: int  # lines of the edit
    shown: int  # lines the file's shown part had

    def hidden(self, line: int) -> bool:
        """Whether program line ``line`` is outside the edit."""
        return not self.first <= line < self.first + self.count

    def name(self, line: int) -> str:
        if not self.hidden(line):
            return f"your code, line {line - self.first + 1}"
        if line >= self.first + self.count:  # back to the file's numbers
            line += self.shown - self.count
        return f"{self.path}, line {line} (not shown on the slide)"


def trimmed_traceback(record: dict, lines: Lines, source: str) -> str:
    """The child's error record as a traceback of the program only, cut
    as stdout is: the program can forge the record (a caret offset of
    200,000,000 made a 200 MB answer)."""
    text = source.split("\n")
    message = record.get("message", "")
    if record.get("syntax"):
        line, offset, msg, kind = record["syntax"]
        out = [f"{lines.name(line or 1)}:"]
        if line and 0 < line <= len(text):
            code = text[line - 1]
            out.append(f"    {code.strip()}")
            if offset:
                lead = len(code) - len(code.lstrip())
                offset = min(offset - 1, len(code)) - lead
                out.append("    " + " " * max(0, offset) + "^")
        # "after 'for' statement on line 18": the program's line numbers.
        msg = _LINE.sub(lambda m: lines.name(int(m[1])), msg)
        message = f"{kind}: {msg}"
    else:
        frames = record.get("frames") or []
        out = ["Traceback (most recent call last):"] if frames else []
        size = 0
        for (line, name), same in itertools.groupby(map(tuple, frames)):
            if len(out) > SHOWN_LINES or size > SHOWN_CHARS:
                break  # (cut below: no more is shown)
            in_name = "" if name == "<module>" else f", in {name}"
            frame = [f"  {lines.name(line)}{in_name}"]
            if 0 < line <= len(text) and text[line - 1].strip():
                frame.append(f"    {text[line - 1].strip()}")
            times = len(list(same))
            out += (repeated := frame * min(times, REPEATS))
            size += sum(map(len, repeated))
            if (more := times - REPEATS) > 0:
                out.append(f"  [Previous line repeated {more} more times]")
    shown, cut = _shown("\n".join(out))
    parts = ([shown] if out else []) + (["  …"] if cut else [])
    return "\n".join([*parts, _shown(message)[0]])


def where_it_was(stderr: str, filename: str, lines: Lines) -> str:
    """The innermost program line in a stopped run's faulthandler dump."""
    for m in map(_DUMP_FRAME.match, stderr.splitlines()):
        if m and m["file"] == filename:
            return lines.name(int(m["line"]))
    return ""


def _shown(text: str) -> tuple[str, bool]:
    """The part of ``text`` shown, and whether anything was cut."""
    lines = text[:SHOWN_CHARS].split("\n")
    cut = len(text) > SHOWN_CHARS or len(lines) > SHOWN_LINES
    return "\n".join(lines[:SHOWN_LINES]), cut


def line_diff(verified: str, mine: str) -> list[list[str]]:
    """[[op, line]]: ``=`` in both, ``-`` only verified, ``+`` only this
    run; a changed verified line comes right before its new version."""
    a = verified.rstrip("\n").split("\n") if verified.strip() else []
    b = mine.rstrip("\n").split("\n") if mine.strip() else []
    out: list[list[str]] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        out += [["=" if op == "equal" else "-", line] for line in a[i1:i2]]
        if op != "equal":
            out += [["+", line] for line in b[j1:j2]]
    return out


def _published(raw: str, stem: str, verified: dict) -> tuple[list, list]:
    """(tables, figures) the run published, tables beside the verified."""
    tables, figures = [], []
    for record in table_records(raw):
        if not isinstance(record, dict):
            continue
        name = f"{stem}.{record.get('name')}"
        svg, columns, rows = map(record.get, ("svg", "columns", "rows"))
        if record.get("kind") == "figure" and isinstance(svg, str):
            alt = str(record.get("alt") or "")
            figures.append({"id": name, "alt": alt, "svg": svg})
        elif isinstance(columns, list) and isinstance(rows, list):
            table = {
                "id": name,
                "columns": [str(c) for c in columns],
                "rows": [[str(c) for c in row] for row in rows],
            }
            if name in verified:
                table["verified"] = {
                    "columns": list(verified[name]["columns"]),
                    "rows": [list(row) for row in verified[name]["rows"]],
                }
            tables.append(table)
    return tables, figures


def answer(run, source, lines: Lines, filename, error, verified) -> dict:
    """The JSON a live run answers."""
    result = verified.result
    known = (result.outputs if result is not None else {}).get(lines.path)
    stdout, stdout_cut = _shown(run.stdout)
    tables, figures = _published(
        run.tables, Path(lines.path).stem, result.tables if result else {}
    )
    out = {
        **_failed("error", ""),
        "stdout": stdout,
        "stdout_cut": stdout_cut,
        "verified": known,
        # Of what is shown: 100,000 lines made a page 2 million pixels.
        "diff": line_diff(known, stdout) if known is not None else None,
        "error": "",
        "stderr": "",
        "tables": tables,
        "figures": figures,
        "seconds": round(run.seconds, 4),
    }
    stderr = run.stderr
    if run.failure:
        out["message"] = "The runner failed: " + run.failure.splitlines()[0]
        out["error"] = run.failure
        return out
    if run.timed_out:
        where = where_it_was(stderr, filename, lines)
        out["status"] = "timeout"
        out["message"] = (
            f"Stopped after {_time_limit():g} s, the live-run time limit"
            + (f", at {where}" if where else "")
            + ". Does a loop never end?"
        )
        # What the program wrote, not faulthandler's dump after it.
        for marker in ("Timeout (", "Thread 0x", "Current thread 0x"):
            if marker in stderr:
                stderr = stderr[: stderr.index(marker)]
                break
    elif (error or {}).get("output_limit") or any(
        # (stderr too: a flood of it "exited with status 70")
        len(text.encode()) >= LIMITS.file_mb << 20
        for text in (run.stdout, stderr)
    ):
        out["status"] = "limit"
        out["message"] = (
            f"Stopped at the output limit: a live run may print "
            f"{LIMITS.file_mb} MB at most."
        )
    elif error is not None and error.get("sandbox") is False:
        out["status"] = "refused"
        out["message"] = (
            "Live code is off on this machine: the snippet engine could not "
            "make the repository read-only for the run (no user namespaces)."
        )
    elif error is not None:
        out["error"] = trimmed_traceback(error, lines, source)
        last = (out["error"].splitlines() or ["an error"])[-1]
        if "MemoryError" in last or "can't allocate memory" in last:
            out["status"] = "limit"
            out["message"] = (
                f"Out of memory: a live run may use "
                f"{LIMITS.memory_mb >> 10} GB more than the lesson's "
                "own setup. " + last
            )
        elif error.get("frames") and all(
            lines.hidden(line) for line, _ in error["frames"]
        ):
            # Not "your code" for a line the edit never had.
            out["message"] = (
                f"The rest of {lines.path}, not shown on the slide, raised "
                f"{last}: it uses what the shown code defines"
            )
        else:
            out["message"] = f"Your code raised {last}"
    elif run.exit not in (0, None):
        out["message"] = (
            f"Your program exited with status {run.exit}"
            if run.exit > 0
            else f"Your program was killed (signal {-run.exit})"
        )
    else:
        out["ok"], out["status"] = True, "ok"
        if any(op != "=" for op, _ in out["diff"] or []):
            out["message"] = "The output differs from the verified one."
        elif known is not None:
            out["message"] = "The same output as the verified one."
        elif not run.stdout.strip():
            out["message"] = (
                "Ran without error; it prints nothing: add a call with "
                "print(…) to see what it computes."
            )
        else:
            out["message"] = "Ran without error."
    if not out["ok"] and not run.stdout.strip():
        out["diff"] = None  # nothing printed: no diff of every line gone
    out["stderr"], cut = _shown(stderr.strip())
    if cut:
        out["stderr"] += "\n…"
    return out


def _time_limit() -> float:
    with contextlib.suppress(ValueError):
        if (value := float(os.environ.get(TIMEOUT_ENV, TIME_LIMIT))) > 0:
            return value
    return TIME_LIMIT


def _error_record(stderr: str) -> tuple[dict | None, str]:
    """live_child's error record (last ``ERROR_MARK`` line) and stderr
    without it; a record not of its shape (the program can write one)
    is no record."""
    head, mark, record = stderr.rpartition(ERROR_MARK)
    record, _, rest = record.partition("\n")
    with contextlib.suppress(ValueError, RecursionError):
        if mark and _well_formed(error := json.loads(record)):
            return error, head + rest
    return None, stderr


def _shaped(value, *kinds: tuple) -> bool:
    """Whether ``value`` is a list of one value of each of ``kinds``
    (exact JSON types: ``True`` is no line number)."""
    return (
        type(value) is list
        and len(value) == len(kinds)
        and all(type(v) in kind for v, kind in zip(value, kinds, strict=True))
    )


def _well_formed(error) -> bool:
    """Whether ``error`` has live_child's shape: syntax [line, offset,
    message, class], frames [[line, name]], message, bool flags."""
    if type(error) is not dict:
        return False
    line, text = (int, type(None)), (str,)
    syntax, frames = error.get("syntax"), error.get("frames", [])
    flags = [error.get(f, False) for f in ("sandbox", "output_limit")]
    return (
        type(error.get("message", "")) is str
        and all(type(flag) is bool for flag in flags)
        and type(frames) is list
        and all(_shaped(frame, (int,), text) for frame in frames)
        and (syntax is None or _shaped(syntax, line, line, text, text))
    )


def _failed(status: str, message: str) -> dict:
    """The answer of a run that did not happen."""
    return {"ok": False, "status": status, "message": message}


class Live:
    """The live runs of one ``mkdocs serve``: a thread and its pool."""

    def __init__(self, root: Path, verified: Callable[[], Verified]):
        self.root = Path(root).resolve()
        self.verified = verified
        self.jobs = queue.Queue(MAX_WAITING)
        # A run sees only the repository (read-only) and its scratch: its
        # program and parameters must be in the repository.
        live_dir = self.root / ".cache" / "live"
        live_dir.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix="lesson-live-", dir=live_dir))
        self.count = 0
        self._key: tuple[list, str] | None = None
        self.thread = threading.Thread(
            target=self._work, name="lesson-live", daemon=True
        )
        self.thread.start()

    def run(self, request: dict) -> dict:
        """Answer one request ({"path", "shown", "code"}); ``Refused``
        if it cannot run (busy too)."""
        if not isinstance(request, dict):
            raise Refused(400, "expected a JSON object")
        fields = [request.get(k) for k in ("path", "shown", "code")]
        if not all(isinstance(v, str) for v in fields):
            raise Refused(400, "expected strings: path, shown, code")
        if len(request["code"]) > MAX_CODE:
            raise Refused(413, f"code longer than {MAX_CODE} characters")
        verified = self.verified()
        block = locate(
            self.root, verified.deck, request["path"], request["shown"]
        )
        job = {**request, "block": block, "verified": verified}
        done: Future = Future()
        try:
            self.jobs.put_nowait((job, done))
        except queue.Full:
            raise Refused(
                429,
                f"busy: {MAX_WAITING} runs are already waiting; run again "
                "when they have finished",
            ) from None
        return done.result()

    def close(self) -> None:
        """Stop the thread (after the run going on) and its pool."""
        stopped = "The server is stopping."
        with contextlib.suppress(queue.Empty):  # until none waits
            while job := self.jobs.get_nowait():
                job[1].set_result(_failed("stopped", stopped))
        self.jobs.put(None)
        self.thread.join(timeout=30)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _work(self) -> None:
        pool = Pool(self.root, LIMITS)
        snippets = (self.root / "snippets").glob("*.py")
        plan = preload_plan([p.read_text("utf-8") for p in snippets])
        pool.warm(plan, key=self._base_key(), count=1)
        try:
            while (job := self.jobs.get()) is not None:
                request, done = job
                try:
                    done.set_result(self._execute(pool, request, plan))
                except Exception as exc:  # never leave a request waiting
                    message = f"The live runner failed: {exc!r}"
                    done.set_result(_failed("error", message))
        finally:
            pool.close()

    def _base_key(self) -> str:
        """The engine's base key (what its servers preload), hashed again
        (30 ms) only when a file of mha_ref changed."""
        stats = []
        for path in sorted((self.root / "mha_ref").rglob("*.py")):
            with contextlib.suppress(OSError):
                st = path.stat()
                stats.append((str(path), st.st_mtime_ns, st.st_size))
        if self._key is None or self._key[0] != stats:
            self._key = (stats, base_key(self.root / "snippets"))
        return self._key[1]

    def _execute(self, pool, request: dict, plan: list[str]) -> dict:
        block: Block = request["block"]
        source, first, count = program(block, request["code"])
        filename = str(self.root / block.path)
        self.count += 1
        folder = self.tmp / f"run{self.count}"
        folder.mkdir()
        try:
            params = {
                "root": str(self.root),
                "filename": filename,
                "source": source,
                "first": first,  # (an edited method is its class's)
            }
            (folder / "run.json").write_text(json.dumps(params), "utf-8")
            (folder / "run.py").symlink_to(CHILD)
            (run,) = pool.run(
                [[folder / "run.py"]],
                timeout=_time_limit(),
                concurrency=1,
                threads=1,  # as the build's runs: the same float sums
                preload=sorted(set(plan) | set(preload_plan([source]))),
                key=self._base_key(),
            )[0]
            error, run.stderr = _error_record(run.stderr)
            lines = Lines(block.path, first, count, block.shown)
            verified = request["verified"]
            return answer(run, source, lines, filename, error, verified)
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def wait_until(condition: Callable[[], bool], seconds: float) -> bool:
    """Poll ``condition`` until it holds or ``seconds`` pass."""
    end = time.monotonic() + seconds
    while not (held := condition()) and time.monotonic() < end:
        time.sleep(0.05)
    return held
