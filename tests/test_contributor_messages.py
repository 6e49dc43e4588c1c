"""What a contributor reads when something is wrong (or right).

Each message says what to do, once: a drift's accept hint appears once,
an empty Output block says to run the accept command (not to type it),
a YAML value with an unquoted ': ' says to quote it, and `make
fastcheck` says in one line that all is well.
"""

from __future__ import annotations

import os
import subprocess
import sys

from lessonbuild.exercises import validate
from tests.engine_fixtures.sites import engine, make_site

ACCEPT = "make update-outputs"


def _site(tmp_path, edit):
    root = make_site(tmp_path, "good")
    slide = root / "docs" / "slides" / "01-shapes.md"
    slide.write_text(edit(slide.read_text(encoding="utf-8")))
    return root


def test_a_drift_says_how_to_accept_it_once(tmp_path):
    root = _site(
        tmp_path, lambda t: t.replace("merged  : (2, 5, 8)", "merged  : (2,)")
    )
    run = engine(root, "check")
    assert run.returncode == 1, run.stderr
    assert "output of snippets/01_shapes.py drifted" in run.stderr
    assert run.stderr.count(ACCEPT) == 1, run.stderr


def test_an_empty_output_block_says_to_run_the_accept_command(tmp_path):
    def empty(text):
        start = text.index('```text title="Output"\n') + len(
            '```text title="Output"\n'
        )
        return text[:start] + text[text.index("```", start) :]

    run = engine(_site(tmp_path, empty), "check")
    assert run.returncode == 1, run.stderr
    assert (
        f"Output block of snippets/01_shapes.py is empty: run {ACCEPT} to "
        "fill it with what the snippet prints"
    ) in run.stderr
    assert run.stderr.count(ACCEPT) == 1, run.stderr  # said once


def test_a_figure_without_alt_text_is_one_problem(tmp_path):
    """The snippet's missing alt text is the problem; the slide's
    figure() call is not reported again as naming no published figure."""
    root = _site(tmp_path, lambda t: t + '\n{{ figure("01_shapes.f") }}\n')
    snippet = root / "snippets" / "01_shapes.py"
    snippet.write_text(
        snippet.read_text(encoding="utf-8")
        + "\nimport matplotlib.pyplot as plt  # noqa: E402\n\n"
        "from mha_ref.figures import publish_figure  # noqa: E402\n\n"
        "publish_figure('f', plt.figure(), alt='')\n"
    )
    run = engine(root, "check")
    assert run.returncode == 1, run.stderr
    assert "figure 'f' has no alt text" in run.stderr
    assert "no snippet published this figure" not in run.stderr, run.stderr


def test_an_unquoted_colon_in_a_yaml_value_says_to_quote_it():
    body = "kind: discussion\nprompt: Why: because\nhint: h\nanswer: a\n"
    exercise, problems = validate(body, path="docs/x.md", first_line=10)
    assert exercise is None
    [problem] = problems
    assert problem.line == 12  # the prompt's line: fence at 10, body at 11
    assert "a ': ' inside an unquoted value starts a new key" in str(problem)
    assert "quote the value" in str(problem)
    assert "expected a YAML mapping" not in str(problem)


def test_an_unquoted_colon_in_a_list_item_says_to_quote_it():
    """``- Trained layer: two heads…`` is valid YAML, a mapping where a
    text was expected: the message names the ': ' that made it one."""
    body = (
        "kind: buckets\nprompt: p\nbuckets:\n"
        "  - name: A\n    items:\n"
        "      - Trained layer: two heads weigh different tokens.\n"
        "      - b\n    explanation: e\n"
        "  - name: B\n    items:\n      - c\n      - d\n"
        "    explanation: e\n"
    )
    exercise, problems = validate(body, path="docs/x.md", first_line=10)
    assert exercise is None
    [problem] = problems
    assert problem.line == 16  # the item's line: fence at 10, body at 11
    assert "is a mapping; expected Markdown text" in str(problem)
    assert "the ': ' after 'Trained layer' made it one" in str(problem)
    assert "quote the text" in str(problem)


