"""A copy of the lesson site in a temporary folder, for build tests.

Its mkdocs.yml inherits the lesson's (``INHERIT:``), so a fixture never
drifts from the real configuration; the folders the config names
relative to the project (overrides/, scripts/) are linked; mha_ref/ is
copied, since slides include its files and an include must resolve
inside the site's own root.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINKED = ("overrides", "scripts")


def copy_lesson(dest: Path, extra_yml: str = "") -> Path:
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
    # The executed homework, if the project's build made it: keyed by its
    # source and the engine's key, so the copy reuses it unless a test
    # changed what it depends on (a clean copy would rerun its kernel).
    executed = REPO / ".cache" / "notebooks"
    if executed.is_dir():
        shutil.copytree(executed, root / ".cache" / "notebooks")
    (root / "mkdocs.yml").write_text(
        f"INHERIT: {REPO / 'mkdocs.yml'}\nsite_dir: site\n{extra_yml}",
        encoding="utf-8",
    )
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
