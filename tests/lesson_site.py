"""A copy of the lesson site in a temporary folder, for build tests.

The copy is the project as a snippet run sees it, so a build of it
reuses the project's caches: its mkdocs.yml and the other files the run
cache's key hashes are copied byte for byte (the key is then the
project's; a fixture never drifts from the real configuration), the
folders the config names relative to the project (overrides/, scripts/)
are linked, mha_ref/ is copied, since slides include its files and an
include must resolve inside the site's own root.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from lessonbuild.engine.cache import data_files
from lessonbuild.sitediff import SHARED_CACHES

REPO = Path(__file__).resolve().parents[1]
LINKED = ("overrides", "scripts")


def copy_lesson(dest: Path) -> Path:
    """docs/, snippets/, notebooks/ copied, the rest linked; the root."""
    root = dest / "lesson"
    root.mkdir()
    shutil.copytree(REPO / "docs", root / "docs", symlinks=True)
    shutil.copytree(REPO / "snippets", root / "snippets")
    shutil.copytree(REPO / "notebooks", root / "notebooks")
    shutil.copytree(
        REPO / "mha_ref",
        root / "mha_ref",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    for name in LINKED:
        (root / name).symlink_to(REPO / name)
    # The repository's other files a snippet may read from C (Makefile,
    # pyproject.toml...) are in every run's key: copied, the copy's key
    # is the project's, and its unchanged snippets and homework are not
    # run again (without them every one ran: 30 s of a 36 s first build).
    for rel in data_files(REPO):
        if not (root / rel).exists():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, root / rel)
    # The caches keyed by content, if the project's build made them, as
    # `make site-diff` shares them (lessonbuild.sitediff.SHARED_CACHES):
    # the executed homework (keyed by its source and the engine's key)
    # and mkdocs-jupyter's conversions, so the copy reuses them unless a
    # test changed what they depend on; and Jinja's compiled templates
    # (keyed by each template's source). A copy without them took 30 s
    # to build, 6 s with them.
    for cache in (*SHARED_CACHES, Path(".cache/templates")):
        if (REPO / cache).is_dir():
            shutil.copytree(REPO / cache, root / cache)
    return root


def _env() -> dict[str, str]:
    """The project's run cache: a copy's unchanged snippets are not run
    again (its keys hash every input, so sharing is safe)."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    env.setdefault("SNIPPET_CACHE_DIR", str(REPO / ".cache" / "engine"))
    return env


def build(root: Path, *args: str, code: str | None = None):
    """``mkdocs build --strict`` at ``root`` (optionally via ``code``)."""
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", *args]
    if code is not None:
        command = [sys.executable, "-c", code, *args]
    return subprocess.run(
        command, cwd=root, env=_env(), capture_output=True, text=True
    )


def lessonbuild(root: Path, *args: str):
    """``python -m lessonbuild ARGS`` at ``root`` (``update``, ``check``)."""
    return subprocess.run(
        [sys.executable, "-m", "lessonbuild", *args],
        cwd=root,
        env=_env(),
        capture_output=True,
        text=True,
    )
