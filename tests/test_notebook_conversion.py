"""What a notebook cell holds: a snippet without the build's plumbing,
and the setup cell that carries mha_ref."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _unpacked_by(program: Path, tmp_path: Path) -> Path:
    """Where a program that runs the setup cell, then prints
    ``mha_ref``'s folder, found the package (run as a fresh Python: only
    TMPDIR and PATH set); asserted to be the repository's, byte for
    byte."""
    result = subprocess.run(
        [sys.executable, "-I", program],
        cwd=tmp_path,
        env={"TMPDIR": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert "PLANTED" not in result.stdout, result.stdout
    unpacked = Path(result.stdout.splitlines()[-1])
    for file in (ROOT / "mha_ref").glob("*.py"):
        assert (unpacked / file.name).read_bytes() == file.read_bytes()
    return unpacked


def test_student_code_drops_the_builds_plumbing_only():
    """Docstring, section markers, noqa, Agg and publish_* go; a figure
    passed to publish_figure stays as the expression that draws it; a
    publish call alone in a block leaves the block valid."""
    import ast

    from lessonbuild.notebooks import student_code

    source = (
        '"""Slide 99: for contributors."""\n'
        "\n"
        "# --8<-- [start:show]\n"
        "import torch\n"
        "\n"
        "from mha_ref import publish_table, shape_str\n"
        "\n"
        "print(shape_str(torch.zeros(2).shape))\n"
        "# --8<-- [end:show]\n"
        "import matplotlib  # noqa: E402\n"
        "\n"
        'matplotlib.use("Agg")\n'
        "import matplotlib.pyplot as plt  # noqa: E402\n"
        "\n"
        "from mha_ref.figures import publish_figure  # noqa: E402\n"
        "\n"
        "\n"
        "def draw():\n"
        "    return plt.figure()\n"
        "\n"
        "\n"
        "# The table the slide shows.\n"
        'publish_table("t", ["a"], [[1]])\n'
        "if True:\n"
        '    publish_table("u", ["a"], [[1]])\n'
        'publish_figure(\n    "f",\n    draw(),\n    alt="a figure",\n)\n'
    )
    code = student_code(source)
    ast.parse(code)
    assert "publish" not in code and "Agg" not in code
    assert "noqa" not in code and "--8<--" not in code
    assert not code.startswith('"""') and "contributors" not in code
    assert "The table the slide shows" not in code
    assert "from mha_ref import shape_str" in code
    assert "if True:\n    pass" in code
    assert code.endswith("\ndraw()\nplt.show()")


def test_setup_cell_unpacks_the_package_it_carries(tmp_path):
    """Run the setup cell in a fresh interpreter, away from the
    repository: the package it puts on sys.path is mha_ref, byte for
    byte."""
    from lessonbuild.notebooks import setup_cell

    cell = setup_cell(ROOT / "mha_ref")
    assert cell["metadata"]["jupyter"]["source_hidden"] is True
    program = tmp_path / "setup.py"
    program.write_text(
        cell["source"]
        + "\nimport mha_ref, pathlib\n"
        + "print(pathlib.Path(mha_ref.__file__).parent)\n"
    )
    assert _unpacked_by(program, tmp_path).is_relative_to(tmp_path)


def test_setup_cell_never_imports_a_folder_someone_else_could_write(
    tmp_path,
):
    """The cell reuses what an earlier run unpacked, found by a name
    anyone can compute (the zip's digest) in the temporary folder, which
    on a shared machine every user writes: a folder planted there by
    another user (or one anybody may write into) was put first on
    sys.path, and its mha_ref, torch.py or any module name ran as the
    student who opened the notebook. Only a folder of the student's
    own, which no one else may write, is reused."""
    import hashlib
    import os

    from lessonbuild.notebooks import package_zip, setup_cell

    digest = hashlib.sha256(package_zip(ROOT / "mha_ref")).hexdigest()[:12]
    planted = tmp_path / f"lesson81-mha_ref-{digest}"
    (planted / "mha_ref").mkdir(parents=True)
    (planted / "mha_ref" / "__init__.py").write_text("print('PLANTED')\n")
    (planted / "mha_ref" / "attention.py").write_text("print('PLANTED')\n")
    planted.chmod(0o777)  # anybody's to write into
    owners = [None]
    if os.getuid() == 0:  # as root, also a folder of another user's
        owners.append(65534)
    program = tmp_path / "setup.py"
    program.write_text(
        setup_cell(ROOT / "mha_ref", figures=False)["source"]
        + "\nimport mha_ref.attention, pathlib\n"
        + "print(pathlib.Path(mha_ref.__file__).parent)\n"
    )
    for owner in owners:
        if owner is not None:
            planted.chmod(0o755)
            os.chown(planted, owner, owner)
        assert not _unpacked_by(program, tmp_path).is_relative_to(planted)


def test_setup_cell_without_matplotlib_or_pip_still_runs(tmp_path):
    """A Jupyter without matplotlib and no way to install it (no network;
    here a virtual environment without pip): the setup cell says so and
    the notebook goes on, with mha_ref unpacked. It raised, and an
    executed notebook stopped at its first cell, though only the figure
    cells need matplotlib."""
    import venv

    from lessonbuild.notebooks import setup_cell

    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)
    program = tmp_path / "setup.py"
    program.write_text(
        setup_cell(ROOT / "mha_ref")["source"]
        + "\nimport mha_ref.attention\nprint('GOT', mha_ref.__name__)\n"
    )
    # mha_ref imports torch: the bare environment gets this one's
    # packages on its path, with matplotlib hidden (``find_spec`` finds no
    # module whose ``sys.modules`` entry is None); pip it has none of.
    packages = next(p for p in sys.path if p.endswith("site-packages"))
    hide = (
        f"import runpy, sys; sys.path.append({packages!r}); "
        "sys.modules['matplotlib'] = None; "
        "runpy.run_path(sys.argv[1], run_name='__main__')"
    )
    result = subprocess.run(
        [bare / "bin" / "python", "-I", "-c", hide, program],
        cwd=tmp_path,
        env={"TMPDIR": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "matplotlib could not be installed" in result.stdout
    assert "pip install matplotlib" in result.stdout
    assert "GOT mha_ref" in result.stdout
