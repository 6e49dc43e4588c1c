"""What a code block's copy button copies runs, and prints what the page
shows.

Material's copy button copies the text of the block's ``<code>``
element. For every Python block on every page of the built site (a
block titled with a ``.py`` file), that exact text is run as a program
in a fresh interpreter, from an empty folder, with ``mha_ref``
importable as it is for a student who installed it, and its printed
output is compared with the page's Output block that follows it (a block
with no Output block must print nothing).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lessonbuild.engine.outputs import normalize

ROOT = Path(__file__).resolve().parents[1]


def code_blocks(site: Path) -> list[tuple[str, int, str, str | None]]:
    """(page, index, copied text, the Output block's text or None)."""
    from bs4 import BeautifulSoup

    found = []
    for page in sorted(site.rglob("*.html")):
        rel = page.relative_to(site).as_posix()
        if rel.startswith(("notebooks/", "assets/")):
            continue  # notebook pages are notebooks: they run as one
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        blocks = soup.select("div.highlight")
        for index, block in enumerate(blocks):
            title = block.select_one(".filename")
            if title is None or not title.get_text().endswith(".py"):
                continue
            code = block.select_one("code").get_text()
            # Its Output block is the next block on a reading page; in
            # the deck, only the element right after it (an Output may
            # stay on stage there while its code is reading depth).
            output = None
            if rel == "present.html":
                after = block.find_next_sibling()
                if after is not None and "highlight" not in (
                    after.get("class") or []
                ):
                    after = None
            else:
                after = blocks[index + 1] if index + 1 < len(blocks) else None
            name = after.select_one(".filename") if after else None
            if name is not None and name.get_text() == "Output":
                output = after.select_one("code").get_text()
            found.append((rel, index, code, output))
    return found


def test_the_site_has_python_blocks(built_site):
    blocks = code_blocks(built_site)
    assert len(blocks) >= 25
    assert sum(output is not None for *_, output in blocks) >= 20


def test_every_copied_block_runs_and_prints_the_page(built_site, tmp_path):
    failures = []
    ran: dict[str, subprocess.CompletedProcess] = {}  # the deck repeats
    for rel, index, code, output in code_blocks(built_site):
        where = f"{rel} block {index} ({code.splitlines()[0][:60]!r})"
        result = ran.get(code) or run_copied(code, tmp_path)
        ran[code] = result
        if result.returncode:
            failures.append(f"{where} raised:\n{result.stderr[-800:]}")
            continue
        want = normalize((output or "").split("\n"))
        got = normalize(result.stdout.split("\n"))
        if got != want:
            failures.append(
                f"{where} printed\n{result.stdout[-800:]}\nthe page shows\n"
                f"{output}"
            )
    assert not failures, "\n\n".join(failures)


def run_copied(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """Run ``code`` as a student's file, from an empty folder."""
    program = tmp_path / "copied.py"
    program.write_text(code, encoding="utf-8")
    work = tmp_path / "empty"
    work.mkdir(exist_ok=True)
    result = subprocess.run(
        [sys.executable, str(program)],
        cwd=work,
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT),  # mha_ref, as if installed
            "OMP_NUM_THREADS": "1",
            "MPLBACKEND": "Agg",
        },
        capture_output=True,
        text=True,
        timeout=600,
    )
    return result


@pytest.mark.parametrize("section", ["split", "merge", "init", "forward"])
def test_reference_sections_are_not_cut_inside_a_function_body(section):
    """A section of mha_ref/mha.py ends after its function, not inside it
    (the marker would be a line of the function's body)."""
    lines = (ROOT / "mha_ref" / "mha.py").read_text().splitlines()
    start = next(i for i, t in enumerate(lines) if f"[start:{section}]" in t)
    end = next(i for i, t in enumerate(lines) if f"[end:{section}]" in t)
    define = next(t for t in lines[start:end] if t.lstrip().startswith("def "))
    indent = len(define) - len(define.lstrip())
    assert len(lines[end]) - len(lines[end].lstrip()) <= indent, lines[end]
