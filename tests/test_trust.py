"""A build you can trust (issue 14): what is published is what was checked.

Each test reproduces one finding of the issue on a copy of the good
fixture site and shows the new behaviour: a non-zero exit naming the
file and line, or the right result.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import py_compile
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import pytest

from lessonbuild.atomic import building_prefix
from lessonbuild.deck import parse_slide, read_deck
from lessonbuild.engine.lint import set_order_problems
from lessonbuild.engine.outputs import TMP_MARK
from lessonbuild.engine.runner import TMP_PREFIX
from lessonbuild.engine.tables import table_output_conflicts
from lessonbuild.problems import Problem
from lessonbuild.yamltext import YamlProblem, load_yaml
from tests.engine_fixtures.sites import check as engine_check
from tests.engine_fixtures.sites import engine as cli
from tests.engine_fixtures.sites import make_site, mkdocs_build

TMP = Path(tempfile.gettempdir())
EVIL_SLIDE = """\
---
title: "A snippet that edits its own slide"
slide: 4
kind: Concept
part: Fixture
---

# Shapes

```python title="snippets/04_evil.py"
--8<-- "snippets/04_evil.py"
```

```text title="Output"
(1, 4, 8)
```
"""
EVIL_SNIPPET = """\
from pathlib import Path

slide = Path("docs/slides/04-evil.md")
slide.write_text(slide.read_text().replace("(1, 4, 8)", "(9, 9, 9)"))
Path("docs/evil.md").write_text("# Published behind the check\\n")
Path("README.md").unlink()
print("(1, 4, 8)")
"""


def _evil_site(tmp_path: Path) -> Path:
    root = make_site(tmp_path, "good")
    (root / "docs/slides/04-evil.md").write_text(EVIL_SLIDE)
    (root / "snippets/04_evil.py").write_text(EVIL_SNIPPET)
    (root / "README.md").write_text("# The fixture\n")
    return root


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
        and ".cache" not in p.parts
        and "__pycache__" not in p.parts
    }


def test_snippet_cannot_change_the_repository(tmp_path):
    """Writing its slide fails, named at the include; nothing changes."""
    root = _evil_site(tmp_path)
    before = _files(root)
    proc = mkdocs_build(root, cache=None)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert (
        "docs/slides/04-evil.md:11: snippets/04_evil.py exited with "
        "status 1: OSError: [Errno 30] Read-only file system" in out
    ), out
    assert _files(root) == before
    assert not (root / "site").exists()


def test_without_the_sandbox_the_fingerprint_catches_it(tmp_path):
    """Where no read-only mount is possible, the before/after check
    fails the build and names every file the snippet touched."""
    root = _evil_site(tmp_path)
    env = dict(os.environ, LESSONBUILD_NO_SANDBOX="1")
    proc = mkdocs_build(root, cache=None, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    for rel, how in (
        ("docs/slides/04-evil.md", "changed"),
        ("docs/evil.md", "created"),
    ):
        assert f"{rel}:1: {rel} was {how} while the snippets ran" in out
    assert not (root / "site").exists()


def test_compiled_code_under_snippets_is_refused(tmp_path):
    """A .pyc (or a __pycache__ folder, an extension module, a .pth)
    under snippets/ would run in place of the source a page shows."""
    root = make_site(tmp_path, "good")
    (root / "snippets/helpers.pyc").write_bytes(b"\x00" * 16)
    (root / "snippets/__pycache__").mkdir()
    (root / "snippets/__pycache__/07.cpython-311.pyc").write_bytes(b"")
    found = {(p.path, p.line) for p in engine_check(root).problems}
    assert found >= {
        ("snippets/helpers.pyc", 1),
        ("snippets/__pycache__", 1),
    }, found
    messages = [p.message for p in engine_check(root).problems]
    assert any("would run in place of the source" in m for m in messages)


# --- 2. deterministic verdicts ----------------------------------------------


def test_printed_set_is_caught_every_time():
    """20 of 20 fresh checks of the snippet's code report the set."""
    source = 'print({"alpha", "beta"})\n'
    for _ in range(20):
        [problem] = set_order_problems("snippets/04_set.py", source)
        assert (problem.path, problem.line) == ("snippets/04_set.py", 1)
        assert "prints a set without sorting it" in problem.message


@pytest.mark.parametrize(
    ("source", "line"),
    [
        ('words = {"a", "b"}\nprint(words)\n', 2),
        ("print(f'{set(\"ab\")}')\n", 1),
        ("s = frozenset([1, 2])\nprint(list(s | {3}))\n", 2),
        ('print(", ".join({w for w in "ab"}))\n', 1),
        ('for w in {"a", "b"}:\n    print(w)\n', 1),
        ('s = set("ab")\nprint([x.upper() for x in s])\n', 2),
    ],
)
def test_ways_a_set_reaches_the_output(source, line):
    """Names, f-strings, set operations, joins, loops, comprehensions."""
    [problem] = set_order_problems("s.py", source)
    assert problem.line == line


@pytest.mark.parametrize(
    "source",
    [
        'print(sorted({"alpha", "beta"}))\n',
        'print(len(set("abc")), "a" in {"a"})\n',
        's = {"a"}\ns = ["a"]\nprint(s)\n',  # rebound to a list
        'for w in sorted({"a", "b"}):\n    print(w)\n',
        'print({"a": 1})\n',  # a dict keeps insertion order
        "print(set(\n",  # a syntax error: the run reports it
    ],
)
def test_order_free_uses_of_sets_pass(source):
    """Sorted, counted, tested, or not a set at all: no problem."""
    assert set_order_problems("s.py", source) == []


@pytest.mark.parametrize("cache", ["fresh", "shared"])
def test_cli_fails_a_printed_set_on_every_check(tmp_path, cache):
    """Even with the set's order in its Output block, every check fails
    at the print's line, and update writes nothing: fresh ones, and ones
    that share a cache (a cached snippet is not linted again, so the
    refused one must never get a record)."""
    root = tiny_site(
        tmp_path, 'print({"alpha", "beta"})\n', "{'alpha', 'beta'}"
    )
    slide = root / "docs/slides/01-one.md"
    before = slide.read_bytes()
    options = (
        ["--no-cache"]
        if cache == "fresh"
        else ["--cache-dir", str(tmp_path / "cache")]
    )
    for command in ("check", "check", "update", "check"):
        proc = cli(root, command, *options)
        assert proc.returncode == 1
        assert (
            "snippets/01_one.py:1: prints a set without sorting it"
            in proc.stderr
        )
    assert slide.read_bytes() == before


