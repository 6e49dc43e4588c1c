"""Live code's runner and endpoint without a browser (issue 32): where an
edit goes, how errors are named, the limits of a run (a real fork server
of the snippet engine), and which requests the endpoint refuses."""

from __future__ import annotations

import importlib
import io
import json
import os
import socket
import sys
import textwrap
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from lessonbuild import live
from lessonbuild.deck import read_deck
from lessonbuild.engine.guard import fingerprint
from lessonbuild.live import Lines, Live, Refused, Verified
from lessonbuild.liveserve import (
    TOKEN_HEADER,
    LiveServe,
    connection_owner,
    install,
    is_loopback,
)

ROOT = Path(__file__).resolve().parents[1]
SNIPPET = "snippets/15_trace.py"


@pytest.fixture(scope="module")
def deck():
    return read_deck(ROOT, ROOT / "docs")


def shown_part(path: str = SNIPPET) -> str:
    """The lines between the file's show markers: what the slide shows."""
    text = (ROOT / path).read_text(encoding="utf-8")
    return text.split("# --8<-- [start:show]\n")[1].split(
        "# --8<-- [end:show]"
    )[0]


# --- where an edit goes -----------------------------------------------------


def test_an_edit_replaces_exactly_the_shown_lines(deck):
    shown = shown_part()
    block = live.locate(ROOT, deck, SNIPPET, shown)
    code = shown.replace("h, T = 8, 2, 4", "h, T = 8, 4, 4")
    source, first, count = live.program(block, code)
    original = (ROOT / SNIPPET).read_text(encoding="utf-8").splitlines()
    lines = source.splitlines()
    assert lines[: first - 1] == original[: first - 1]
    assert lines[first - 1 : first - 1 + count] == code.rstrip("\n").split(
        "\n"
    )
    assert lines[first - 1 + count :] == original[first - 1 + count :]
    assert original[first - 2] == "# --8<-- [start:show]"


def test_a_part_of_a_block_goes_back_to_its_own_lines(deck):
    """The deck cuts a block taller than the stage into parts."""
    shown = shown_part().splitlines()
    part = "\n".join(shown[4:7])
    block = live.locate(ROOT, deck, SNIPPET, part)
    source, first, count = live.program(block, "print('part')")
    original = (ROOT / SNIPPET).read_text(encoding="utf-8").splitlines()
    assert source.splitlines()[first - 1] == "print('part')"
    assert source.splitlines()[first:] == original[first - 1 + 3 :]


def test_a_dedented_section_keeps_its_indent(deck, monkeypatch):
    """A section inside a class (mha_ref/mha.py:init, taken as a program
    here: no snippet shows one yet) is shown unindented; the edit goes
    back inside its class."""
    check = importlib.import_module("lessonbuild.engine.check")
    only_mha = ["mha_ref/mha.py"]
    monkeypatch.setattr(check, "used_snippets", lambda deck: only_mha)
    text = (ROOT / "mha_ref/mha.py").read_text(encoding="utf-8")
    section = text.split("# --8<-- [start:init]\n")[1].split("# --8<--")[0]
    shown = "\n".join(line[4:] for line in section.splitlines())
    block = live.locate(ROOT, deck, "mha_ref/mha.py", shown)
    source, first, _ = live.program(block, shown)
    assert source.splitlines()[first - 1] == section.splitlines()[0]


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("snippets/15_trace.py", 409),
        ("snippets/nope.py", 404),
        ("mkdocs.yml", 404),
    ],
)
def test_code_no_page_shows_is_refused(deck, path, status):
    with pytest.raises(Refused) as caught:
        live.locate(ROOT, deck, path, "print('not on any slide')")
    assert caught.value.status == status
    assert path in str(caught.value)


# --- naming lines ------------------------------------------------------------


def test_lines_are_named_as_the_reader_sees_them():
    lines = Lines(SNIPPET, first=9, count=3, shown=14)
    assert lines.name(9) == "your code, line 1"
    assert lines.name(11) == "your code, line 3"
    assert lines.name(3) == f"{SNIPPET}, line 3 (not shown on the slide)"
    # Below the edit: the file's own numbers (the shown part had 14 lines).
    assert lines.name(12) == f"{SNIPPET}, line 23 (not shown on the slide)"


