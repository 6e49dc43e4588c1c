"""lessonbuild.engine: the CLI, the runner, the cache and updates, on fixtures.

Every bad input of issue #3 is a page of the ``bad`` fixture site; one
CLI check of that site must report them all together, each at its file
and line (the same site through ``mkdocs build`` is in
test_engine_build.py).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lessonbuild import engine as api
from lessonbuild.settings import Settings, SettingsError, read_settings
from tests.engine_fixtures.sites import (
    FIXTURES,
    SHARED_CACHE,
    make_site,
    run_batches,
)
from tests.engine_fixtures.sites import check as engine_check
from tests.engine_fixtures.sites import engine as cli

# --- every bad input, reported together by one CLI check -------------------


@pytest.fixture(scope="module")
def bad(tmp_path_factory):
    """One CLI check of the bad fixture site (snippet timeout 8 s: long
    enough for a snippet that raises on a loaded 2-core machine)."""
    root = make_site(tmp_path_factory.mktemp("cli"), "bad")
    proc = cli(root, "check", "--timeout", "8")
    return proc.returncode, proc.stdout + proc.stderr


def _problem(output: str, location: str) -> str:
    """The message (and indented detail) of the problem at ``location``."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(location + ": "):
            block = [line]
            for more in lines[i + 1 :]:
                if not more.startswith("    "):
                    break
                block.append(more)
            return "\n".join(block)
    raise AssertionError(f"no problem at {location} in:\n{output}")


def test_bad_site_fails(bad):
    """Problems make the check exit 1 and all are counted at the end."""
    code, out = bad
    assert code == 1
    assert re.search(r"snippet engine: .*: 11 problems in", out)
    # The report's count is the last word, after the engine's own line.
    assert out.rstrip().splitlines()[-1] == "11 problems found."


def test_snippet_that_raises(bad):
    """A raising snippet: the slide line, the error, the traceback tail."""
    msg = _problem(bad[1], "docs/pages/01-raises.md:4")
    assert "snippets/01_raises.py exited with status 1: RuntimeError:" in msg
    assert 'File "snippets/01_raises.py", line 7, in <module>' in msg


def test_snippet_that_hangs(bad):
    """A hanging snippet is killed at the timeout; we see where it was."""
    msg = _problem(bad[1], "docs/pages/02-hangs.md:4")
    assert "did not finish within 8 s and was killed" in msg
    assert 'File "snippets/02_hangs.py", line 7 in <module>' in msg


def test_nondeterministic_output(bad):
    """Two runs that print different output are reported, with a diff."""
    msg = _problem(bad[1], "docs/pages/03-unseeded.md:4")
    assert "snippets/03_unseeded.py is nondeterministic" in msg
    assert "--- stdout of run 1" in msg and "+++ stdout of run 2" in msg


def test_include_of_a_missing_snippet(bad):
    """The include line of a missing file is named, not just the file."""
    msg = _problem(bad[1], "docs/pages/04-missing.md:6")
    assert 'missing file: --8<-- "snippets/04_missing.py:show"' in msg


def test_snippet_no_slide_uses(bad):
    """A snippet no page includes is reported at the snippet."""
    msg = _problem(bad[1], "snippets/05_unused.py:1")
    assert "not included by any page" in msg


def test_output_block_without_code_block(bad):
    """An Output block needs the code block it belongs to right above."""
    msg = _problem(bad[1], "docs/pages/06-orphan-output.md:5")
    assert "Output block with no code block above it" in msg


def test_macro_naming_unknown_table(bad):
    """Unknown table ids and columns are named with the known ones."""
    msg = _problem(bad[1], "docs/pages/07-tables.md:9")
    assert "table('07_tables.shapez')" in msg
    assert "(did you mean '07_tables.shapes'?)" in msg  # a typo's fix
    assert "known tables: 07_tables.shapes" in msg
    msg = _problem(bad[1], "docs/pages/07-tables.md:11")
    assert "hide='size'): no such column; columns: tensor, shape" in msg
    msg = _problem(bad[1], "docs/pages/07-tables.md:13")
    assert "figure('07_tables.nope'): no snippet published this figure" in msg
    assert "known figures: " in msg