# --- 3. an honest cache ------------------------------------------------------

ONE_SLIDE = """\
---
title: "One"
slide: 1
kind: Concept
part: Fixture
---

# One

```python title="snippets/01_one.py"
--8<-- "snippets/01_one.py"
```

```text title="Output"
{output}
```
"""


def tiny_site(tmp_path: Path, source: str, output: str) -> Path:
    """A site with one slide and its one snippet."""
    root = make_site(tmp_path, "good")
    for old in [*root.glob("docs/slides/*.md"), *root.glob("snippets/*")]:
        old.unlink()
    (root / "docs/slides/01-one.md").write_text(
        ONE_SLIDE.format(output=output)
    )
    (root / "snippets/01_one.py").write_text(source)
    return root


def test_a_run_cache_inside_the_repository_is_a_product(tmp_path):
    """A run cache put inside the repository is the build's product, not
    data: every result is found the second time (its records are not in
    the key), and a build does not report them as files the snippets
    created."""
    root = tiny_site(tmp_path, 'print("hi")\n', "hi")
    subprocess.run(["git", "init", "-q", root], check=True)
    cache = root / "run-cache"
    for _ in range(2):
        proc = cli(root, "check", "--cache-dir", "run-cache", cache=None)
        assert proc.returncode == 0, proc.stderr
    assert "(0 run, 1 cached)" in proc.stdout, proc.stdout
    tag = (cache / "CACHEDIR.TAG").read_text()
    assert tag.startswith("Signature: 8a477f597d28d172789f06886806bc55")
    built = mkdocs_build(root, cache=root / "build-cache")
    assert built.returncode == 0, built.stderr
    assert list((root / "build-cache").glob("*.json"))


