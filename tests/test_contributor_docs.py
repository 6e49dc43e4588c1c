"""The contributor documents stand on their own: every path they name
exists, and nothing in the project cites a document outside it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ["ARCHITECTURE.md", "README.md", "CONTRIBUTING.md"]
# A Markdown document named in running text: `ARCHITECTURE.md`,
# `docs/index.md` (not a CSS class such as `.md-nav`).
DOC_NAME = re.compile(
    r"(?<![\w./-])(?:[\w.-]+/)*([A-Za-z][\w-]*\.md)(?![\w-])"
)
#: Documents and configuration, whose relative paths are file paths.
PROSE = {".md", ".yml", ".yaml", ".toml", ".txt", ".cfg", ".jsonc"}
# A relative path that climbs: `../assets/lesson.css`.
CLIMB = re.compile(r"(?:\.\./)+[\w.-][\w./-]*")
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


def project_texts():
    """(path, text) of every text file the project keeps or adds."""
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for rel in files:
        path = ROOT / rel
        if rel.startswith(("docs/assets/vendor/", "tests/data/")):
            continue
        if not path.is_file() or path.suffix in {".woff2", ".png", ".pdf"}:
            continue
        try:
            yield rel, path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue


def test_every_document_the_project_names_is_in_it():
    """A contributor's clone holds every .md the code and docs cite.

    Tests are left out: they write fixture pages of their own. A name
    with NN in it is a pattern (`NN-slug.md`), not a file.
    """
    texts = dict(project_texts())
    kept = {Path(rel).name for rel in texts}
    missing = sorted(
        f"{rel}: {name}"
        for rel, text in texts.items()
        if not rel.startswith("tests/")
        for name in set(DOC_NAME.findall(text))
        if name not in kept and "NN" not in name
    )
    assert missing == [], "cite ARCHITECTURE.md or add the document"


def test_no_relative_path_leaves_the_repository():
    """`../x` from a file's folder stays inside the clone; in documents
    and configuration (not code, whose `../` may be a page URL) it must
    also name something the clone has."""
    from lessonbuild.notebooks import DECK_NOTEBOOK, HOMEWORK, PACKAGE_ZIP

    # The notebooks and the package the build writes into the site,
    # beside docs' pages.
    built = {
        (ROOT / "docs" / uri)
        for uri in (DECK_NOTEBOOK, *HOMEWORK, PACKAGE_ZIP)
    }
    problems = []
    for rel, text in project_texts():
        prose = Path(rel).suffix in PROSE or Path(rel).name == "Makefile"
        for climb in set(CLIMB.findall(text)):
            target = ((ROOT / rel).parent / climb).resolve()
            if not target.is_relative_to(ROOT) or (
                prose and not target.exists() and target not in built
            ):
                problems.append(f"{rel}: {climb}")
    assert sorted(problems) == []


#: `mha_ref.tables.publish_value`, `lessonbuild.engine.prose`: a dotted
#: Python name in a code span of a contributor document.
DOTTED = re.compile(r"`((?:mha_ref|lessonbuild)(?:\.\w+)+)[`(]")
#: `from mha_ref.tables import publish_value` in a code block.
FROM_IMPORT = re.compile(
    r"^from ((?:mha_ref|lessonbuild)[\w.]*) import ([\w, ]+)$", re.M
)


def _importable(dotted: str) -> bool:
    """Does ``a.b.c`` name a module, or an attribute of one, as written?"""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(found, name):
                return False
            found = getattr(found, name)
        return True
    return False


@pytest.mark.parametrize("name", DOCS)
def test_every_python_name_a_document_gives_is_importable_as_written(name):
    """`mha_ref.publish_value` must be a name a snippet can import: a
    contributor copies what the documents say."""
    text = (ROOT / name).read_text(encoding="utf-8")
    names = set(DOTTED.findall(text))
    for module, imported in FROM_IMPORT.findall(text):
        names |= {f"{module}.{n.strip()}" for n in imported.split(",")}
    wrong = sorted(n for n in names if not _importable(n))
    assert wrong == [], f"{name} names what Python cannot import"


def test_contributing_teaches_value_and_figure_with_the_worked_example():
    """The worked example is the real one: slide 23 calls what the
    document shows, and the snippet publishes it."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    slide = (
        ROOT / "docs/slides/23-verify-param-count-for-any-h.md"
    ).read_text(encoding="utf-8")
    snippet = (ROOT / "snippets/23_params.py").read_text(encoding="utf-8")
    for call in ('{{ value("23_params.heads") }}', '{{ figure("'):
        assert call in text
    assert '{{ value("23_params.heads") }}' in slide
    for line in ('publish_value("heads"', 'publish_value("total"'):
        assert line in text and line in snippet


