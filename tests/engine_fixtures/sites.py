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
plugins:
  - lesson:
      parts: [Fixture]
{settings}markdown_extensions:
  - admonition
  - tables
  - pymdownx.details
  - pymdownx.superfences
  - pymdownx.snippets:
      base_path: ["."]
      check_paths: true
"""


def make_site(dest: Path, name: str, timeout: float | None = None) -> Path:
    """Copy fixture ``name`` to ``dest/name``, with a mkdocs.yml.

    ``mha_ref/`` is copied in, as pymdownx.snippets resolves
    ``--8<-- "mha_ref/..."`` from the site's root (a link would leave
    the site's root, which the engine refuses). Snippets still import
    the installed ``mha_ref``.
    """
    root = dest / name
    shutil.copytree(FIXTURES / name, root)
    shutil.copytree(
        REPO / "mha_ref",
        root / "mha_ref",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    settings = f"      snippet_timeout: {timeout}\n" if timeout else ""
    (root / "mkdocs.yml").write_text(
        MKDOCS_YML.format(repo=REPO, settings=settings), encoding="utf-8"
    )
    return root


def _env(cache: Path | None) -> dict:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    env.pop("SNIPPET_TIMEOUT", None)
    if cache is not None:
        env["SNIPPET_CACHE_DIR"] = str(cache)
    return env


def engine(root: Path, *args: str, cache: Path | None = SHARED_CACHE):
    """``python -m lessonbuild ARGS --root .`` run from the root."""
    return subprocess.run(
        [sys.executable, "-m", "lessonbuild", *args, "--root", "."],
        cwd=root,
        env=_env(cache),
        capture_output=True,
        text=True,
    )


def mkdocs_build(
    root: Path, cache: Path | None = SHARED_CACHE, env: dict | None = None
):
    """``mkdocs build --strict`` of the site at ``root``, by the
    ``mkdocs`` command, as ``make build`` runs it (``python -m mkdocs``
    shows fewer of the libraries' warnings).

    ``cache=None``: no shared cache (the site's own .cache/engine).
    """
    return subprocess.run(
        [str(Path(sys.executable).with_name("mkdocs")), "build", "--strict"],
        cwd=root,
        env={**_env(cache), **(env or {})},
        capture_output=True,
        text=True,
    )


#: {root: runner.Pool}: the fork servers of the sites a test checked,
#: kept for its next check of the same site, as ``mkdocs serve`` keeps
#: them across rebuilds (their key replaces them when snippets change).
#: Each starts two interpreters that import torch (1.6 s of CPU each);
#: a test that checked one site six times started twelve.
#: tests/conftest.py closes them when each test ends.
POOLS: dict = {}


def close_pools() -> None:
    """Stop every pool :func:`check` kept (the end of a test)."""
    while POOLS:
        POOLS.popitem()[1].close()


def check(
    root: Path,
    *,
    timeout: float = 60,
    cache: Path | None = None,
    jobs: int = 2,
):
    """The engine's check of the site at ``root``, in this process.

    Returns the engine's ``Result`` with the deck's problems added in
    front, as ``python -m lessonbuild check`` reports them.
    """
    from lessonbuild import engine as api
    from lessonbuild.deck import read_deck
    from lessonbuild.engine.runner import Pool

    deck = read_deck(root, parts=["Fixture"])
    if root not in POOLS:
        POOLS[root] = Pool(root)
    result = api.check(
        deck,
        timeout=timeout,
        jobs=jobs,
        cache_dir=SHARED_CACHE if cache is None else cache,
        pool=POOLS[root],
    )
    result.problems[:0] = deck.problems
    return result


def run_batches(root: Path, batches, **options):
    """Run each batch of snippet paths on a pool started for it alone."""
    from lessonbuild.engine.runner import Pool

    pool = Pool(root)
    try:
        return pool.run(batches, **options)
    finally:
        pool.close()