def test_other_yaml_errors_keep_the_general_advice():
    body = "kind: discussion\nprompt: [unclosed\n"
    _, problems = validate(body, path="docs/x.md", first_line=1)
    assert "expected a YAML mapping such as 'kind: check'" in str(problems[0])


def test_a_misaligned_key_and_an_opening_brace_get_their_own_hints():
    """Both were told "expected a YAML mapping such as 'kind: check'" (a
    contributor's first pull request): a key indented off its siblings
    is told to line up; a value starting with '{' or '[' to be quoted,
    as CONTRIBUTING advises."""
    head = "kind: check\nquestion: q\nexplanation: e\noptions:\n"
    tail = "  - text: b\n    correct: true\n"
    [off] = validate(
        head + "  - text: a\n   tempts: t\n" + tail,
        path="docs/x.md",
        first_line=10,
    )[1]
    assert off.line == 16, off  # the fence at 10, the body from 11
    assert "not lined up with the keys around it" in str(off), off
    for opening in ("{", "["):
        [quote] = validate(
            head + f"  - text: {opening}w_o{'}' if opening == '{' else ']'} "
            "rows\n    tempts: t\n" + tail,
            path="docs/x.md",
            first_line=10,
        )[1]
        assert quote.line == 15, quote
        assert f"may not start with '{opening}'" in str(quote), quote
        assert "quote the value" in str(quote), quote