def test_a_traceback_keeps_only_the_programs_frames():
    source = "x = 1\ndef f():\n    return 1 / 0\nf()\n"
    record = {
        "frames": [[4, "<module>"], [3, "f"]],
        "message": "ZeroDivisionError: division by zero",
    }
    text = live.trimmed_traceback(record, Lines(SNIPPET, 1, 4, 4), source)
    assert text.splitlines() == [
        "Traceback (most recent call last):",
        "  your code, line 4",
        "    f()",
        "  your code, line 3, in f",
        "    return 1 / 0",
        "ZeroDivisionError: division by zero",
    ]


@pytest.mark.parametrize(
    "record",
    [
        [],
        {"message": 5},
        {"output_limit": "yes"},
        {"frames": [["3", "f"]]},
        {"frames": [[3]]},
        {"frames": "f"},
        {"syntax": [1, "200", "x", "SyntaxError"]},
        {"syntax": [1, 2]},
        {"syntax": {"line": 1}},
    ],
)
def test_an_error_record_of_another_shape_is_no_record(record):
    """The program can write the record's line itself (a tester forged
    them): one of another shape is stderr as the program wrote it."""
    stderr = f"before\n{live.ERROR_MARK}{json.dumps(record)}\n"
    assert live._error_record(stderr) == (None, stderr)


def test_a_frame_repeated_is_counted_as_python_counts_it():
    """An endless recursion showed 1,978 lines of "your code, line 2, in
    f" (a tester)."""
    source = "def f():\n    return f()\nf()\n"
    record = {
        "frames": [[3, "<module>"]] + [[2, "f"]] * 990,
        "message": "RecursionError: maximum recursion depth exceeded",
    }
    text = live.trimmed_traceback(record, Lines(SNIPPET, 1, 3, 3), source)
    assert text.splitlines() == [
        "Traceback (most recent call last):",
        "  your code, line 3",
        "    f()",
        *["  your code, line 2, in f", "    return f()"] * 3,
        "  [Previous line repeated 987 more times]",
        "RecursionError: maximum recursion depth exceeded",
    ]


def test_a_stopped_run_says_where_it_was():
    dump = (
        "Thread 0x1 (most recent call first):\n"
        '  File "/x/snippets/15_trace.py", line 12 in <module>\n'
        '  File "/tmp/run.py", line 9 in main\n'
    )
    lines = Lines(SNIPPET, first=9, count=5, shown=5)
    where = live.where_it_was(dump, "/x/snippets/15_trace.py", lines)
    assert where == "your code, line 4"


def test_the_diff_puts_each_changed_line_after_its_verified_one():
    diff = live.line_diff("a\nb\nc\n", "a\nB\nc\nd\n")
    assert diff == [["=", "a"], ["-", "b"], ["+", "B"], ["=", "c"], ["+", "d"]]


# --- runs: a real fork server ------------------------------------------------


@pytest.fixture(scope="module")
def runner(deck):
    from lessonbuild import engine
    from lessonbuild.settings import cache_dir

    result = engine.check(deck, timeout=120, jobs=1, cache_dir=cache_dir(ROOT))
    assert not result.problems, [str(p) for p in result.problems]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(live.TIMEOUT_ENV, "3")
        one = Live(ROOT, lambda: Verified(deck, result))
        yield one
        one.close()


def run(runner, code: str) -> dict:
    shown = shown_part()
    return runner.run({"path": SNIPPET, "shown": shown, "code": code})


def test_a_run_is_shown_against_the_verified_one(runner):
    answer = run(
        runner, shown_part().replace("h, T = 8, 2, 4", "h, T = 8, 4, 4")
    )
    assert answer["ok"], answer
    assert ["-", "attn  : (1, 2, 4, 4)"] in answer["diff"]
    assert ["+", "attn  : (1, 4, 4, 4)"] in answer["diff"]
    (table,) = answer["tables"]
    assert table["id"] == "15_trace.shapes"
    assert ["concat", "(1, 4, 8)", "merge h=4 heads"] in table["rows"]
    assert ["concat", "(1, 4, 8)", "merge h=2 heads"] in table["verified"][
        "rows"
    ]


