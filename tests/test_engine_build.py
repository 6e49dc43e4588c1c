"""The lesson plugin and its template module (macros.py) in real builds.

Fixture sites are built with ``mkdocs build --strict``; their mkdocs.yml
uses the ``lesson`` plugin and names this repo's macros module by
absolute path.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from lessonbuild.engine import ACCEPT
from lessonbuild.plugin import LessonPlugin
from lessonbuild.problems import Problem
from tests.engine_fixtures.sites import make_site, mkdocs_build

OLD_SITE = "<h1>an old, good build</h1>"


def _with_old_site(root: Path) -> Path:
    site = root / "site"
    site.mkdir()
    (site / "index.html").write_text(OLD_SITE)
    return site


@pytest.fixture(scope="module")
def bad(tmp_path_factory):
    """The bad fixture site, built (snippet_timeout: 1 in the plugin)."""
    root = make_site(tmp_path_factory.mktemp("build"), "bad", timeout=8)
    site = _with_old_site(root)
    proc = mkdocs_build(root)
    return proc.returncode, proc.stdout + proc.stderr, site


@pytest.fixture(scope="module")
def good_build(tmp_path_factory):
    """The good fixture site, built: (its root, the build's process)."""
    root = make_site(tmp_path_factory.mktemp("build"), "good")
    proc = mkdocs_build(root)
    assert proc.returncode == 0, proc.stderr
    return root, proc


@pytest.fixture(scope="module")
def good(good_build):
    """The good fixture site's built pages."""
    return good_build[0] / "site"


def test_a_good_build_shows_no_library_deprecation(good_build):
    """MkDocs shows every DeprecationWarning; the one mkdocs-macros-plugin
    triggers in pathspec (its "gitwildmatch" patterns) is not the
    contributor's to fix, and the build's log stays the lesson's."""
    _, proc = good_build
    assert "DeprecationWarning" not in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("location", "text"),
    [
        ("docs/pages/01-raises.md:4", "exited with status 1: RuntimeError"),
        ("docs/pages/02-hangs.md:4", "did not finish within 8 s"),
        ("docs/pages/03-unseeded.md:4", "is nondeterministic"),
        ("docs/pages/04-missing.md:6", "include of a missing file"),
        ("snippets/05_unused.py:1", "not included by any page"),
        ("docs/pages/06-orphan-output.md:5", "no code block above it"),
        ("docs/pages/07-tables.md:9", "known tables: 07_tables.shapes"),
        ("docs/pages/07-tables.md:11", "no such column"),
        ("docs/pages/07-tables.md:13", "known figures: "),
        ("docs/pages/08-inline.md:3", "inline Python code block"),
        ("docs/pages/09-drift.md:7", "output of snippets/09_drift.py"),
    ],
)
def test_build_reports_each_bad_input(bad, location, text):
    """Each bad input is logged at its file and line in the one build."""
    code, out, _ = bad
    assert code != 0
    assert re.search(
        rf"ERROR\s+-\s+{re.escape(location)}: .*{re.escape(text)}", out
    ), out


def test_failed_build_leaves_no_site(bad):
    """The build aborts before writing pages and removes the old site."""
    code, out, site = bad
    assert code != 0
    assert "ERROR   -  11 problems found." in out
    assert out.count("problems found") == 1
    assert "Aborted for the problems above: no site was written." in out
    assert not site.exists()


def test_good_build_renders_outputs_and_tables(good):
    """Outputs, tables, a hidden column and an mha_ref include render."""
    page = (good / "slides/01-shapes/index.html").read_text()
    assert "round trip exact: True" in page
    tables = re.findall(r"<table>.*?</table>", page, re.S)
    assert len(tables) == 2
    assert "<td>(2, 2, 5, 4)</td>" in tables[0]
    assert "(2, 2, 5, 4)" not in tables[1]  # the hidden column
    assert "<td>(B, h, T, d_k)</td>" in tables[1]
    nested = (good / "slides/02-nested/index.html").read_text()
    assert "row sums: [1.0, 1.0]" in nested
    assert "publish_table" in nested  # the mha_ref/tables.py include
    silent = (good / "slides/03-silent/index.html").read_text()
    assert "<td>2</td>" in silent and "<td>256</td>" in silent