def test_fastcheck_says_in_one_line_that_all_is_well(tmp_path):
    root = make_site(tmp_path, "good")
    run = subprocess.run(
        [sys.executable, "-m", "lessonbuild.fastcheck", "--root", root],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    [line] = run.stdout.splitlines()
    pages = len(list((root / "docs").rglob("*.md")))
    assert line.startswith(f"fastcheck: {pages} pages, no problems ("), line


def test_an_over_indented_key_is_told_to_line_up_not_to_quote():
    """A key indented under the one above reads as more of its value; the
    hint to quote a value (which changes nothing there) became one to
    line the key up. An unquoted ': ' in a value keeps its own hint."""
    body = (
        "kind: check\nquestion: q\nexplanation: e\noptions:\n"
        "  - text: a\n      tempts: t\n  - text: b\n    correct: true\n"
    )
    [problem] = validate(body, path="docs/x.md", first_line=10)[1]
    assert problem.line == 16, problem  # tempts: fence at 10, body at 11
    assert "indented deeper than the one above" in str(problem), problem
    assert "quote the value" not in str(problem), problem
    body = "kind: discussion\nhint: h\nprompt: Why: because\nanswer: a\n"
    [problem] = validate(body, path="docs/x.md", first_line=10)[1]
    assert "a ': ' inside an unquoted value starts a new key" in str(problem)


def test_a_quoted_true_is_named_once_as_text_in_quotes():
    """``correct: "true"`` was told "expected 'correct: true'" (what it
    looked like it had), then twice more that no option was correct and
    that A lacked 'tempts'. One problem, naming the quotes."""
    body = (
        "kind: check\nquestion: q\nexplanation: e\noptions:\n"
        '  - text: a\n    correct: "true"\n  - text: b\n    tempts: t\n'
    )
    exercise, problems = validate(body, path="docs/x.md", first_line=10)
    assert exercise is None
    assert [p.line for p in problems] == [16], problems
    assert "text in quotes" in str(problems[0])
    assert "'correct: true' without the quotes" in str(problems[0])


def test_a_yaml_value_starting_with_a_reserved_character_says_to_quote_it():
    """A value that starts with ` (inline code) or @ does not parse
    unquoted: the message names the character and says to quote it, not
    that a mapping such as 'kind: check' was expected."""
    for first in ("`", "@"):
        body = f"kind: discussion\nprompt: {first}x = 1{first} is\nanswer: a\n"
        exercise, problems = validate(body, path="docs/x.md", first_line=10)
        assert exercise is None
        [problem] = problems
        assert problem.line == 12
        assert f"may not start with '{first}': quote the value" in str(problem)
        assert "expected a YAML mapping" not in str(problem)
    body = "kind: discussion\nprompt: p\n\tanswer: a\n"
    [problem] = validate(body, path="docs/x.md", first_line=10)[1]
    assert "indent with spaces" in str(problem), problem


def test_fastcheck_checks_the_options_of_an_exercise_with_variants():
    """A wrong option of a check with a variants table lost its 'tempts':
    make build refused it, make fastcheck (no tables: no snippet runs)
    said "no problems", as it skipped every option of such an exercise.
    The options are checked; only what needs the table waits."""
    from lessonbuild.fastcheck import _NO_TABLES, _no_tables

    body = (
        'kind: check\nvariants: "37_variants.params"\n'
        "question: q {d_model}\nexplanation: e\noptions:\n"
        "  - text: a\n    column: a\n    formula: 4*d_model^2\n"
        "    correct: true\n"
        "  - text: b\n    tempts: t\n"
        "  - text: c\n"
    )
    _, problems = validate(
        body, path="docs/x.md", first_line=10, tables=_no_tables
    )
    found = [str(p) for p in problems if _NO_TABLES not in p.message]
    # The option's line: the fence at 10, the body from 11, "- text: c"
    # its 12th line.
    assert len(found) == 1, found
    assert found[0].startswith(
        "docs/x.md:22: option C is wrong but has no 'tempts'"
    ), found


def test_problems_are_listed_by_file_and_line():
    """Checks run by kind, so one page's problems came out at lines 76,
    73, 74, 88 (a contributor's first exercise): listed by file and line,
    each once, then counted."""
    from lessonbuild.problems import Problem, report

    found = [
        Problem("docs/slides/28-x.md", 76, "a typed option letter"),
        Problem("docs/slides/03-y.md", 9, "a drift"),
        Problem("docs/slides/28-x.md", 73, "an unknown key"),
        Problem("docs/slides/28-x.md", 73, "an unknown key"),
        Problem("docs/slides/28-x.md", 74, "a second key"),
    ]
    assert report(found).splitlines() == [
        "docs/slides/03-y.md:9: a drift",
        "docs/slides/28-x.md:73: an unknown key",
        "docs/slides/28-x.md:74: a second key",
        "docs/slides/28-x.md:76: a typed option letter",
        "4 problems found.",
    ]


def _lint_copy(tmp_path, files: dict[str, str]):
    """`make lint` in a copy of what it reads, with ``files`` added (the
    checkout's environment and node packages linked in, as made)."""
    import shutil
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for name in ("Makefile", "pyproject.toml", "biome.jsonc", "package.json",
                 "package-lock.json", "scripts/actionlint.mjs"):  # fmt: skip
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(root / name, tmp_path / name)
    shutil.copytree(root / ".github", tmp_path / ".github")
    for linked in (".venv", "node_modules"):
        (tmp_path / linked).symlink_to(root / linked)
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    # -o: the linked-in environment and packages are taken as made; run
    # as a contributor runs it, not as `make test`'s child (whose make
    # variables print "Entering directory" lines).
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    return subprocess.run(
        ["make", "-o", ".venv/.installed", "-o", "node_modules/.bin/biome",
         "lint"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip


def test_make_lint_runs_every_linter_and_says_so_in_one_line(tmp_path):
    """A ruff finding stopped `make lint` before Biome ran: a contributor
    met each tool's findings in a run of its own. Every linter runs; a
    failing one's findings show, and the last line names each that
    failed; all clean is one line."""
    done = _lint_copy(
        tmp_path,
        {"bad.py": "import os\n", "docs/assets/bad.js": "var unused = 1;\n"},
    )
    assert done.returncode != 0
    assert "F401" in done.stdout  # ruff check's finding
    assert "noVar" in done.stdout  # Biome's, run after it
    last = done.stdout.strip().splitlines()[-1]
    assert "failed" in last and "ruff-check" in last and "biome" in last
    assert "ruff-format" not in last
    clean = _lint_copy(tmp_path / "clean", {"good.py": "x = 1\n"})
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert len(clean.stdout.strip().splitlines()) == 1, clean.stdout