def test_many_short_lines_are_shown_and_compared_cut(runner):
    """100,000 printed lines: the answer (its diff too) holds what is
    shown, not a page 2 million pixels tall."""
    answer = run(runner, "for i in range(100_000):\n    print(i)\n")
    assert answer["stdout_cut"]
    assert len(answer["stdout"].splitlines()) <= live.SHOWN_LINES
    verified = answer["verified"].count("\n") + 1
    assert len(answer["diff"]) <= live.SHOWN_LINES + verified


def test_an_error_is_shown_once_as_the_reader_sees_the_code(runner):
    """The trimmed traceback names "your code, line N"; no second, raw
    one (the run's own folder, the file's other line numbers) follows
    on stderr."""
    code = shown_part().replace("torch.randn(1, T, d_model)", "missing_name")
    answer = run(runner, code)
    assert answer["status"] == "error", answer
    assert "your code, line" in answer["error"], answer["error"]
    assert "NameError" in answer["message"]
    assert "Traceback" not in answer["stderr"], answer["stderr"]
    assert "run.py" not in answer["stderr"] + answer["error"]


def test_an_error_in_the_unshown_part_is_not_blamed_on_the_edit(runner):
    """The shown code replaced by a print: the file's unshown rest fails
    on a name the shown code defined, and the message says where."""
    answer = run(runner, "print('hi')\n")
    assert answer["status"] == "error", answer
    assert answer["message"].startswith(
        f"The rest of {SNIPPET}, not shown on the slide, raised NameError"
    ), answer["message"]
    assert "(not shown on the slide)" in answer["error"]


def _sections(path: str, *names: str) -> str:
    """Sections of ``path`` joined, dedented, as a page shows them."""
    text = (ROOT / path).read_text(encoding="utf-8")
    return "".join(
        textwrap.dedent(
            text.split(f"# --8<-- [start:{n}]\n")[1].split("# --8<--")[0]
        )
        for n in names
    )


def test_an_excerpt_of_the_package_runs_in_its_module(runner):
    """Slide 47 shows mha_ref/mha.py's imports and split_heads joined:
    its Run always answered "reload the page". It runs after the module,
    in its namespace: unedited it prints nothing and says how to see it
    work; an edited split_heads is the one the module's class calls."""
    shown = _sections("mha_ref/mha.py", "imports", "split")
    request = {"path": "mha_ref/mha.py", "shown": shown}
    plain = runner.run({**request, "code": shown})
    assert plain["ok"], plain
    assert "prints nothing" in plain["message"]
    zeros = "return x.transpose(1, 2) * 0"
    edited = shown.replace("return x.transpose(1, 2)", zeros)
    call = (
        "m = MultiHeadAttention(8, 2)\nx = torch.ones(1, 3, 8)\n"
        "print(float(m(x, x, x)[0].abs().sum()))\n"
    )
    answer = runner.run({**request, "code": edited + call})
    assert answer["ok"], answer
    assert answer["stdout"].strip() == "0.0", answer
    # A call in the edit that fails inside the module: the edit's error.
    bad = shown + "split_heads(torch.zeros(2, 5, 7), 2)\n"
    failed = runner.run({**request, "code": bad})
    assert failed["message"].startswith("Your code raised"), failed


def test_an_edited_method_is_its_classs_own(runner):
    """Slide 47 shows ``forward`` alone, slide 45 ``__init__``: the edit
    made a function beside the class, and ``MultiHeadAttention`` ran the
    original (a tester). Now a call added right after the def runs the
    edit, ``super().__init__()`` included, and its error is the edit's."""
    calls = "m = MultiHeadAttention(8, 2)\nx = torch.ones(1, 3, 8)\n"
    shown = _sections("mha_ref/mha.py", "imports", "forward")
    edited = shown.replace("return output,", "return output * 0,")
    request = {"path": "mha_ref/mha.py", "shown": shown}
    total = "print(float(m(x, x, x)[0].abs().sum()))\n"
    answer = runner.run({**request, "code": edited + calls + total})
    assert answer["ok"] and answer["stdout"] == "0.0\n", answer
    boom = shown.replace(
        "h = self.num_heads", "h = self.num_heads\n    raise KeyError('boom')"
    )
    answer = runner.run({**request, "code": boom + calls + "m(x, x, x)\n"})
    assert answer["message"] == "Your code raised KeyError: 'boom'", answer
    assert "your code, line 7, in forward" in answer["error"], answer
    shown = _sections("mha_ref/mha.py", "imports", "init")
    edited = shown.replace("d_model // num_heads", "d_model // num_heads + 1")
    request = {"path": "mha_ref/mha.py", "shown": shown}
    answer = runner.run({**request, "code": edited + calls + "print(m.d_k)"})
    assert answer["ok"] and answer["stdout"] == "5\n", answer