def test_outside_git_a_tagged_folder_is_skipped_at_any_depth(tmp_path):
    """Outside a work tree (the guard walks the folder), too: files under
    a folder holding CACHEDIR.TAG, however deep, are not the
    repository's; a folder beside it is."""
    from lessonbuild.engine.guard import fingerprint_paths

    for rel in ("a/b/cache/x.json", "a/b/cache/deeper/y", "a/b/kept.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("1")
    assert "a/b/cache/x.json" in fingerprint_paths(tmp_path)
    (tmp_path / "a/b/cache/CACHEDIR.TAG").write_text("Signature: ...")
    assert fingerprint_paths(tmp_path) == ["a/b/kept.txt"]


def test_cache_is_keyed_by_data_and_verifies_records(tmp_path):
    """A read data file is in the key; edited, broken or replaced
    records are run again, never trusted, never a crash."""
    root = tiny_site(
        tmp_path,
        'print(open("data/n.txt").read().strip())\n',
        "41",
    )
    (root / "data").mkdir()
    (root / "data/n.txt").write_text("41\n")
    cache = tmp_path / "cache"
    first = engine_check(root, cache=cache)
    assert (first.ran, first.problems) == (1, [])
    [record] = list(cache.glob("*.json"))
    data = json.loads(record.read_text())
    assert data["reads"] == {
        "data/n.txt": hashlib.sha256(b"41\n").hexdigest(),
        "snippets/01_one.py": hashlib.sha256(
            (root / "snippets/01_one.py").read_bytes()
        ).hexdigest(),
    }
    assert engine_check(root, cache=cache).cached == 1

    bad_records = {
        "forged": lambda r: r.write_text(
            json.dumps(dict(json.loads(r.read_text()), stdout="42\n"))
        ),
        "not JSON": lambda r: r.write_text("{not json"),
        "a list": lambda r: r.write_text("[]"),
        "a folder": lambda r: (r.unlink(), r.mkdir()),
    }
    for what, damage in bad_records.items():
        # The newest record: the key changes if mha_ref is edited
        # meanwhile (other work in the same tree).
        record = max(cache.glob("*.json"), key=lambda p: p.stat().st_mtime)
        damage(record)
        again = engine_check(root, cache=cache)
        assert (again.ran, again.problems) == (1, []), what
        assert again.outputs["snippets/01_one.py"] == "41\n", what
        assert record.is_file(), what  # rewritten, good again

    (root / "data/n.txt").write_text("43\n")
    changed = engine_check(root, cache=cache)
    assert changed.ran == 1
    [drift] = changed.problems
    assert (drift.path, drift.line, drift.kind) == (
        "docs/slides/01-one.md",
        14,
        "drift",
    )


def test_data_read_from_c_is_in_the_key(tmp_path):
    """torch.from_file reads through C++'s own open: no audit event, no
    record of the read. The data file is in every run's key anyway, so
    editing it re-runs the snippet (here: drift), never a stale cache."""
    root = tiny_site(
        tmp_path,
        "import torch\n"
        'print(torch.from_file("data/n.bin", size=2, dtype=torch.uint8)'
        ".tolist())\n",
        "[65, 66]",
    )
    (root / "data").mkdir()
    (root / "data/n.bin").write_bytes(b"AB")
    cache = tmp_path / "cache"
    first = engine_check(root, cache=cache)
    assert (first.ran, first.problems) == (1, [])
    assert engine_check(root, cache=cache).cached == 1
    (root / "data/n.bin").write_bytes(b"AC")
    changed = engine_check(root, cache=cache)
    assert changed.ran == 1, "the edited data file did not re-run the snippet"
    [drift] = changed.problems
    assert drift.kind == "drift"
    assert changed.outputs["snippets/01_one.py"] == "[65, 67]\n"


def test_a_run_is_found_again_from_another_checkout_of_the_same_files(
    tmp_path,
):
    """A module the snippet imports from the repository is read as its
    compiled copy (``__pycache__``, as ``make bytecode`` leaves it), whose
    header holds the source's modification time: a second checkout of
    the same files (``make site-diff`` builds one) missed every record
    that imported it, and wrote over the first's. The key names the
    source: found again there, and still run again when it changes."""
    source = (
        "import sys\nsys.path.insert(0, 'lib')\n"
        "import helper\nprint(helper.VALUE)\n"
    )
    first = tiny_site(tmp_path / "a", source, "41")
    (first / "lib").mkdir()
    (first / "lib/helper.py").write_text("VALUE = 41\n")
    second = tmp_path / "b" / "good"
    shutil.copytree(first, second)
    (second / "lib/helper.py").write_text("VALUE = 41\n")  # a new mtime
    os.utime(second / "lib/helper.py", (1_700_000_000, 1_700_000_000))
    for root in (first, second):
        py_compile.compile(str(root / "lib/helper.py"), doraise=True)
    made = [
        (root / "lib/__pycache__").glob("*.pyc") for root in (first, second)
    ]
    pyc_a, pyc_b = (next(iter(found)).read_bytes() for found in made)
    assert pyc_a != pyc_b, "the two compiled copies should differ"
    cache = tmp_path / "cache"
    assert engine_check(first, cache=cache).ran == 1
    again = engine_check(second, cache=cache)
    assert (again.ran, again.cached, again.problems) == (0, 1, [])
    (second / "lib/helper.py").write_text("VALUE = 42\n")
    py_compile.compile(str(second / "lib/helper.py"), doraise=True)
    changed = engine_check(second, cache=cache)
    assert changed.ran == 1, "an edited module did not re-run the snippet"
    assert changed.outputs["snippets/01_one.py"] == "42\n"


def test_only_a_compiled_copy_that_is_its_sources_stands_for_it(tmp_path):
    """The run cache keys a read of ``__pycache__/NAME.TAG.pyc`` as the
    source only where Python would run that copy for that source (a
    timestamp copy of the source's time and size, or a checked hash one),
    and the source is in the repository; any other copy keeps its own
    bytes in the key: a stale one, an unchecked hash one (Python runs it
    whatever the source says), a data file in ``__pycache__``."""
    from lessonbuild.engine.server import _source_of

    prefix = str(tmp_path) + os.sep
    source = tmp_path / "helper.py"
    source.write_text("VALUE = 1\n")
    cached = importlib.util.cache_from_source(str(source))

    def compiled(mode):
        py_compile.compile(str(source), invalidation_mode=mode, doraise=True)
        return _source_of(cached, prefix)

    modes = py_compile.PycInvalidationMode
    assert compiled(modes.TIMESTAMP) == str(source)
    assert compiled(modes.CHECKED_HASH) == str(source)
    assert compiled(modes.UNCHECKED_HASH) == cached
    compiled(modes.TIMESTAMP)
    source.write_text("VALUE = 22\n")  # another size: a stale copy
    assert _source_of(cached, prefix) == cached
    data = Path(cached).parent / "helper.v1.csv"
    data.write_text("1,2\n")
    assert _source_of(str(data), prefix) == str(data)
    elsewhere = tmp_path / "out" / "inside"
    elsewhere.mkdir(parents=True)
    py_compile.compile(str(source), doraise=True)
    assert _source_of(cached, str(elsewhere) + os.sep) == cached


# --- 5. no escaped processes -------------------------------------------------

ESCAPES = """\
import os
import subprocess
import sys
import time

TOKEN = "{token}"
r, w = os.pipe()
child = os.fork()
if child == 0:  # a plain fork that outlives the snippet
    os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", TOKEN])
daemon = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(300)", TOKEN],
    start_new_session=True,
)
if os.fork() == 0:  # a double fork into a new session
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", TOKEN])
    os.write(w, b"x")
    os._exit(0)
os.read(r, 1)
print("started")
"""


def _alive_with(token: str) -> list[int]:
    """The live processes of this machine whose command line has
    ``token`` (a run's pids are its namespace's, so it cannot name
    them; what it started is found by what it ran)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if token.encode() in cmdline and state != "Z":
            found.append(int(proc.name))
    return found


def test_no_process_outlives_its_snippet(tmp_path):
    """Forks, a new session, a double fork: none is left after a check
    (the run's PID namespace ends with it)."""
    token = f"escapee-{os.getpid()}-{time.monotonic_ns()}"
    root = tiny_site(tmp_path, ESCAPES.replace("{token}", token), "started")
    result = engine_check(root, cache=tmp_path / "cache")
    assert result.problems == []
    assert _alive_with(token) == []


def test_a_snippet_cannot_kill_its_runner_or_the_build(tmp_path):
    """Issue 31: no PID namespace, a snippet could signal any process of
    its user. Now its parent is the namespace's init (pid 1), the
    build's pid names nothing it can see, and kill(-1) reaches nothing:
    its neighbour runs."""
    build = os.getpid()
    root = tiny_site(
        tmp_path,
        "import os\n"
        f"for target in ({build}, -1):\n"
        "    try:\n"
        "        os.kill(target, 9)\n"
        "        print(target, 'killed')\n"
        "    except ProcessLookupError:\n"
        "        print(target, 'not found')\n"
        "print(os.getppid())\n",
        f"{build} not found\n-1 not found\n1",
    )
    (root / "docs/slides/02-two.md").write_text(
        ONE_SLIDE.replace("01_one", "02_two")
        .replace("slide: 1", "slide: 2")
        .format(output="fine")
    )
    (root / "snippets/02_two.py").write_text('print("fine")\n')
    result = engine_check(root, cache=tmp_path / "cache", jobs=2)
    assert result.problems == [], result.problems


HANG = """\
import os
import time

print(os.environ["PYTHONHASHSEED"], time.time(), flush=True)
time.sleep(300)
"""


def test_two_hangs_cost_about_one_timeout(tmp_path, monkeypatch):
    """The second hanging snippet starts while the first still hangs."""
    root = tiny_site(tmp_path, HANG, "")
    (root / "docs/slides/02-two.md").write_text(
        ONE_SLIDE.replace("01_one", "02_two")
        .replace("slide: 1", "slide: 2")
        .format(output="")
    )
    (root / "snippets/02_two.py").write_text(HANG)
    timeout = 5
    from lessonbuild.engine import runner

    seen = []
    real = runner._handle

    def spy(server, message, timeout):
        real(server, message, timeout)
        if "id" in message and "exit" in message:
            seen.append(server.results[message["id"]].stdout)

    monkeypatch.setattr(runner, "_handle", spy)
    result = engine_check(
        root, cache=tmp_path / "cache", timeout=timeout, jobs=2
    )
    assert [p.message.split(" did not")[0] for p in result.problems] == [
        "snippets/01_one.py",
        "snippets/02_two.py",
    ]
    by_server: dict[str, list[float]] = {}
    for line in seen:
        seed, at = line.split()
        by_server.setdefault(seed, []).append(float(at))
    # Two servers (hash seeds 0 and 1), each starting both snippets.
    assert sorted(by_server) == ["0", "1"]
    for times in by_server.values():
        # One after the other, the second would start a timeout after
        # the first; side by side, a couple of seconds apart.
        assert len(times) == 2 and abs(times[1] - times[0]) < timeout / 2


# --- 4. bounds ---------------------------------------------------------------

ALIAS_BOMB = "\n".join(
    ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    + [
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]"
        for i in range(8)
    ]
    + ["id: *i"]
)


def _bounded(call):
    """Run ``call``; return (result, seconds, peak bytes allocated)."""
    tracemalloc.start()
    start = time.monotonic()
    try:
        out = call()
    finally:
        seconds = time.monotonic() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return out, seconds, peak


def test_alias_bomb_in_front_matter_fails_fast():
    """9^9 strings if expanded; refused at the first alias, at its line."""
    text = "---\n" + ALIAS_BOMB + "\n---\n\n# Bomb\n"
    problems = []
    slide, seconds, peak = _bounded(
        lambda: parse_slide("docs/slides/01-bomb.md", text, problems, True)
    )
    assert seconds < 2 and peak < 20_000_000
    assert slide.meta == {}
    [problem] = [p for p in problems if "alias" in p.message]
    assert problem.line == 3  # the first `*a`, line 3 of the file
    assert "aliases (*name) are not allowed" in problem.message


def test_alias_bomb_in_an_exercise_fails_fast():
    """The exercise YAML loader refuses the first alias, with its line."""

    def load():
        with pytest.raises(YamlProblem) as caught:
            load_yaml(ALIAS_BOMB)
        return caught.value

    problem, seconds, peak = _bounded(load)
    assert seconds < 2 and peak < 20_000_000
    assert problem.line == 1  # 0-based: the second line of the body
    assert "aliases (*name) are not allowed" in str(problem)


def test_huge_output_is_refused_and_never_written(tmp_path):
    """50 MB of stdout: a short report naming the snippet, and update
    leaves the slide as it was."""
    root = tiny_site(
        tmp_path,
        'import sys\nsys.stdout.write(("x" * 99 + "\\n") * 500_000)\n',
        "",
    )
    slide = root / "docs/slides/01-one.md"
    before = slide.read_bytes()
    proc = cli(root, "update", "--no-cache")
    assert proc.returncode == 1
    assert (
        "docs/slides/01-one.md:11: snippets/01_one.py printed 500,000 "
        "lines (50,000,000 bytes); an Output block may hold at most 200 "
        "lines and 20,000 bytes" in proc.stderr
    )
    assert len(proc.stderr) < 5_000
    assert slide.read_bytes() == before


def test_long_messages_and_details_are_cut():
    """A problem quoting megabytes shows a few kilobytes and says so."""
    problem = Problem("a.md", 3, "m" * 100_000, "d" * 100_000)
    text = str(problem)
    assert len(text) < 6_000
    assert "(99000 more characters not shown)" in text
    assert "(96000 more characters not shown)" in text


# --- 8. messages -------------------------------------------------------------

SLIDE_HEAD = "---\ntitle: T\nslide: 1\nkind: Concept\npart: Fixture\n---\n"


def _deck_problems(tmp_path: Path, data: bytes) -> list[tuple[int, str]]:
    slides = tmp_path / "docs/slides"
    slides.mkdir(parents=True)
    (slides / "01-one.md").write_bytes(data)
    deck = read_deck(tmp_path, parts=["Fixture"])
    return [(p.line, p.message) for p in deck.problems]


@pytest.mark.parametrize(
    ("data", "line", "message"),
    [
        (
            b"\xef\xbb\xbf" + SLIDE_HEAD.encode(),
            1,
            "the file starts with a byte-order mark (BOM)",
        ),
        (
            SLIDE_HEAD.encode() + b"\n# Title\n\ncaf\xe9\n",
            10,
            "not valid UTF-8 at column 4 (byte b'\\xe9')",
        ),
        (
            SLIDE_HEAD.replace("slide: 1", "slide: one").encode(),
            3,
            "slide: 'one' is not a positive whole number",
        ),
        (
            SLIDE_HEAD.replace("kind: Concept", "kind: [a, b]").encode(),
            4,
            "kind: expected a single text value, got list ['a', 'b']",
        ),
        (
            SLIDE_HEAD.replace("part: Fixture", "part: [x\n").encode(),
            6,
            "front matter is not valid YAML",
        ),
    ],
)
def test_bad_input_is_named_at_its_line(tmp_path, data, line, message):
    """BOM, bad UTF-8, front matter: the right line, no traceback."""
    found = _deck_problems(tmp_path, data)
    assert any(at == line and message in text for at, text in found), found


def test_bad_timeout_flag_is_a_message(tmp_path):
    """--timeout inf and friends: exit 2 with the flag named."""
    root = make_site(tmp_path, "good")
    for value in ("inf", "nan", "-1", "soon"):
        proc = cli(root, "check", "--timeout", value)
        assert proc.returncode == 2, value
        assert proc.stderr.startswith("error: --timeout: "), proc.stderr
        assert "Traceback" not in proc.stderr


# --- 7. includes stay inside the repository ----------------------------------


def test_include_through_a_symlink_out_of_the_repository(tmp_path):
    """A link to /etc/passwd is refused at the include's line; the
    build publishes nothing of it."""
    root = make_site(tmp_path, "good")
    (root / "passwd.txt").symlink_to("/etc/passwd")
    slide = root / "docs/slides/01-shapes.md"
    slide.write_text(
        slide.read_text() + '\n```text\n--8<-- "passwd.txt"\n```\n'
    )
    line = slide.read_text().splitlines().index('--8<-- "passwd.txt"') + 1
    proc = mkdocs_build(root)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert (
        f'docs/slides/01-shapes.md:{line}: --8<-- "passwd.txt" leaves the '
        "repository (passwd.txt resolves to /etc/passwd)" in out
    ), out
    assert "root:x:0:0" not in out
    assert not (root / "site").exists()


def test_sigterm_leaves_no_temporary_folder(tmp_path):
    """SIGTERM while snippets run: the engine's folder is removed."""
    root = tiny_site(tmp_path, "import time\ntime.sleep(300)\n", "")
    proc = subprocess.Popen(
        [sys.executable, "-m", "lessonbuild", "check", "--no-cache"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    pattern = f"{TMP_PREFIX}{proc.pid}-*"
    deadline = time.monotonic() + 120
    while not list(TMP.glob(pattern)) and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    [folder] = list(TMP.glob(pattern))
    time.sleep(1)  # the servers are starting
    proc.terminate()
    proc.communicate(timeout=30)
    assert proc.returncode != 0
    assert not folder.exists()


def test_what_a_killed_run_left_is_removed_by_the_next(tmp_path):
    """SIGKILL cannot be caught: the next update removes our temporary
    slide files, and the next run the folder of a dead engine."""
    root = tiny_site(tmp_path, 'print("hi")\n', "hi")
    left = root / f"docs/slides/.01-one.md{TMP_MARK}k1ll3d"
    left.write_text("half a slide")
    other = root / "docs/slides/.notes.md.swp"  # not ours: kept
    other.write_text("an editor's")
    dead = _dead_pid()
    folder = TMP / f"{TMP_PREFIX}{dead}-stale"
    folder.mkdir()
    proc = cli(root, "update", "--no-cache")
    assert proc.returncode == 0, proc.stderr
    assert not left.exists() and other.exists()
    assert not folder.exists()


def _dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


# --- 6. one page, one truth --------------------------------------------------

TRUTH = """\
from mha_ref.tables import publish_table, publish_value

for h in (1, 8):
    print(f"h={h}  params=1,048,576")
rows = [[1, "1,048,576"], [8, "{P}"]]
publish_table("by_heads", ["h", "params (d=512)"], rows)
publish_value("total", "1,048,576")
"""


def test_table_output_rule():
    """Same label, same row key, different number: a conflict; a table
    richer than the output, or a longer header, is not one."""
    out = "h= 1  d_k=512  params=1,048,576\nh= 8  d_k= 64  params=1,048,576\n"
    table = {
        "columns": ["h", "d_k", "params (d=512)", "entries per FLOP"],
        "rows": [["1", "512", "1,048,576", "9"], ["8", "64", "1048577", "7"]],
    }
    [conflict] = table_output_conflicts("s.py", out, {"s.t": table})
    assert conflict[:4] == (
        "s.t",
        table["rows"][1],
        "params (d=512)",
        "1048577",
    )
    table["rows"][1][2] = "1048576.0"  # the same number, written otherwise
    assert table_output_conflicts("s.py", out, {"s.t": table}) == []


def test_page_cannot_contradict_itself(tmp_path):
    """A table against its Output block, an unknown value, a block
    titled like Output: each reported at its line."""
    root = tiny_site(
        tmp_path,
        TRUTH.replace("{P}", "1,048,577"),
        "h=1  params=1,048,576\nh=8  params=1,048,576",
    )
    slide = root / "docs/slides/01-one.md"
    slide.write_text(
        slide.read_text()
        + '\n{{ value("01_one.total") }} and {{ value("01_one.nope") }}\n'
        + '\n```text title="Output\u200b"\n1,048,577\n```\n'
    )
    lines = slide.read_text().splitlines()
    found = {
        (p.line, p.message.split(";")[0])
        for p in engine_check(root, cache=tmp_path / "cache").problems
    }
    assert found == {
        (
            11,
            "table '01_one.by_heads' says params (d=512) = 1,048,577 in "
            "row 8, but the same run printed 'h=8  params=1,048,576': "
            "publish the figure you print (compute it once)",
        ),
        (
            lines.index(
                '{{ value("01_one.total") }} and {{ value("01_one.nope") }}'
            )
            + 1,
            "value('01_one.nope'): no snippet published this value "
            "(mha_ref.tables.publish_value) (did you mean '01_one.total'?)",
        ),
        (
            lines.index('```text title="Output\u200b"') + 1,
            "code block titled 'Output\\u200b' looks like an Output block "
            "but is not one",
        ),
    }


def test_value_macro_renders_the_computed_figure(tmp_path):
    """{{ value(...) }} in prose shows what the run published."""
    root = tiny_site(
        tmp_path,
        TRUTH.replace("{P}", "1,048,576"),
        "h=1  params=1,048,576\nh=8  params=1,048,576",
    )
    slide = root / "docs/slides/01-one.md"
    slide.write_text(
        slide.read_text() + '\nThe count: {{ value("01_one.total") }}.\n'
    )
    proc = mkdocs_build(root, cache=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    page = (root / "site/slides/01-one/index.html").read_text()
    assert "The count: 1,048,576." in page


# --- issue 31: what ships is what was reviewed and checked -------------------

NO_SANDBOX = {"LESSONBUILD_NO_SANDBOX": "1"}

TAMPER = """\
import os
from pathlib import Path

if os.environ["PYTHONHASHSEED"] == "0":
    slide = Path("docs/slides/01-one.md")
    st = slide.stat()
    text = slide.read_text()
    # Same size, same mtime: a stat-only guard sees nothing.
    slide.write_text(text.replace("# One", "# 0ne"))
    os.utime(slide, ns=(st.st_atime_ns, st.st_mtime_ns))
    Path("mkdocs.yml").write_text(Path("mkdocs.yml").read_text() + "#\\n")
    Path("overrides").mkdir(exist_ok=True)
    Path("overrides/main.html").write_text("<script>alert(1)</script>")
print("hi")
"""


def test_a_write_anywhere_in_the_repository_is_caught_by_content(tmp_path):
    """Issue 31: the guard compared size, mtime and inode under three
    folders. Without the sandbox (the guard's own test), a same-size
    rewrite with the old mtime, an edit of mkdocs.yml and a new file in
    overrides/ each fail the build, named."""
    root = tiny_site(tmp_path, TAMPER, "hi")
    proc = mkdocs_build(root, cache=None, env=NO_SANDBOX)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    for rel, how in (
        ("docs/slides/01-one.md", "changed"),
        ("mkdocs.yml", "changed"),
        ("overrides/main.html", "created"),
    ):
        assert f"{rel}:1: {rel} was {how} while the snippets ran" in out, out
    assert not (root / "site").exists()


def test_a_file_deleted_before_the_build_is_not_blamed_on_it(tmp_path):
    """A contributor who deletes a tracked file and builds before ``git
    rm`` (a slide removed, say) was told the file "was deleted while the
    snippets ran": git still lists it, missing before and after. A file
    deleted between the two fingerprints still is."""
    from lessonbuild.engine.guard import fingerprint, tampering

    for name in ("kept.txt", "gone.txt", "later.txt"):
        (tmp_path / name).write_text(name)
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t"]
    git += ["-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "files"], check=True)
    (tmp_path / "gone.txt").unlink()
    before = fingerprint(tmp_path)
    assert "gone.txt" in before  # still tracked, and missing
    (tmp_path / "later.txt").unlink()
    problems = tampering(before, fingerprint(tmp_path))
    assert [(p.path, p.message.split(";")[0]) for p in problems] == [
        ("later.txt", "later.txt was deleted while the snippets ran")
    ]


LOOP_READER = """\
try:
    open("snippets/loop.txt")
except OSError as error:
    print(type(error).__name__)
"""


def test_a_loop_of_links_is_an_error_at_its_file_not_a_crash(tmp_path):
    """A link loop (``a -> b -> a``) in docs/ or opened by a snippet
    crashed the build with Python's RuntimeError ("Symlink loop"): the
    one in docs/ is named at its file, the snippet sees its OSError as
    a standalone run would, and its output is checked as usual."""
    root = tiny_site(tmp_path, LOOP_READER, "OSError")
    for folder in (root / "docs", root / "snippets"):
        (folder / "loop.txt").symlink_to("loop2.txt")
        (folder / "loop2.txt").symlink_to("loop.txt")
    proc = mkdocs_build(root, cache=None)
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out
    assert "docs/loop.txt:1: docs/loop.txt is a symbolic link" in out, out
    assert "snippets/01_one.py" not in out, out
    (root / "docs/loop.txt").unlink()
    (root / "docs/loop2.txt").unlink()
    proc = mkdocs_build(root, cache=None)
    assert proc.returncode == 0, proc.stdout + proc.stderr


SITE_WRITER = """\
import os
from pathlib import Path

if os.environ["PYTHONHASHSEED"] == "1":  # the run that overlaps the pages
    Path("site").mkdir(exist_ok=True)
    Path("site/evil.html").write_text("<script>alert(1)</script>")
print("hi")
"""


def test_the_site_is_moved_into_place_only_when_the_build_is_done(tmp_path):
    """Issue 31: a snippet's second run wrote into site/ while the pages
    rendered, and that site was published. The site is built in a fresh
    folder and moved into place at the end: what was in site/ before
    (the old site, or a run's write) is gone, and nothing half-built is
    ever in site/."""
    root = tiny_site(tmp_path, SITE_WRITER, "hi")
    (root / "site").mkdir()
    (root / "site/old.html").write_text("from the last build")
    proc = mkdocs_build(root, cache=None, env=NO_SANDBOX)
    assert proc.returncode == 0, proc.stderr
    site = sorted(p.name for p in (root / "site").iterdir())
    assert "evil.html" not in site and "old.html" not in site
    assert (root / "site/index.html").is_file()
    assert not list(root.glob(building_prefix(root / "site") + "*"))


def test_a_killed_build_leaves_the_last_site_and_is_cleaned_up(tmp_path):
    """Issue 31: a killed build left half a site (25 of 61 pages,
    index.html present). Now the last finished site stays as it was; the
    next build removes what the killed one left."""
    root = tiny_site(tmp_path, 'print("hi")\n', "hi")
    assert mkdocs_build(root, cache=None).returncode == 0
    before = _files(root / "site")
    (root / "snippets/01_one.py").write_text("import time\ntime.sleep(300)\n")
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("mkdocs")), "build", "--strict"],
        cwd=root,
        env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while not list(root.glob(building_prefix(root / "site") + "*")):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    os.killpg(proc.pid, 9)
    proc.wait()
    assert _files(root / "site") == before
    (root / "snippets/01_one.py").write_text('print("hi")\n')
    assert mkdocs_build(root, cache=None).returncode == 0
    assert not list(root.glob(building_prefix(root / "site") + "*"))


def test_a_second_build_waits_for_the_first(tmp_path):
    """Issue 31: two builds at once deleted or half-wrote site/. A build
    holds .cache/build.lock; a second one says so and waits."""
    from lessonbuild.atomic import BuildLock

    root = tiny_site(tmp_path, 'print("hi")\n', "hi")
    lock = BuildLock(root / ".cache/build.lock")
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("mkdocs")), "build", "--strict"],
        cwd=root,
        env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if "another build of this site is running" in line:
                break
        assert f"(pid {os.getpid()}" in "".join(seen), seen
        assert proc.poll() is None and not (root / "site").exists()
    finally:
        lock.release()
    rest = proc.stderr.read()
    assert proc.wait() == 0, rest
    assert (root / "site/index.html").is_file()


# --- templates that can only call what we give them --------------------------


def _build_slide(tmp_path, body: str, source='print("hi")\n', output="hi"):
    root = tiny_site(tmp_path, source, output)
    slide = root / "docs/slides/01-one.md"
    slide.write_text(slide.read_text() + body)
    line = len(slide.read_text().splitlines()) - body.count("\n") + 1
    return root, mkdocs_build(root), line


TEMPLATE_ESCAPES = [
    "{{ cycler.__init__.__globals__.os.popen('id').read() }}",
    "{{ 6 * 7 }}",
    "{{ config }}",
    '{{ table("01_" ~ "one.x") }}',
    "{% for x in range(3) %}x{% endfor %}",
]


def test_a_slide_can_only_call_the_lessons_macros(tmp_path):
    """Issue 31: `{{ cycler.__init__.__globals__.os.popen(...) }}` in a
    slide ran a shell command in the build. Only table, value, figure
    (and ref) with literal arguments exist; anything else fails at its
    line, in the build and in fastcheck's check: one build with every
    escape, a line apart, names each (problems are reported together)."""
    from lessonbuild.macros import template_problems

    root, proc, line = _build_slide(
        tmp_path, "\n" + "\n\n".join(TEMPLATE_ESCAPES) + "\n"
    )
    lines = [line + 1 + 2 * i for i in range(len(TEMPLATE_ESCAPES))]
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    for at, expression in zip(lines, TEMPLATE_ESCAPES, strict=True):
        assert f"docs/slides/01-one.md:{at}: " in out, (expression, out)
    assert out.count("is not allowed in a page's template") == len(
        TEMPLATE_ESCAPES
    )
    assert "uid=" not in out
    slide = read_deck(root, parts=["Fixture"]).slides[0]
    found = [(p.path, p.line) for p in template_problems(slide)]
    assert found == [("docs/slides/01-one.md", at) for at in lines]


LITERAL = """\
print("{{ 6 * 7 }}")
print('--8<-- "mkdocs.yml"')
print("--8<-- " + "[start:x]")
"""


def test_output_blocks_are_published_as_compared(tmp_path):
    """Issue 31: an Output block holding `{{ 6 * 7 }}` was published as
    42, and a `--8<-- "mkdocs.yml"` line in it became the whole file.
    What the snippet printed, compared with the block, is what the page
    shows, and every Output and code block of the page is the text that
    was compared (the block's body, the included file)."""
    output = '{{ 6 * 7 }}\n--8<-- "mkdocs.yml"\n--8<-- [start:x]'
    root = tiny_site(tmp_path, LITERAL, output)
    proc = mkdocs_build(root)
    assert proc.returncode == 0, proc.stderr
    html = (root / "site/slides/01-one/index.html").read_text()
    blocks = _code_blocks(html)
    assert output + "\n" in blocks, blocks
    assert LITERAL in blocks, blocks
    assert "site_name" not in html


def _code_blocks(html: str) -> list[str]:
    """The text of every <pre> of a page."""
    from html.parser import HTMLParser

    class Pre(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.depth, self.blocks = 0, []

        def handle_starttag(self, tag, attrs):
            if tag == "pre":
                self.depth += 1
                self.blocks.append("")

        def handle_endtag(self, tag):
            if tag == "pre":
                self.depth -= 1

        def handle_data(self, data):
            if self.depth:
                self.blocks[-1] += data

    parser = Pre()
    parser.feed(html)
    return parser.blocks


def test_an_include_hidden_in_a_snippet_is_refused(tmp_path):
    """Issue 31: `--8<-- "other.py"` inside a snippet's docstring put
    other code on the slide beside output it did not print; a section
    marker inside a line of code would drop that line from the page."""
    source = (
        '"""\n--8<-- "mkdocs.yml"\n"""\nprint("hi")\nx = "--8<-- [end:y]"\n'
    )
    root = tiny_site(tmp_path, source, "hi")
    proc = mkdocs_build(root)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "snippets/01_one.py:2: '--8<-- \"mkdocs.yml\"' would include" in out
    assert (
        "snippets/01_one.py:5: 'x = \"--8<-- [end:y]\"' holds a section" in out
    )


def test_a_snippet_that_is_not_utf8_is_named_at_its_line(tmp_path):
    """Issue 31: a non-UTF-8 snippet passed check-outputs and crashed the
    build with a raw traceback."""
    root = tiny_site(tmp_path, 'print("hi")\n', "hi")
    (root / "snippets/01_one.py").write_bytes(b'print("hi")\n# caf\xe9\n')
    proc = cli(root, "check")
    assert proc.returncode != 0
    assert (
        "snippets/01_one.py:2: snippets/01_one.py is not UTF-8" in proc.stderr
    )


def test_a_docs_symlink_is_refused(tmp_path):
    """Issue 31: docs/assets/env.txt -> /proc/self/environ published the
    build's environment."""
    root = tiny_site(tmp_path, 'print("hi")\n', "hi")
    (root / "docs/env.txt").symlink_to("/proc/self/environ")
    proc = mkdocs_build(root)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "docs/env.txt:1: docs/env.txt is a symbolic link" in out
    assert not (root / "site").exists()


# --- data is escaped ---------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("\n<script>alert(1)</script>\n", "<script> is not allowed"),
        ('\n<a href="javascript:alert(1)">x</a>\n', "is not a safe link"),
        ('\n<img src=x onerror="alert(1)">\n', "<img> is not allowed"),
        (
            '\n<span onclick="alert(1)">x</span>\n',
            "<span onclick=...> is not allowed",
        ),
    ],
)
def test_raw_html_on_a_slide_is_an_allow_list(tmp_path, body, expected):
    root, proc, line = _build_slide(tmp_path, body)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"docs/slides/01-one.md:{line + 1}: " in out and expected in out, (
        out
    )


