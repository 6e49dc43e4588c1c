"""The notebook pages converted in the background (notebooks.Converting).

A fork of the build converts a notebook with mkdocs-jupyter's own code
while the slides render; mkdocs-jupyter's cache then holds exactly the
page it would have made itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from mkdocs.config import load_config
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

from lessonbuild.notebooks import Converting, to_ipynb

ROOT = Path(__file__).resolve().parents[1]


def _config_and_files(tmp_path: Path, cache: Path):
    """The lesson's MkDocs config, and one notebook under tmp_path."""
    folder = tmp_path / "made"
    (folder / "notebooks").mkdir(parents=True)
    nb = to_ipynb(ROOT / "notebooks" / "homework.py")
    nbformat.write(nb, folder / "notebooks" / "homework.ipynb")
    config = load_config(
        str(ROOT / "mkdocs.yml"), site_dir=str(tmp_path / "s")
    )
    jupyter = config.plugins["mkdocs-jupyter"]
    jupyter.config["cache_dir"] = str(cache)
    jupyter.on_pre_build(config)  # as a build starts it
    file = File(
        "notebooks/homework.ipynb",
        str(folder),
        config.site_dir,
        config.use_directory_urls,
    )
    files = jupyter.on_files(Files([file]), config)
    return config, files


def test_the_background_conversion_fills_mkdocs_jupyters_cache(tmp_path):
    cache = tmp_path / "cache"
    config, files = _config_and_files(tmp_path, cache)
    converting = Converting(config, files, ["notebooks/homework.ipynb"])
    assert converting.uris == {"notebooks/homework.ipynb"}
    converting.wait()
    (entry,) = cache.rglob("*.json")
    cached = json.loads(entry.read_text(encoding="utf-8"))

    # What mkdocs-jupyter makes of the same file here, with no cache.
    jupyter = config.plugins["mkdocs-jupyter"]
    jupyter.config["cache"] = False
    file = files.get_file_from_path("notebooks/homework.ipynb")
    page = jupyter.on_pre_page(Page(None, file, config), config, files)
    page.render(config, files)
    assert cached["content"] == page.content
    assert "Lesson 81 homework" in page.content


def test_no_background_conversion_without_mkdocs_jupyters_cache(tmp_path):
    config, files = _config_and_files(tmp_path, tmp_path / "cache")
    config.plugins["mkdocs-jupyter"].config["cache"] = False
    converting = Converting(config, files, ["notebooks/homework.ipynb"])
    assert converting.pid is None and converting.uris == set()
    converting.wait()
    assert not (tmp_path / "cache").exists()


# --- what a notebook cell holds ---------------------------------------------


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
    import subprocess
    import sys

    from lessonbuild.notebooks import setup_cell

    cell = setup_cell(ROOT / "mha_ref")
    assert cell["metadata"]["jupyter"]["source_hidden"] is True
    program = tmp_path / "setup.py"
    program.write_text(
        cell["source"]
        + "\nimport mha_ref, pathlib\n"
        + "print(pathlib.Path(mha_ref.__file__).parent)\n"
    )
    result = subprocess.run(
        [sys.executable, "-I", program],
        cwd=tmp_path,
        env={"TMPDIR": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    unpacked = Path(result.stdout.splitlines()[-1])
    assert unpacked.is_relative_to(tmp_path)
    for file in (ROOT / "mha_ref").glob("*.py"):
        assert (unpacked / file.name).read_bytes() == file.read_bytes()
