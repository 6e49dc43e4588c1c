"""Shared fixtures: the real site, built once per test session.

The suite runs on every core (pytest-xdist, ``make test`` and ``make
test-fast`` pass ``-n auto --dist loadscope``). Two rules keep that from
doing work twice:

- a file's tests stay on one worker (its module fixtures, such as a
  lesson copy it builds, are made once), and every test under
  ``tests/browser`` shares one worker: one Chromium, one build of the
  exercise fixture site, one server. (Spread over both workers, the
  browser files were no faster in wall time on 2 cores, and a keyboard
  test of the discussion kind failed twice in clean-clone runs and
  never alone: kept on one worker until that is understood. Spread
  over the workers again, with the rest of the suite trimmed, the run
  took 732 s against 699 s.)
- a site that several workers read (the lesson itself, when
  ``LESSON_SITE_DIR`` names no build) is built once per session by
  whichever worker asks first, under a file lock, in a folder all the
  session's workers share.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock

ROOT = Path(__file__).resolve().parents[1]


#: The slowest test groups, slowest first (the seconds of a 2-core run,
#: each group's tests summed: ``make test PYTEST_ARGS=--durations=0``;
#: measured 2026-12-03). xdist hands out groups in collection order;
#: started first, the long ones no longer leave one worker running alone
#: at the end.
SLOWEST_FIRST = [
    "tests/browser/",  # 681, all in one group (above)
    "tests/test_grade.py",  # 319
    "tests/test_trust.py",  # 220
    "tests/test_rebuild.py",  # 111
    "tests/test_notebooks_anywhere.py",  # 107
    "tests/test_engine_pool.py",  # 62
]


def pytest_collection_modifyitems(items):
    """The groups of :data:`SLOWEST_FIRST` first, in its order; the rest
    as collected."""

    def rank(item) -> int:
        path = item.nodeid.split("::")[0]
        starts = (i for i, p in enumerate(SLOWEST_FIRST) if path.startswith(p))
        return next(starts, len(SLOWEST_FIRST))

    items.sort(key=rank)


@pytest.fixture(scope="session", autouse=True)
def _one_torch_thread():
    """One torch thread in each test process. The tensors are tiny and
    the other worker keeps the second core busy: a second thread mostly
    waits to be scheduled (tests/test_grade.py's correct-module and bug
    cases, one process on a quiet machine: 42.6 s with torch's default
    of two threads, 30.4 s with one). Programs the tests start keep
    their own default. (A fixture: xdist's controller runs no test and
    need not import torch.)"""
    import torch

    torch.set_num_threads(1)


@pytest.hookimpl(optionalhook=True)  # pytest -p no:xdist still runs
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadscope``, with this project's scopes: a test file, or
    all of tests/browser as one. (xdist's own ``--dist loadgroup`` marks
    do not take under pytest 9, whose node ids no longer come from the
    attribute xdist rewrites.)"""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByFile(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "browser" if path.startswith("tests/browser/") else path

    return ByFile(config, log)


@pytest.fixture(autouse=True)
def _engine_pools():
    """The fork servers a test's engine checks kept end with the test."""
    yield
    sites = sys.modules.get("tests.engine_fixtures.sites")
    if sites is not None:
        sites.close_pools()


def session_folder(tmp_path_factory, worker_id: str) -> Path:
    """A folder every worker of this test session shares (and no other
    session): the parent of the workers' own temporary folders."""
    base = tmp_path_factory.getbasetemp()
    return base if worker_id == "master" else base.parent


def built_once(
    tmp_path_factory, worker_id: str, name: str, build: Callable[[Path], str]
) -> Path:
    """``session folder / name``, made by ``build(dest)`` once per session.

    ``build`` returns "" on success, else what went wrong; a failure is
    kept too, so every worker that asks fails with the same message
    instead of building again.
    """
    shared = session_folder(tmp_path_factory, worker_id)
    dest = shared / name
    done, failed = shared / f"{name}.done", shared / f"{name}.failed"
    with FileLock(str(shared / f"{name}.lock")):
        if not done.exists() and not failed.exists():
            error = build(dest)
            (failed if error else done).write_text(error, encoding="utf-8")
    if failed.exists():
        pytest.fail(failed.read_text(encoding="utf-8"))
    return dest


def _mkdocs_build(dest: Path) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", dest],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        return "mkdocs build --strict failed:\n" + result.stderr[-4000:]
    return ""


@pytest.fixture(scope="session")
def built_site(tmp_path_factory, worker_id) -> Path:
    """The lesson site, built strictly.

    ``make test`` builds ``site/`` first and passes it in LESSON_SITE_DIR, so
    the suite does not build twice; run alone, pytest builds its own copy,
    once for all its workers.
    """
    given = os.environ.get("LESSON_SITE_DIR")
    if given:
        site = (ROOT / given).resolve()
        if not (site / "index.html").is_file():
            pytest.fail(f"LESSON_SITE_DIR={given} holds no built site")
        return site
    return built_once(tmp_path_factory, worker_id, "site", _mkdocs_build)
