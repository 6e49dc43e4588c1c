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
