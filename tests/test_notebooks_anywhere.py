"""The notebooks the site offers run anywhere torch and Jupyter do.

Each notebook is taken from the built site (what a student downloads)
and executed with nbclient by a fresh virtual environment that holds
only torch (==2.13.0, with what it depends on), ipykernel and nbclient,
from an empty temporary folder: no repository on the path, no
``mha_ref`` installed, no matplotlib (the setup cell installs it for the
figure cells, as a bare Jupyter needs). The
environment is made once per test session with ``python -m venv`` and
pip, from the machine's configured local wheels.

- the lesson notebook: no error, and every figure cell shows an image;
- the project notebook as downloaded (starter code): every grading cell
  prints FAIL lines with a message, no traceback;
- the project solutions: every grading cell's lines PASS;
- the homework as downloaded: each check prints FAIL and why, no
  traceback; its solutions: each check prints PASS.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

#: Executes one notebook in the fresh environment; prints a JSON summary.
RUNNER = textwrap.dedent(
    """
    import json, sys
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(sys.argv[1], as_version=4)
    NotebookClient(
        nb, timeout=600, kernel_name="python3", allow_errors=True,
        resources={"metadata": {"path": "."}},
    ).execute()
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outs = cell.get("outputs", [])
        cells.append({
            "source": cell.source,
            "errors": [o["ename"] + ": " + o["evalue"] for o in outs
                       if o.get("output_type") == "error"],
            "text": "".join(o.get("text", "") for o in outs
                            if o.get("output_type") == "stream"
                            and o.get("name") == "stdout"),
            "images": sum("image/png" in o.get("data", {}) for o in outs),
        })
    print(json.dumps(cells))
    """
)

PACKAGES = ["torch==2.13.0", "ipykernel", "nbclient"]


@pytest.fixture(scope="session")
def fresh_python(tmp_path_factory) -> Path:
    """A new venv with only the packages above; its python.

    LESSON_FRESH_VENV=DIR keeps it in DIR, made there once and reused
    by later sessions (installing torch takes minutes)."""
    given = os.environ.get("LESSON_FRESH_VENV")
    folder = Path(given) if given else tmp_path_factory.mktemp("fresh-venv")
    python = folder / "bin" / "python"
    if given and (folder / "installed").is_file():
        return python
    subprocess.run([sys.executable, "-m", "venv", folder], check=True)
    # --no-compile: pip compiles every module of torch ahead (the
    # install took 47 s here, 20 s without); the kernels, run
    # without PYTHONDONTWRITEBYTECODE as on a student's machine, compile
    # and keep only what they import, once.
    result = subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-compile", *PACKAGES],
        capture_output=True,
        text=True,
    )
    if result.returncode:
        pytest.fail("pip install failed:\n" + result.stderr[-3000:])
    (folder / "installed").write_text("\n".join(PACKAGES))
    return python


def run_notebook(python: Path, notebook: Path, tmp_path: Path) -> list[dict]:
    """Execute a downloaded copy of ``notebook`` from an empty folder."""
    work = tmp_path / "empty"
    work.mkdir()
    shutil.copy(notebook, work / notebook.name)
    (tmp_path / "runner.py").write_text(RUNNER)
    # Nothing of the repository's environment: no PYTHONPATH, no venv.
    env = {
        "PATH": f"{python.parent}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "OMP_NUM_THREADS": "1",
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
    }
    result = subprocess.run(
        [python, tmp_path / "runner.py", notebook.name],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])


def grading_cells(cells: list[dict]) -> list[dict]:
    return [c for c in cells if c["source"].startswith("check(")]


def test_lesson_notebook_runs_with_its_figures(
    built_site, fresh_python, tmp_path
):
    cells = run_notebook(
        fresh_python, built_site / "notebooks/lesson-81.ipynb", tmp_path
    )
    errors = [(c["source"][:80], c["errors"]) for c in cells if c["errors"]]
    assert errors == []
    figures = [c for c in cells if "plt.subplots" in c["source"]]
    assert len(figures) >= 4
    assert all(c["images"] >= 1 for c in figures), [
        c["source"][:80] for c in figures if not c["images"]
    ]
    sources = "\n".join(c["source"] for c in cells)
    assert "publish_" not in sources and '"""Slide' not in sources


def test_project_starter_prints_fail_lines(built_site, fresh_python, tmp_path):
    cells = run_notebook(
        fresh_python, built_site / "notebooks/project.ipynb", tmp_path
    )
    assert [c["errors"] for c in cells if c["errors"]] == []
    graded = grading_cells(cells)
    assert len(graded) == 3
    for cell in graded:
        lines = cell["text"].splitlines()
        assert lines and lines[0].startswith("FAIL"), cell["text"]
        assert "Traceback" not in cell["text"]
        assert all(len(line.split()) > 3 for line in lines if "FAIL" in line)
    assert "no attribute W_Q" in graded[0]["text"]


def test_project_solutions_pass(built_site, fresh_python, tmp_path):
    cells = run_notebook(
        fresh_python,
        built_site / "notebooks/project-solutions.ipynb",
        tmp_path,
    )
    assert [c["errors"] for c in cells if c["errors"]] == []
    graded = grading_cells(cells)
    assert len(graded) == 3
    for cell in graded:
        lines = cell["text"].splitlines()
        marks = [line.split()[0] for line in lines[:-1]]
        assert marks and set(marks) == {"PASS"}, cell["text"]
    assert graded[-1]["text"].splitlines()[-1] == "7 of 7 milestones pass"


@pytest.mark.parametrize(
    ("name", "verdict"),
    [("homework", "FAIL"), ("homework-solutions", "PASS")],
)
def test_homework_runs_anywhere(
    built_site, fresh_python, tmp_path, name, verdict
):
    """The starter's three checks print FAIL with what is wrong; the
    solutions' print PASS; no cell raises either way."""
    cells = run_notebook(
        fresh_python, built_site / f"notebooks/{name}.ipynb", tmp_path
    )
    assert [c["errors"] for c in cells if c["errors"]] == []
    checks = [c for c in cells if "homework_checks.report(" in c["source"]]
    assert len(checks) == 3
    for task, cell in enumerate(checks, 1):
        assert cell["text"].startswith(f"{verdict} task {task}: "), cell
