"""lessonbuild.sitediff: two git revisions of a tiny site, built and compared.

The fixture is a three-slide site in its own git repository, built with
the real lesson plugin and Material. Revision 2 edits slide 1's prose and
slide 2's snippet (and accepts its new output); slide 3 is untouched. The
summary must list exactly slides 1 and 2, and for slide 2 the changed
Output block with the old and new lines.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

MKDOCS_YML = """\
site_name: Site diff fixture
use_directory_urls: false
strict: true
theme:
  name: material
plugins:
  - lesson:
      parts: [Only]
markdown_extensions:
  - tables
  - pymdownx.highlight
  - pymdownx.superfences
  - pymdownx.snippets:
      base_path: ["."]
      check_paths: true
"""

SLIDE = """\
---
title: {title}
slide: {n}
kind: Concept
part: Only
---

# {title}

{prose}

{code}
"""

CODE = """\
```python title="snippets/{stem}.py"
--8<-- "snippets/{stem}.py"
```

```text title="Output"
{output}
```
"""

TABLE = """\
| head | value |
|---|---|
| h | 2 |
"""


def _slide(n, title, prose, stem=None, output=None):
    code = CODE.format(stem=stem, output=output) if stem else TABLE
    return SLIDE.format(n=n, title=title, prose=prose, code=code)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def _commit(repo: Path, files: dict[str, str], message: str) -> str:
    for rel, text in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def two_revisions(tmp_path_factory):
    repo = tmp_path_factory.mktemp("sitediff") / "site"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "test@example.invalid")
    _git(repo, "config", "user.name", "test")
    base = _commit(
        repo,
        {
            "mkdocs.yml": MKDOCS_YML,
            "docs/index.md": "# Home\n",
            "docs/slides/01-prose.md": _slide(
                1, "Prose", "Heads attend.", "01_one", "one = 1"
            ),
            "snippets/01_one.py": 'print("one =", 1)\n',
            "docs/slides/02-snippet.md": _slide(
                2, "Snippet", "Shapes.", "02_two", "two = 2"
            ),
            "snippets/02_two.py": 'print("two =", 2)\n',
            "docs/slides/03-table.md": _slide(3, "Table", "Untouched."),
        },
        "base",
    )
    head = _commit(
        repo,
        {
            "docs/slides/01-prose.md": _slide(
                1, "Prose", "Each head attends.", "01_one", "one = 1"
            ),
            "snippets/02_two.py": 'print("two =", 1 + 1 + 0.5)\n',
            "docs/slides/02-snippet.md": _slide(
                2, "Snippet", "Shapes.", "02_two", "two = 2.5"
            ),
        },
        "edit one slide's prose and one snippet",
    )
    return repo, base, head


def _sitediff(repo: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    env["SNIPPET_CACHE_DIR"] = str(repo.parent / "cache")
    return subprocess.run(
        [sys.executable, "-m", "lessonbuild.sitediff", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _rows(summary: str) -> dict[str, str]:
    """The summary's table: page -> what changed."""
    rows = {}
    for line in summary.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 3:
            rows[cells[0].strip("`")] = cells[2]
    return rows


def test_a_revision_against_the_tree_lists_exactly_the_edited_slides(
    two_revisions,
):
    """``make site-diff BASE=...``: the base from a worktree, the tree
    (at the second revision) built where it is."""
    repo, base, head = two_revisions
    run = _sitediff(repo, "--base", base)
    assert run.returncode == 0, run.stderr
    summary = run.stdout
    # Pages that gather every slide (the plugin's deck view) change with
    # any slide; the slide pages themselves must be exactly the two.
    rows = {p: w for p, w in _rows(summary).items() if "slides/" in p}
    assert set(rows) == {
        "slides/01-prose.html",
        "slides/02-snippet.html",
    }, summary
    assert rows["slides/01-prose.html"] == "text", summary
    assert "`Output of snippets/02_two.py`" in rows["slides/02-snippet.html"]
    assert "code `snippets/02_two.py`" in rows["slides/02-snippet.html"]
    assert "text" not in rows["slides/02-snippet.html"].split(", ")
    assert "-two = 2\n+two = 2.5" in summary, summary
    # The worktrees are gone: only the repository's own tree is listed.
    assert len(_git(repo, "worktree", "list").splitlines()) == 1


def test_two_site_folders(two_revisions, tmp_path):
    repo = two_revisions[0]
    old, new = tmp_path / "old", tmp_path / "new"
    for site in (old, new):
        (site / "slides").mkdir(parents=True)
    page = "<html><body><main><h1>T</h1>{}</main></body></html>"
    (old / "slides/01-x.html").write_text(page.format("<p>a</p>"))
    (new / "slides/01-x.html").write_text(page.format("<p>b</p>"))
    (new / "slides/02-y.html").write_text(page.format("<p>new</p>"))
    run = _sitediff(repo, str(old), str(new))
    assert run.returncode == 0, run.stderr
    assert _rows(run.stdout) == {
        "slides/01-x.html": "text",
        "slides/02-y.html": "added",
    }, run.stdout