def test_the_worked_example_is_the_snippet_as_it_is():
    """CONTRIBUTING shows snippets/23_params.py itself (less its
    docstring), so a contributor who copies it gets a file that runs and
    passes the linter, and an edit to the snippet cannot leave it stale."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text.split("### Numbers in prose", 1)[1]
    shown = section.split("```python\n", 1)[1].split("```\n", 1)[0]
    snippet = (ROOT / "snippets/23_params.py").read_text(encoding="utf-8")
    body = snippet.split('"""\n', 1)[1].lstrip("\n")
    assert shown == body, (
        "CONTRIBUTING.md's worked example (### Numbers in prose) shows "
        "snippets/23_params.py as it is, less its docstring: after changing "
        "the snippet, paste its code (below the docstring) into that "
        "```python block"
    )


#: CONTRIBUTING's example of a broken exercise: the edits its sentence
#: describes, (old text, new text), each found in the one slide that
#: holds it (by text, not file name: `make insert-slide` renames slides).
BROKEN_EXERCISE_EDITS = (
    (
        'variants: "24_variants.params"',
        'variants: "24_variants.param"',
    ),
    (
        "    tempts: |\n      Counts one matrix out of four: \\(W^Q\\),"
        " \\(W^K\\) and \\(W^V\\) are\n"
        "      \\((d_{\\text{model}}, d_{\\text{model}})\\) as well.\n",
        "",
    ),
)


def test_the_broken_exercise_example_is_what_the_build_prints():
    """CONTRIBUTING's "A broken exercise fails the build" block is what
    the build's exercise check says about the edits its sentence names
    (the file, the line, the message up to its "…"): it once showed line
    16 and an option B, two slide edits ago."""
    from lessonbuild import engine
    from lessonbuild.deck import parse_slide, read_deck
    from lessonbuild.engine.prose import expand_values
    from lessonbuild.exercises import validate
    from lessonbuild.settings import read_settings

    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    block = text.split("A broken exercise fails the build.", 1)[1]
    block = block.split("```text\n", 1)[1].split("```", 1)[0]
    shown = re.findall(r"^ERROR +- +(\S+?):(\d+): (.+?)(?: …)?$", block, re.M)
    assert len(shown) == len(BROKEN_EXERCISE_EDITS), block
    deck = read_deck(ROOT, parts=read_settings(ROOT).parts)
    result = engine.check(
        deck, timeout=300, jobs=2, cache_dir=ROOT / ".cache" / "engine"
    )
    printed = []
    for old, new in BROKEN_EXERCISE_EDITS:
        holding = [
            path
            for path in sorted((ROOT / "docs" / "slides").glob("*.md"))
            if old in path.read_text(encoding="utf-8")
        ]
        assert len(holding) == 1, f"{old!r} is in {holding}, not one slide"
        source = holding[0].read_text(encoding="utf-8")
        assert source.count(old) == 1, f"{holding[0]} holds {old!r} twice"
        name = holding[0].name
        slide = parse_slide(f"docs/slides/{name}", source.replace(old, new))
        for fence in slide.exercises:
            _, found = validate(
                expand_values(fence.body, result.values),
                path=slide.path,
                first_line=fence.line,
                tables=result.tables,
            )
            printed += [(p.path, str(p.line), p.message) for p in found]
    for path, line, message in shown:
        assert any(
            (p, n) == (path, line) and m.startswith(message)
            for p, n, m in printed
        ), f"CONTRIBUTING shows {path}:{line}: {message}\nthe build: {printed}"


def test_the_drift_example_is_what_check_outputs_prints(tmp_path, capsys):
    """CONTRIBUTING's drift report is what `make check-outputs` prints
    when slide 15's Output block says what the block's "-" line says:
    it showed line 17 and the summary last, a slide edit after the
    slide had grown (a contributor's first pull request)."""
    from lessonbuild import cli
    from tests.lesson_site import copy_lesson

    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    block = text.split("the actual output (the snippet).", 1)[1]
    block = block.split("```text\n", 1)[1].split("```", 1)[0]
    shown = block.splitlines()
    wrong = next(line[5:] for line in shown if line.startswith("    -o"))
    right = next(line[5:] for line in shown if line.startswith("    +o"))
    root = copy_lesson(tmp_path)
    [slide] = (root / "docs" / "slides").glob("15-*.md")
    source = slide.read_text(encoding="utf-8")
    assert source.count(f"\n{right}\n") == 1, right
    slide.write_text(source.replace(f"\n{right}\n", f"\n{wrong}\n"), "utf-8")
    status = cli.main(
        [
            "check",
            "--root",
            str(root),
            "--cache-dir",
            str(ROOT / ".cache/engine"),
        ]
    )
    printed = capsys.readouterr()
    lines = (printed.out + printed.err).splitlines()
    assert status == 1
    summary = re.compile(
        r"snippet engine: \d+ pages, \d+ snippets \(\d+ run, \d+ cached\), "
        r"\d+ tables: 1 problem in [\d.]+ s"
    )
    assert summary.fullmatch(shown[0]), shown[0]
    assert any(summary.fullmatch(line) for line in lines), lines
    report = [line for line in lines if not summary.fullmatch(line)]
    assert report == shown[1:], "\n".join(report)