def test_a_title_is_plain_text(tmp_path):
    """Issue 31: `<script>` in a slide title ran on the page."""
    root = tiny_site(tmp_path, 'print("hi")\n', "hi")
    slide = root / "docs/slides/01-one.md"
    slide.write_text(
        slide.read_text().replace('"One"', '"<script>alert(1)</script>"')
    )
    proc = mkdocs_build(root)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "docs/slides/01-one.md:2: title '<script>alert(1)</script>'" in out


def test_table_cells_are_plain_text():
    """Issue 31: cells were rendered as Markdown (and so as HTML)."""
    import markdown

    from lessonbuild.engine import render_table

    table = {
        "columns": ["what", "value"],
        "rows": [
            ["<script>alert(1)</script>", "**bold** $x$ [l](javascript:x)"],
            ["`code <b>`", "a | b"],
            [r"\(W^Q<script>|\)", "x"],
        ],
    }
    html = markdown.markdown(render_table(table), extensions=["tables"])
    assert "<script>" not in html and "<strong>" not in html
    assert "<a " not in html and "<b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<code>code &lt;b&gt;</code>" in html
    assert "**bold** &#36;x&#36; [l](javascript:x)" in html
    assert html.count("<td>") == 6  # "a | b" stays one cell
    assert "<script" not in html  # not even inside a formula