def test_a_second_run_that_disagrees_fails_the_build_after_the_pages(
    tmp_path,
):
    """The pages render from each snippet's first run while its second
    run goes on; a second run that prints something else still fails
    the build (at the include's line) and leaves no site behind."""
    root = make_site(tmp_path, "good")
    # hash('lesson') % 1000 is 732 under seed 0 (the first run), 761
    # under seed 1: the Output block matches the first run only.
    (root / "snippets/04_hashed.py").write_text(
        "print(hash('lesson') % 1000)\n"
    )
    (root / "docs/slides/04-hashed.md").write_text(
        "---\ntitle: Hashed\nslide: 4\nkind: Worked example\n"
        "part: Fixture\n---\n\n# Hashed\n\n"
        '```python title="snippets/04_hashed.py"\n'
        '--8<-- "snippets/04_hashed.py"\n```\n\n'
        '```text title="Output"\n732\n```\n'
    )
    site = _with_old_site(root)
    proc = mkdocs_build(root, cache=None)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert re.search(
        r"ERROR\s+-\s+docs/slides/04-hashed.md:11: snippets/04_hashed.py "
        r"is nondeterministic",
        out,
    ), out
    assert "ERROR   -  1 problem found." in out
    assert "Aborted for the problems above: no site was written." in out
    assert not site.exists()


#: A build in which every computation of the engine's base key gives a
#: new one, as when a file of mha_ref is saved (or the UTC date turns)
#: while the build runs.
_KEY_MOVES = """\
import itertools
from lessonbuild.engine import cache

real, saves = cache.base_key, itertools.count()
cache.base_key = lambda snippets: f"{real(snippets)}+{next(saves)}"
from mkdocs.__main__ import cli
cli(["build", "--strict"])
"""


def test_a_file_saved_mid_build_cancels_nothing(tmp_path):
    """The homework computed the key again after the snippets' first
    runs; a new key restarted the pool, which cancelled every second
    run ("could not run snippets/X.py: cancelled", once per snippet,
    with no word of why). The key is computed once per build."""
    root = make_site(tmp_path, "good")
    notebooks = root / "notebooks"
    notebooks.mkdir()
    (notebooks / "homework_solutions.py").write_text("# %%\nprint(1)\n")
    yml = root / "mkdocs.yml"
    yml.write_text(
        yml.read_text().replace(
            "markdown_extensions:",
            '  - mkdocs-jupyter:\n      include: ["notebooks/*.ipynb"]\n'
            "markdown_extensions:",
        )
    )
    proc = subprocess.run(
        [sys.executable, "-c", _KEY_MOVES],
        cwd=root,
        env=dict(os.environ, SNIPPET_CACHE_DIR=str(tmp_path / "cache")),
        capture_output=True,
        text=True,
    )
    out = proc.stdout + proc.stderr
    assert "cancelled" not in out, out
    assert proc.returncode == 0, out


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.org",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.org",
    )
    return subprocess.run(
        ["git", *args], cwd=root, env=env, capture_output=True, text=True
    )


