"""Shared fixtures: the real site, built once per test session."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    """The lesson site, built strictly.

    ``make test`` builds ``site/`` first and passes it in LESSON_SITE_DIR, so
    the suite does not build twice; run alone, pytest builds its own copy.
    """
    given = os.environ.get("LESSON_SITE_DIR")
    if given:
        site = (ROOT / given).resolve()
        if not (site / "index.html").is_file():
            pytest.fail(f"LESSON_SITE_DIR={given} holds no built site")
        return site
    site = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", site],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        pytest.fail("mkdocs build --strict failed:\n" + result.stderr[-4000:])
    return site