def test_a_published_svg_is_sanitised():
    """Issue 31: a figure's SVG with a script ran when opened. Scripts,
    handlers, foreign objects and javascript: links go; a clean figure
    keeps its bytes."""
    from lessonbuild.engine.svgsafe import UnsafeSvg, sanitise

    clean = (
        '<svg xmlns="http://www.w3.org/2000/svg" '
        'xmlns:xlink="http://www.w3.org/1999/xlink" width="10">'
        '<defs><path id="p" d="M0 0L1 1"/></defs>'
        '<use xlink:href="#p" style="fill: #000"/></svg>'
    )
    assert sanitise(clean) == (clean, [])
    evil = clean.replace(
        "</svg>",
        '<script>alert(1)</script><rect onload="alert(1)" width="1"/>'
        '<a href="javascript:alert(1)"><text>x</text></a>'
        "<foreignObject><div>x</div></foreignObject></svg>",
    )
    safe, removed = sanitise(evil)
    assert "script" not in safe and "onload" not in safe
    assert "javascript" not in safe and "foreignObject" not in safe
    assert '<rect width="1"' in safe and len(removed) == 4
    # A stylesheet instruction ElementTree leaves out of its tree.
    styled = '<?xml-stylesheet type="text/css" href="http://x/e.css"?>' + clean
    safe, removed = sanitise(styled)
    assert "stylesheet" not in safe and len(removed) == 1, removed
    declared = '<?xml version="1.0" encoding="utf-8"?>\n' + clean
    assert sanitise(declared) == (declared, [])
    with pytest.raises(UnsafeSvg):
        sanitise(
            '<!DOCTYPE x [<!ENTITY a "b">]><svg xmlns="http://www.w3.org/2000/svg"/>'
        )