def test_drift_fails_the_build_and_update_restores_it(tmp_path):
    """Drift fails --strict with path:line; update leaves git diff empty."""
    root = make_site(tmp_path, "good")
    (root / ".gitignore").write_text(".cache/\nsite/\n")
    _git(root, "init", "-q")
    _git(root, "add", ".")
    assert _git(root, "commit", "-qm", "fixture").returncode == 0
    slide = root / "docs/slides/01-shapes.md"
    slide.write_text(slide.read_text().replace("(2, 5, 8)", "(2, 8, 5)", 1))
    assert _git(root, "diff", "--quiet").returncode == 1

    proc = mkdocs_build(root)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert (
        "docs/slides/01-shapes.md:14: output of snippets/01_shapes.py "
        "drifted" in out
    )
    assert "-x       : (2, 8, 5)" in out and "+x       : (2, 5, 8)" in out
    assert out.count(f"accept with: {ACCEPT}") == 1  # said once
    assert not (root / "site").exists()

    update = subprocess.run(
        [sys.executable, "-m", "lessonbuild", "update"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert update.returncode == 0, update.stderr
    diff = _git(root, "diff", "--exit-code")
    assert diff.returncode == 0, diff.stdout
    assert mkdocs_build(root).returncode == 0


def test_a_later_failure_also_removes_the_site(tmp_path):
    """Strict warnings abort after pages are written: the site goes too."""
    root = make_site(tmp_path, "good")
    (root / "docs/broken.md").write_text("# Broken\n\n[gone](nowhere.md)\n")
    site = _with_old_site(root)
    proc = mkdocs_build(root)
    assert proc.returncode != 0
    assert "in strict mode" in proc.stdout + proc.stderr
    assert not site.exists()


def test_macro_with_an_unknown_computed_id(tmp_path):
    """An id computed at build time is refused before rendering (issue
    31: a page's macros take literal arguments), at its line; so is the
    statement that computes it."""
    root = make_site(tmp_path, "good")
    (root / "docs/slides/04-dynamic.md").write_text(
        "---\ntitle: Dynamic\nslide: 4\nkind: Concept\npart: Fixture\n"
        "---\n\n# Dynamic\n\n{% set t = '01_shapes.' ~ 'nope' %}\n\n"
        "{{ table('01_shapes.' ~ 'nope') }}\n"
    )
    proc = mkdocs_build(root)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert (
        "docs/slides/04-dynamic.md:10: the statement {% assign %} is not "
        "allowed in a page's template" in out
    ), out
    assert (
        "docs/slides/04-dynamic.md:12: table() with an argument computed "
        "at build time is not allowed" in out
    ), out


def _config(tmp_path: Path) -> SimpleNamespace:
    root = tmp_path / "project"
    (root / "docs").mkdir(parents=True)
    (root / "snippets").mkdir()
    (root / "mha_ref").mkdir()
    (root / "mkdocs.yml").write_text("site_name: x\n")
    site = tmp_path / "served"
    site.mkdir()
    (site / "index.html").write_text(OLD_SITE)
    return SimpleNamespace(
        config_file_path=str(root / "mkdocs.yml"),
        docs_dir=str(root / "docs"),
        site_dir=str(site),
    )


def test_serve_failure_leaves_the_served_folder(tmp_path):
    """mkdocs serve serves nothing after a failed build: nothing to do."""
    config = _config(tmp_path)
    plugin = LessonPlugin()
    plugin.on_startup(command="serve", dirty=False)
    plugin.build.discard_site(config)
    assert (Path(config.site_dir) / "index.html").read_text() == OLD_SITE


def test_a_failed_serve_build_says_the_preview_shows_its_problems(capsys):
    """MkDocs goes on to print "Documentation built": the report says the
    pages it built show the problems, and its count is its own last line."""
    plugin = LessonPlugin()
    plugin.on_startup(command="serve", dirty=False)
    plugin.build.fail([Problem("docs/slides/01-x.md", 3, "broken")])
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "docs/slides/01-x.md:3: broken",
        "1 problem found.",
        "The preview shows these problems on every page until a build "
        "succeeds.",
    ]
    assert "docs/slides/01-x.md:3: broken" in plugin.build.failure


def test_mkdocs_jupyters_routine_lines_are_quiet_its_warnings_not():
    """Its "Cache hit", "Copied jupyter file", "Evicted stale cache"
    lines (ten a build) are not shown; its warnings still are."""
    LessonPlugin().on_startup(command="build", dirty=False)
    for name in ("mkdocs.plugins.mkdocs_jupyter", "mkdocs.mkdocs-jupyter"):
        logger = logging.getLogger(name)
        assert not logger.isEnabledFor(logging.INFO)
        assert logger.isEnabledFor(logging.WARNING)


def test_site_dir_holding_the_project_is_never_removed(tmp_path):
    """A site_dir that contains the project is left alone."""
    config = _config(tmp_path)
    config.site_dir = str(tmp_path)
    plugin = LessonPlugin()
    plugin.on_startup(command="build", dirty=False)
    plugin.build.discard_site(config)
    assert Path(config.config_file_path).exists()


def test_serve_watches_snippets_and_mha_ref(tmp_path):
    """Edits under snippets/ and mha_ref/ trigger a rebuild."""
    config = _config(tmp_path)
    watched = []
    server = SimpleNamespace(watch=watched.append)
    plugin = LessonPlugin()
    assert plugin.on_serve(server, config=config, builder=None) is server
    root = Path(config.config_file_path).parent
    assert str(root / "snippets") in watched
    assert any(Path(w).name == "mha_ref" for w in watched)
