"""The pre-commit hooks: clean on a clone of HEAD, failing on inline Python.

Each test clones the committed repository (a contributor's fresh clone),
links this checkout's .venv into it (the hooks run the tools `make`
installed there) and puts the clone's own ``lessonbuild`` first on the
path, then runs ``pre-commit run --all-files`` as a contributor would.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PRE_COMMIT = Path(sys.executable).parent / "pre-commit"

pytestmark = pytest.mark.skipif(
    not PRE_COMMIT.exists(), reason="pre-commit is not installed (make)"
)


@pytest.fixture
def clone(tmp_path) -> Path:
    dest = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--no-hardlinks", str(REPO), str(dest)],
        check=True,
    )
    (dest / ".venv").symlink_to(REPO / ".venv")
    return dest


def _pre_commit(clone: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(clone / "scripts"), str(clone)])
    env["PRE_COMMIT_HOME"] = str(clone.parent / "pre-commit-home")
    return subprocess.run(
        [str(PRE_COMMIT), "run", "--all-files", "--color", "never"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _first_slide(clone: Path) -> Path:
    return sorted((clone / "docs" / "slides").glob("*.md"))[0]


def test_hooks_pass_on_a_clean_clone(clone):
    run = _pre_commit(clone)
    assert run.returncode == 0, (
        "pre-commit run --all-files fails on a clone of HEAD; run "
        "`make pre-commit` and fix what it names:\n" + run.stdout
    )
    assert "slides (front matter" in run.stdout


def test_inline_python_on_a_slide_fails_at_its_line(clone):
    slide = _first_slide(clone)
    text = slide.read_text(encoding="utf-8")
    fence_line = text.count("\n") + 2  # after the blank line added below
    slide.write_text(
        text + '\n```python\nprint("typed, not included")\n```\n',
        encoding="utf-8",
    )
    subprocess.run(["git", "-C", str(clone), "add", "-A"], check=True)
    run = _pre_commit(clone)
    assert run.returncode != 0, run.stdout
    rel = slide.relative_to(clone).as_posix()
    assert f"{rel}:{fence_line}: inline Python code block" in run.stdout, (
        run.stdout
    )


def test_a_bad_exercise_fails_at_its_line(clone):
    slide = _first_slide(clone)
    text = slide.read_text(encoding="utf-8")
    fence_line = text.count("\n") + 2
    slide.write_text(
        text + "\n```exercise\nkind: guess\nprompt: What?\n```\n",
        encoding="utf-8",
    )
    run = _pre_commit(clone)
    assert run.returncode != 0, run.stdout
    rel = slide.relative_to(clone).as_posix()
    assert f"{rel}:{fence_line + 1}: unknown exercise kind 'guess'" in (
        run.stdout
    ), run.stdout