def test_a_figures_narrow_drawing_is_checked_like_the_wide_one():
    """A figure's drawing for phones (publish_figure's ``narrow``) is
    published as a file of its own: sanitised like the wide one, and a
    narrow drawing that is no SVG is refused, naming it."""
    from types import SimpleNamespace

    from lessonbuild.engine.tables import collect_tables

    svg = '<svg xmlns="http://www.w3.org/2000/svg"><rect width="1"/></svg>'
    evil = svg.replace("</svg>", "<script>alert(1)</script></svg>")

    def collect(narrow):
        result = SimpleNamespace(figures={}, problems=[], refused=set())
        record = {"kind": "figure", "name": "f", "alt": "a figure", "svg": svg}
        raw = json.dumps({**record, "narrow": narrow}) + "\n"
        collect_tables("snippets/x.py", raw, ("docs/s.md", 3), result)
        return result

    kept = collect(evil)
    assert kept.problems == []
    assert kept.figures["x.f"]["svg"] == svg
    assert "script" not in kept.figures["x.f"]["narrow"]
    refused = collect("not a drawing")
    assert refused.figures == {} and refused.refused == {"x.f"}
    assert "figure 'f' (narrow) is not SVG" in refused.problems[0].message


def test_katex_refuses_what_trust_false_would_only_colour(tmp_path):
    """Issue 31: `\\href{javascript:...}` built (KaTeX showed it red)."""
    from lessonbuild.mathrender import MathRenderer

    math = MathRenderer()
    try:
        html, problems = math.render_html(
            '<span class="arithmatex">\\(\\href{javascript:alert(1)}{x}\\)</span>',
            "p.md",
        )
    finally:
        math.close()
    assert problems and "\\href is not allowed" in str(problems), problems