def test_inline_python(bad):
    """A Python code block typed into a slide is refused."""
    msg = _problem(bad[1], "docs/pages/08-inline.md:3")
    assert "inline Python code block" in msg


def test_drift_message(bad):
    """Drift: path:line, a unified diff, and the command to accept."""
    msg = _problem(bad[1], "docs/pages/09-drift.md:7")
    assert msg.splitlines()[0] == (
        "docs/pages/09-drift.md:7: output of snippets/09_drift.py drifted"
    )
    assert "--- expected (docs/pages/09-drift.md:7)" in msg
    assert "+++ actual (snippets/09_drift.py)" in msg
    assert "-heads : 2" in msg and "+heads : 4" in msg
    assert f"accept with: {api.ACCEPT}" in msg


def test_mangled_include_is_explained(tmp_path):
    """An include a formatter rewrote gets a message saying so."""
    root = make_site(tmp_path, "good")
    slide = root / "docs/slides/02-nested.md"
    text = slide.read_text().replace(
        '--8<-- "mha_ref/tables.py"', '--8 < --"mha_ref/tables.py"'
    )
    slide.write_text(text)
    result = engine_check(root)
    [problem] = result.problems
    assert (problem.path, problem.line) == ("docs/slides/02-nested.md", 24)
    assert "rewritten by a code formatter" in problem.message


@pytest.mark.parametrize(
    ("page", "old", "new", "line", "message"),
    [
        (
            "02-nested.md",
            '--8<-- "mha_ref/tables.py"',
            '--8<-- "mha_ref/tables.py:nope"',
            24,
            "mha_ref/tables.py has no section 'nope'",
        ),
        (
            "02-nested.md",
            '"mha_ref/tables.py"\n```\n',
            '"mha_ref/tables.py"\n```\n\n```text title="Output"\n```\n',
            27,
            "Output block after a code block that is not run",
        ),
        (
            "01-shapes.md",
            '```text title="Output"',
            "```text",
            11,
            "prints output but no Output block follows its code block",
        ),
        (
            "03-silent.md",
            '"snippets/03_params.py:show"\n```',
            '"snippets/03_params.py:show"\n```\n\n'
            '--8<-- "snippets/03_params.py"',
            16,
            "snippets/03_params.py is included outside a code block",
        ),
    ],
)
def test_more_slide_problems(tmp_path, page, old, new, line, message):
    """Sections, Output blocks and includes in the wrong place."""
    root = make_site(tmp_path, "good")
    slide = root / "docs/slides" / page
    text = slide.read_text()
    assert old in text
    slide.write_text(text.replace(old, new, 1))
    result = engine_check(root)
    found = [(p.path, p.line, p.message) for p in result.problems]
    assert any(
        (path, at) == (f"docs/slides/{page}", line) and message in text
        for path, at, text in found
    ), found


# --- a good site: check, update, drift -------------------------------------


def test_good_site_checks_clean(tmp_path):
    """The good fixture passes; the summary counts what ran."""
    root = make_site(tmp_path, "good")
    proc = cli(root, "check")
    assert proc.returncode == 0, proc.stderr
    assert re.match(
        r"snippet engine: 4 pages, 3 snippets \(\d run, \d cached\), "
        r"2 tables: OK",
        proc.stdout,
    )


def _drift(root: Path) -> dict[Path, bytes]:
    """Change one Output block, empty another; return the original bytes."""
    shapes = root / "docs/slides/01-shapes.md"
    nested = root / "docs/slides/02-nested.md"
    before = {p: p.read_bytes() for p in (shapes, nested)}
    shapes.write_bytes(
        before[shapes].replace(b"(2, 2, 5, 4)", b"(2, 5, 2, 4)")
    )
    text = nested.read_text()
    body = "    tensor([[0.0900" + text.split("    tensor([[0.0900")[1]
    body = body.split("    ```")[0]
    nested.write_text(text.replace(body, ""))
    return before


