"""The contributor documents stand on their own: every path they name
exists, and nothing in the project cites a document outside it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ["ARCHITECTURE.md", "README.md", "CONTRIBUTING.md"]
# Documents of the original brief, which live outside the repository.
OUTSIDE = ("../shared", "DESIGN.md", "slide-map.md")
# `a/b.py`, `docs/assets/`, `mkdocs.yml`: code spans that name a path.
PATH_SPAN = re.compile(r"`([\w.-]+(?:/[\w.-]*)+|[\w-]+\.(?:md|yml|toml|txt))`")


def named_paths(text: str) -> list[str]:
    out = []
    for span in PATH_SPAN.findall(text):
        if "NN" in span or span.startswith(("http", "site/", ".venv")):
            continue  # a pattern ("NN-slug.md") or a build product
        out.append(span)
    return out


@pytest.mark.parametrize("name", DOCS)
def test_every_path_a_contributor_document_names_exists(name):
    text = (ROOT / name).read_text(encoding="utf-8")
    paths = named_paths(text)
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert missing == [], f"{name} names paths that do not exist"


def test_architecture_names_the_package_modules():
    """The module table is not an empty promise: it names real files."""
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert "scripts/lessonbuild/deck.py" in named_paths(text)
    assert len(named_paths(text)) >= 15


def test_no_project_file_cites_a_document_outside_the_repository():
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    offenders = []
    for rel in files:
        path = ROOT / rel
        if rel == "tests/test_contributor_docs.py" or rel.startswith(
            ("docs/assets/vendor/", "tests/data/")
        ):
            continue
        if not path.is_file() or path.suffix in {".woff2", ".png", ".pdf"}:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if (
            "../shared" in text
            or "DESIGN.md" in text
            or "slide-map.md" in text
        ):
            offenders.append(rel)
    assert offenders == [], "cite ARCHITECTURE.md instead"