def test_a_table_too_big_for_a_page_is_refused(tmp_path):
    """Issue 31: a 200,000-row table gave a 17 MB page."""
    source = (
        "from mha_ref.tables import publish_table\n"
        "publish_table('big', ['i'], [[i] for i in range(200_000)])\n"
    )
    root = tiny_site(tmp_path, source, "")
    slide = root / "docs/slides/01-one.md"
    slide.write_text(
        slide.read_text().replace('```text title="Output"\n\n```\n', "")
    )
    result = engine_check(root, cache=tmp_path / "cache")
    assert any(
        "published table 'big' with 200001 cells; a page table holds at most"
        in p.message
        for p in result.problems
    ), result.problems


def test_a_set_returned_by_a_function_is_caught():
    """Issue 31: a set returned from a function and printed slipped past
    the set-order check."""
    source = (
        "def heads():\n"
        "    names = {'q', 'k', 'v'}\n"
        "    return names\n"
        "\n"
        "def again():\n"
        "    return heads()\n"
        "\n"
        "print(heads())\n"
        "print(list(again()))\n"
    )
    problems = set_order_problems("s.py", source)
    assert [p.line for p in problems] == [8, 9]


def test_pages_publishes_the_site_the_tests_checked():
    """Issue 31: pages.yml uploaded the site of a second build (make pdf
    depends on build) that no test had seen. The workflow builds once
    (make test), prints the PDF from that site, checks that every file
    the tests saw is unchanged, and uploads it."""
    import yaml

    workflow = (
        Path(__file__).resolve().parents[1] / ".github/workflows/pages.yml"
    )
    steps = yaml.safe_load(workflow.read_text())["jobs"]["build"]["steps"]
    runs = [s.get("run", "") for s in steps]
    text = "\n".join(runs)
    assert "make pdf" not in text and "mkdocs build" not in text
    order = [
        next(i for i, r in enumerate(runs) if marker in r)
        for marker in (
            ".ci/run",
            "sha256sum",
            "lessonbuild.present",
            "--check",
        )
    ]
    assert order == sorted(order), runs
    upload = next(
        i
        for i, s in enumerate(steps)
        if "upload-pages-artifact" in s.get("uses", "")
    )
    assert upload > order[-1]