def test_a_syntax_error_is_named_in_the_readers_terms(runner):
    """Its class, and the lines its message names: the box said
    "SyntaxError: expected an indented block after 'for' statement on
    line 18" of the reader's line 8, an IndentationError (a tester)."""
    shown = shown_part()
    lines = shown.split("\n")
    lines[1] = "for h in [1, 2]:"
    answer = run(runner, "\n".join(lines))
    assert answer["error"].endswith(
        "IndentationError: expected an indented block after 'for' "
        "statement on your code, line 2"
    ), answer["error"]
    assert answer["message"].startswith("Your code raised IndentationError")
    lines[1] = "x = '''never closed"  # found at the file's end
    end = len((ROOT / SNIPPET).read_text(encoding="utf-8").splitlines())
    answer = run(runner, "\n".join(lines))
    assert answer["error"].endswith(
        f"(detected at {SNIPPET}, line {end} (not shown on the slide))"
    ), answer["error"]


def test_a_flood_of_output_stops_at_the_limit(runner):
    answer = run(runner, "while True:\n    print('x' * 1000)\n")
    assert answer["status"] == "limit", answer["message"]
    assert "output limit" in answer["message"]
    assert len(answer["stdout"]) <= live.SHOWN_CHARS


def test_a_flood_of_errors_stops_at_the_same_limit(runner):
    """It answered "Your program exited with status 70" (a tester)."""
    answer = run(runner, "import sys\nsys.stderr.write('y' * 10**8)\n")
    assert answer["status"] == "limit", answer["message"]
    assert "output limit" in answer["message"]
    assert len(answer["stderr"]) <= live.SHOWN_CHARS + len("\n…")


@pytest.mark.parametrize(
    "record",
    [
        "{'syntax': [n, 200_000_000, 'x', 'E'], 'frames': [], 'message': ''}",
        "{'frames': [[n, 'f']] * 20_000, 'message': 'E: ' + 'm' * 500_000}",
    ],
)
def test_an_error_shown_is_bounded_as_stdout_is(runner, record):
    """A record the program forged with a caret 200,000,000 columns away
    made a 200 MB answer; 20,000 frames of a 40,000-character line 20 MB
    (a tester). The caret stays on its line, the traceback and message
    are cut as stdout is."""
    code = (
        "x = '" + "y" * 40_000 + "'\nimport json, sys\n"
        "n = sys._getframe().f_lineno - 2  # the line of 40,000 characters\n"
        f"sys.stderr.write({live.ERROR_MARK!r} + json.dumps({record}))\n"
        "raise SystemExit(1)\n"
    )
    answer = run(runner, code)
    assert answer["status"] == "error", answer["message"][:200]
    assert len(json.dumps(answer)) < 4 * live.SHOWN_CHARS + 20_000
    assert len(answer["error"].splitlines()) <= live.SHOWN_LINES + 2


def test_memory_beyond_the_limit_is_refused(runner):
    answer = run(
        runner, "import torch\nx = torch.empty(8 * 2**30, dtype=torch.uint8)\n"
    )
    assert answer["status"] == "limit", answer
    assert "memory" in answer["message"].lower()


def test_a_live_run_has_tighter_limits_than_a_build_run(runner):
    """2 MiB of output stops at live code's 1 MiB (a build's run may
    print 64), and 3 GiB of memory is refused (a build's run gets 4)."""
    answer = run(runner, "import sys\nsys.stdout.write('x' * (2 << 20))\n")
    assert answer["status"] == "limit", answer["message"]
    assert "output limit" in answer["message"]
    answer = run(
        runner, "import torch\nx = torch.empty(3 * 2**30, dtype=torch.uint8)\n"
    )
    assert answer["status"] == "limit", answer
    assert "memory" in answer["message"].lower()