def test_update_restores_exactly_and_only_drifted_blocks(tmp_path):
    """Update rewrites the drifted and empty blocks byte for byte."""
    root = make_site(tmp_path, "good")
    originals = {
        p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }
    before = _drift(root)
    proc = cli(root, "check")
    assert proc.returncode == 1
    assert (
        "docs/slides/01-shapes.md:14: output of snippets/01_shapes.py "
        "drifted" in proc.stderr
    )
    assert (
        "docs/slides/02-nested.md:15: Output block of snippets/02_softmax.py"
        " is empty" in proc.stderr
    )
    inodes = {p: p.stat().st_ino for p in before}
    proc = cli(root, "update")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[:2] == [
        "docs/slides/01-shapes.md:14: updated the output of "
        "snippets/01_shapes.py",
        "docs/slides/02-nested.md:15: updated the output of "
        "snippets/02_softmax.py",
    ]
    for path, data in originals.items():
        assert path.read_bytes() == data, path
    # Written to a new file and moved into place; no temporary left.
    assert all(p.stat().st_ino != inodes[p] for p in before)
    assert not list(root.rglob(".*.md.*"))


def test_update_twice_changes_nothing(tmp_path):
    """A second update writes no file at all."""
    root = make_site(tmp_path, "good")
    _drift(root)
    assert cli(root, "update").returncode == 0
    stamps = {p: p.stat().st_mtime_ns for p in root.rglob("*.md")}
    proc = cli(root, "update")
    assert proc.returncode == 0
    assert "updated" not in proc.stdout
    assert stamps == {p: p.stat().st_mtime_ns for p in root.rglob("*.md")}


def test_update_keeps_crlf_line_endings(tmp_path):
    """A CRLF slide stays CRLF; only the Output body changes."""
    root = make_site(tmp_path, "good")
    slide = root / "docs/slides/01-shapes.md"
    good = slide.read_bytes().replace(b"\n", b"\r\n")
    slide.write_bytes(good.replace(b"merged  : (2, 5, 8)", b"merged: ?"))
    assert cli(root, "update").returncode == 0
    assert slide.read_bytes() == good


def test_update_fills_an_empty_block_in_place(tmp_path):
    """An empty Output block is how an author asks for the output."""
    root = make_site(tmp_path, "good")
    slide = root / "docs/slides/01-shapes.md"
    text = slide.read_text()
    start = text.index('```text title="Output"\n') + len(
        '```text title="Output"\n'
    )
    end = text.index("```", start)
    slide.write_text(text[:start] + text[end:])
    assert cli(root, "update").returncode == 0
    assert slide.read_text() == text


# --- the runner, the cache, tables -----------------------------------------


def test_child_sees_what_a_standalone_run_sees(tmp_path):
    """__main__, argv, sys.path, cwd, stdin, threads: as `python X.py`."""
    root = tmp_path / "fidelity"
    shutil.copytree(FIXTURES / "fidelity", root)
    path = root / "snippets/env.py"
    [[run]] = run_batches(root, [[path]], timeout=60, concurrency=1)
    standalone = subprocess.run(
        [sys.executable, "snippets/env.py"],
        cwd=root,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={
            k: v for k, v in os.environ.items() if k != "MHA_REF_TABLES_FILE"
        },
    )
    assert run.exit == 0, run.stderr
    ours = run.stdout.splitlines()
    theirs = standalone.stdout.splitlines()
    # The one deliberate difference: the engine listens for tables.
    assert "tables env: True" in ours and "tables env: False" in theirs
    assert [s for s in ours if "tables env" not in s] == [
        s for s in theirs if "tables env" not in s
    ]