def test_homework_runs_that_disagree_are_a_problem():
    """Issue 31: the homework solutions' printed output was never
    checked (two clean builds published different notebooks). The job
    runs each notebook twice; outputs that differ are a problem."""
    import nbformat

    from lessonbuild.notebooks import _disagreement

    def notebook(printed):
        nb = nbformat.v4.new_notebook()
        cell = nbformat.v4.new_code_cell("print(x)")
        cell.outputs = [nbformat.v4.new_output("stream", text=printed)]
        nb.cells = [nbformat.v4.new_markdown_cell("# HW"), cell]
        return nbformat.writes(nb)

    assert (
        _disagreement("notebooks/hw.py", notebook("1\n"), notebook("1\n"))
        == []
    )
    [[path, line, message]] = _disagreement(
        "notebooks/hw.py", notebook("0.7632\n"), notebook("0.7864\n")
    )
    assert (path, line) == ("notebooks/hw.py", 1)
    assert message.startswith("cell 2 printed different output in two runs")


def test_an_exercise_field_is_text_not_html():
    """Issue 31: `<script>` in an exercise's option ran on the page. The
    fields are Markdown whose raw HTML is shown as text."""
    from lessonbuild.exercises.fragments import Fragments

    md = Fragments(["pymdownx.superfences", "md_in_html"])
    inline = md.inline(
        '<script>alert(1)</script> <img src=x onerror="alert(1)"> `<b>`'
    )
    assert "<script" not in inline and "<img" not in inline
    assert "&lt;script&gt;" in inline and "<code>&lt;b&gt;</code>" in inline
    assert "<script" not in md.block("<script>alert(1)</script>\n\ntext")