def test_a_program_cannot_change_the_repository(runner):
    before = fingerprint(ROOT)
    answer = run(runner, "open('snippets/15_trace.py', 'a').write('# x')\n")
    assert answer["status"] == "error"
    assert "Read-only file system" in answer["error"]
    assert fingerprint(ROOT) == before


def test_runs_beyond_the_queue_are_refused_at_once(runner):
    """One run going on (an endless loop) and MAX_WAITING waiting: the
    next is refused with 429, and the server still answers afterwards."""
    answers = []
    loop = "while True:\n    pass\n"
    threads = [
        threading.Thread(target=lambda: answers.append(run(runner, loop)))
        for _ in range(1 + live.MAX_WAITING)
    ]
    started = runner.count  # runs the module's earlier tests started
    threads[0].start()
    # The first loop is running (not merely sent): only then can the
    # others wait behind it.
    assert live.wait_until(
        lambda: runner.jobs.qsize() == 0 and runner.count == started + 1, 120
    )
    for t in threads[1:]:
        t.start()
    assert live.wait_until(lambda: runner.jobs.qsize() == live.MAX_WAITING, 60)
    with pytest.raises(Refused) as caught:
        run(runner, "print(1)")
    assert caught.value.status == 429
    for t in threads:
        t.join(timeout=120)
    assert [a["status"] for a in answers] == ["timeout"] * len(threads)
    assert run(runner, "print('after')")["stdout"] == "after\n"


# --- the endpoint ------------------------------------------------------------


class FakeLive:
    def __init__(self):
        self.requests = []

    def verified(self):
        return Verified()

    def run(self, request):
        self.requests.append(request)
        return {"ok": True, "status": "ok"}


def call(app, path="/__live__/run", method="POST", headers=None, body=b"{}"):
    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
        **(headers or {}),
    }
    got = {}

    def start_response(status, headers, exc_info=None):
        got["status"], got["headers"] = status, headers

    out = b"".join(app(environ, start_response))
    return int(got["status"].split()[0]), out


