"""Copy a fixture site into a temporary folder and run the engine on it."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent
#: One run cache for the whole test session: a fixture snippet that ran
#: once is not run again by the next test that copies the same site.
SHARED_CACHE = Path(tempfile.mkdtemp(prefix="engine-test-cache-"))
atexit.register(shutil.rmtree, SHARED_CACHE, ignore_errors=True)

MKDOCS_YML = """\
site_name: Engine fixture
site_dir: site
strict: true
theme:
  name: mkdocs
hooks:
  - {repo}/scripts/lessonbuild/hooks/engine_hook.py
plugins:
  - macros:
      module_name: {repo}/scripts/lessonbuild/macros
      on_undefined: strict
      on_error_fail: true
markdown_extensions:
  - admonition
  - tables
  - pymdownx.details
  - pymdownx.superfences
  - pymdownx.snippets:
      base_path: ["."]
      check_paths: true
{extra}"""


def make_site(dest: Path, name: str, timeout: float | None = None) -> Path:
    """Copy fixture ``name`` to ``dest/name``, with a mkdocs.yml.

    ``mha_ref/`` is linked into the copy, as pymdownx.snippets resolves
    ``--8<-- "mha_ref/..."`` from the site's root.
    """
    root = dest / name
    shutil.copytree(FIXTURES / name, root)
    (root / "mha_ref").symlink_to(REPO / "mha_ref")
    extra = f"extra:\n  snippet_timeout: {timeout}\n" if timeout else ""
    (root / "mkdocs.yml").write_text(
        MKDOCS_YML.format(repo=REPO, extra=extra), encoding="utf-8"
    )
    return root


def _env(cache: Path | None) -> dict:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    env.pop("SNIPPET_TIMEOUT", None)
    if cache is not None:
        env["SNIPPET_CACHE_DIR"] = str(cache)
    return env


def engine(root: Path, *args: str, cache: Path | None = SHARED_CACHE):
    """``python -m lessonbuild.engine ARGS --root ROOT`` run from the root."""
    return subprocess.run(
        [sys.executable, "-m", "lessonbuild.engine", *args, "--root", "."],
        cwd=root,
        env=_env(cache),
        capture_output=True,
        text=True,
    )


def mkdocs_build(root: Path, cache: Path | None = SHARED_CACHE):
    """``mkdocs build --strict`` of the site at ``root``."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict"],
        cwd=root,
        env=_env(cache),
        capture_output=True,
        text=True,
    )