def test_warm_check_does_not_import_torch(tmp_path):
    """Nothing changed: hash files, read the cache, never import torch."""
    root = make_site(tmp_path, "good")
    assert cli(root, "check").returncode == 0
    code = (
        "import sys\n"
        "from lessonbuild.cli import main\n"
        "assert main(['check', '--root', '.']) == 0\n"
        "print('torch' in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=root,
        env=dict(os.environ, SNIPPET_CACHE_DIR=str(SHARED_CACHE)),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "(0 run, 3 cached)" in proc.stdout
    assert proc.stdout.splitlines()[-1] == "False"


def test_editing_one_snippet_reruns_only_it(tmp_path):
    """The cache key is per snippet: one edit, one run."""
    root = make_site(tmp_path, "good")
    first = engine_check(root)
    assert not first.problems and first.ran + first.cached == 3
    snippet = root / "snippets/02_softmax.py"
    snippet.write_text(snippet.read_text() + "# an edit\n")
    second = engine_check(root)
    assert (second.ran, second.cached, second.problems) == (1, 2, [])


def test_cache_key_covers_mha_ref_and_versions(tmp_path):
    """The base key changes with any file of mha_ref."""
    from lessonbuild.engine import cache

    fake = tmp_path / "snippets"
    (fake / "mha_ref").mkdir(parents=True)
    (fake / "mha_ref/__init__.py").write_text("X = 1\n")
    base1 = cache.base_key(fake)
    assert cache.base_key(fake) == base1
    (fake / "mha_ref/extra.py").write_text("Y = 2\n")
    assert cache.base_key(fake) != base1
    assert cache.find_package("mha_ref", fake) == fake / "mha_ref"


def test_tables_come_from_the_check(tmp_path):
    """A check returns every published table, cell for cell."""
    root = make_site(tmp_path, "good")
    tables = engine_check(root).tables
    assert tables["01_shapes.shapes"] == {
        "columns": ["tensor", "shape", "note"],
        "rows": [
            ["x", "(2, 5, 8)", "input"],
            ["heads", "(2, 2, 5, 4)", "(B, h, T, d_k)"],
            ["merged", "(2, 5, 8)", "same as x"],
        ],
    }
    assert sorted(tables) == ["01_shapes.shapes", "03_params.by_heads"]


def test_a_failing_snippet_publishes_no_table(tmp_path):
    """A snippet that fails: its error is reported, its tables absent,
    and the table() calls naming them are not reported twice."""
    root = make_site(tmp_path, "good")
    snippet = root / "snippets/03_params.py"
    snippet.write_text("raise SystemExit(3)\n" + snippet.read_text())
    result = engine_check(root)
    assert "03_params.by_heads" not in result.tables
    [problem] = result.problems
    assert "snippets/03_params.py exited with status 3" in problem.message
    assert problem.path == "docs/slides/03-silent.md"


def test_render_table_hides_a_column():
    """render_table writes Markdown; hide blanks one column's cells."""
    table = {"columns": ["a", "b|c"], "rows": [["1", "x|y"], ["2", "z"]]}
    assert api.render_table(table) == (
        "| a | b\\|c |\n|---|---|\n| 1 | x\\|y |\n| 2 | z |"
    )
    assert api.render_table(table, hide="a").splitlines()[2] == "|  | x\\|y |"
    with pytest.raises(ValueError, match="columns: a, b|c"):
        api.render_table(table, hide="nope")


def test_timeout_settings(tmp_path, monkeypatch):
    """Flag, then SNIPPET_TIMEOUT, then the plugin's snippet_timeout,
    then 60; the CLI reads the plugin block through INHERIT."""
    monkeypatch.delenv("SNIPPET_TIMEOUT", raising=False)
    assert read_settings(tmp_path).timeout() == 60
    (tmp_path / "base.yml").write_text(
        "site_name: x\nnav: !!python/name:os.getcwd\nplugins:\n"
        "  - search\n  - lesson:\n      snippet_timeout: 7\n"
    )
    (tmp_path / "mkdocs.yml").write_text("INHERIT: base.yml\n")
    settings = read_settings(tmp_path)
    assert settings.timeout() == 7
    monkeypatch.setenv("SNIPPET_TIMEOUT", "3")
    assert settings.timeout() == 3
    assert settings.timeout("2.5") == 2.5
    monkeypatch.setenv("SNIPPET_TIMEOUT", "soon")
    with pytest.raises(SettingsError, match="SNIPPET_TIMEOUT"):
        settings.timeout()
    with pytest.raises(SettingsError, match="snippet_timeout"):
        Settings.from_mapping({"snippet_timeout": "x"})