@pytest.fixture
def endpoint():
    fake = FakeLive()
    serve = LiveServe(fake, "127.0.0.1", 8000, "/")

    def page(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/html")])
        return [b"<html><head><title>t</title></head><body></body></html>"]

    good = {
        "HTTP_HOST": "127.0.0.1:8000",
        "HTTP_ORIGIN": "http://127.0.0.1:8000",
        "HTTP_" + TOKEN_HEADER.upper().replace("-", "_"): serve.token,
    }
    return serve, serve.wrap(page), good, fake


def test_a_request_from_the_site_with_its_token_runs(endpoint):
    serve, app, good, fake = endpoint
    status, out = call(app, headers=good)
    assert status == 200 and json.loads(out)["ok"]
    assert fake.requests == [{}]


@pytest.mark.parametrize("body", [b"{", b"[" * 200_000])
def test_a_body_that_is_not_json_is_refused(endpoint, body):
    """Nested too deep to read, too: it answered 500 (a tester)."""
    serve, app, good, fake = endpoint
    status, out = call(app, headers=good, body=body)
    assert (status, json.loads(out)["message"]) == (400, "expected JSON")
    assert fake.requests == []


@pytest.mark.parametrize(
    "change",
    [
        {"HTTP_X_LESSON_LIVE_TOKEN": "wrong"},
        {"HTTP_ORIGIN": "http://evil.example"},
        {"HTTP_ORIGIN": "http://127.0.0.1:9999"},
        {"HTTP_HOST": "evil.example:8000"},
        {"HTTP_SEC_FETCH_SITE": "same-site"},
        {"REQUEST_METHOD": "GET"},
        {"REQUEST_METHOD": "OPTIONS"},
        {"CONTENT_TYPE": "text/plain"},
    ],
)
def test_other_requests_are_refused_before_anything_runs(endpoint, change):
    serve, app, good, fake = endpoint
    headers = {**good, **change}
    method = headers.pop("REQUEST_METHOD", "POST")
    status, out = call(app, method=method, headers=headers)
    assert status in (403, 405, 415)
    assert fake.requests == []
    assert b"Access-Control" not in out


def test_only_pages_asked_for_by_the_sites_own_address_carry_the_token(
    endpoint,
):
    serve, app, good, _ = endpoint
    status, html = call(app, path="/index.html", method="GET", headers=good)
    assert serve.token.encode() in html
    assert html.index(b"lesson-live-config") < html.index(b"</head>")
    status, html = call(
        app,
        path="/index.html",
        method="GET",
        headers={"HTTP_HOST": "evil.example"},
    )
    assert serve.token.encode() not in html


def test_live_code_is_installed_on_loopback_addresses_only():
    assert is_loopback("127.0.0.1") and is_loopback("localhost")
    assert is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")


def _as_user(uid: int, act) -> None:
    """``act()`` in a child process running as ``uid``; raises if it
    failed (its traceback is on stderr)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgid(uid)
            os.setuid(uid)
            act()
            code = 0
        finally:
            os._exit(code)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


@pytest.mark.skipif(sys.platform != "linux", reason="the kernel's tables")
@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_a_connections_owner_is_the_user_who_opened_it(host):
    """Read from the kernel's socket tables, for IPv4 and IPv6; another
    user's connection (the test forks one, as root) is told apart."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        listening = socket.create_server((host, 0), family=family)
    except OSError:
        pytest.skip(f"no {host} here")
    with listening:
        server = listening.getsockname()[:2]
        with socket.create_connection(server) as mine:
            assert connection_owner(mine.getsockname(), server) == os.getuid()
        if os.getuid() != 0:
            return

        def connect():  # (no lookup: this interpreter is not nobody's to read)
            with socket.socket(family) as theirs:
                theirs.connect(server)
                owner = connection_owner(theirs.getsockname()[:2], server)
                os._exit(0 if owner == 65534 else 3)

        _as_user(65534, connect)


@pytest.mark.skipif(
    sys.platform != "linux" or os.getuid() != 0,
    reason="another user's connection: made as root",
)
def test_another_users_connection_is_closed_unread(tmp_path):
    """Another account on the machine can reach 127.0.0.1 and would read
    the token in a page (then run code with the server user's rights):
    MkDocs' own server, with live code installed, closes its connection
    without an answer, and still answers its own user."""
    from mkdocs.livereload import LiveReloadServer

    (tmp_path / "index.html").write_text("<html><head></head></html>")
    server = LiveReloadServer(lambda: None, "127.0.0.1", 0, str(tmp_path))
    server.server_bind()
    server.server_activate()
    address = server.server_address[:2]
    config = SimpleNamespace(
        dev_addr=address, config_file_path=str(ROOT / "mkdocs.yml")
    )
    assert install(server, config, Verified) is not None
    threading.Thread(target=server.serve_forever, daemon=True).start()
    request = f"GET / HTTP/1.0\r\nHost: {address[0]}:{address[1]}\r\n\r\n"

    def fetch() -> bytes:
        with socket.socket() as conn:  # (no name lookup: see above)
            conn.settimeout(30)
            conn.connect(address)
            conn.sendall(request.encode())
            return b"".join(iter(lambda: conn.recv(65536), b""))

    def fetch_as_another():
        os._exit(0 if fetch() == b"" else 3)

    try:
        assert fetch().startswith(b"HTTP/1.0 200")
        _as_user(65534, fetch_as_another)
        assert b"lesson-live-config" in fetch()
    finally:
        server.shutdown()
        server.server_close()


def test_without_the_read_only_sandbox_nothing_runs(deck, monkeypatch):
    """Where the engine cannot mount the repository read-only (here:
    turned off), an edited program could write into it: none runs."""
    monkeypatch.setenv("LESSONBUILD_NO_SANDBOX", "1")
    unsafe = Live(ROOT, lambda: Verified(deck, None))
    try:
        before = fingerprint(ROOT)
        code = "open('snippets/15_trace.py', 'a').write('# x')\n"
        answer = run(unsafe, code)
        assert answer["status"] == "refused", answer
        assert "read-only" in answer["message"]
        assert fingerprint(ROOT) == before
    finally:
        unsafe.close()
