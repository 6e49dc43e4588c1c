"""What a code block's copy button copies runs, and prints what the page
shows.

Material's copy button copies the text of the block's ``<code>``
element. For every Python block on every page of the built site (a
block titled with a ``.py`` file), that exact text is run as a program
in a fresh interpreter, from an empty folder, with ``mha_ref`` as a
student gets it: the site's ``mha_ref.zip`` (linked from the home page),
unzipped, first on the path. Its printed
output is compared with the page's Output block that follows it (a block
with no Output block must print nothing).

"A fresh interpreter" is a fork of one that has imported torch and
nothing of the lesson's (``ZYGOTE``): importing torch costs 1.6 s of
CPU, and the site has some thirty distinct blocks. The forked child runs
the file as ``python copied.py`` would (``__main__``, its folder first
on ``sys.path``, ``sys.argv``, the status of an uncaught exception), and
a test runs programs of each sort both ways and compares.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from lessonbuild.engine.outputs import normalize

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 600  # seconds a block may run


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


@pytest.fixture(scope="module")
def blocks(built_site):
    return code_blocks(built_site)


def test_the_site_has_python_blocks(blocks):
    assert len(blocks) >= 25
    assert sum(output is not None for *_, output in blocks) >= 20


# Imports torch once, then for each line it reads (a program's path, an
# empty folder, files for stdout and stderr) forks a child that runs the
# program as `python PROGRAM` from that folder would, and writes back
# the child's exit status. The child ends as a fresh interpreter does
# (sys.exit's status or message, an uncaught exception's traceback, the
# program's atexit handlers) but skips tearing torch's modules down
# (0.8 s a block): the handler registered first runs last, and leaves.
# The alarm bounds a block that would never end.
ZYGOTE = r"""
import atexit, json, os, runpy, signal, sys, traceback
import torch  # the 1.6 s every block would pay again
sys.path.pop(0)  # '' from -c; a program's own folder goes first instead
base_path = list(sys.path)


def leave():
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


for line in sys.stdin:
    job = json.loads(line)
    pid = os.fork()
    if pid == 0:
        signal.alarm(job["timeout"])
        torch.seed()  # a fresh interpreter draws its own seed too
        os.chdir(job["cwd"])
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # not the job stream
        for fd, name in ((1, job["out"]), (2, job["err"])):
            os.dup2(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
        sys.argv = [job["program"]]
        sys.path[:] = [os.path.dirname(job["program"])] + base_path
        code = 0
        atexit.register(leave)  # first, so it runs after the program's
        try:
            runpy.run_path(job["program"], run_name="__main__")
        except SystemExit as stop:
            if isinstance(stop.code, int) or stop.code is None:
                code = stop.code or 0
            else:
                print(stop.code, file=sys.stderr)
                code = 1
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.exit(code)
    _, status = os.waitpid(pid, 0)
    print(os.waitstatus_to_exitcode(status), flush=True)
"""


@pytest.fixture(scope="module")
def downloaded(built_site, tmp_path_factory) -> Path:
    """The folder a student unzipped the site's ``mha_ref.zip`` into."""
    folder = tmp_path_factory.mktemp("downloaded")
    with zipfile.ZipFile(built_site / "mha_ref.zip") as archive:
        archive.extractall(folder)
    return folder


def student_env(package: Path) -> dict:
    return {
        **os.environ,
        # Ahead of the checkout's editable install, which is found last.
        "PYTHONPATH": str(package),
        "OMP_NUM_THREADS": "1",
        "MPLBACKEND": "Agg",
    }


def test_the_home_page_offers_the_package_copied_code_imports(
    built_site, downloaded, tmp_path
):
    """index.html links the zip; unzipped, it is the whole package (the
    grader too), and it is what a copied block imports."""
    home = (built_site / "index.html").read_text(encoding="utf-8")
    assert 'href="mha_ref.zip" download' in home
    unzipped = sorted(p.name for p in (downloaded / "mha_ref").glob("*.py"))
    assert unzipped == sorted(p.name for p in (ROOT / "mha_ref").glob("*.py"))
    code = "import mha_ref.grade\nprint(mha_ref.__file__)\n"
    printed = run_copied(code, tmp_path, downloaded).stdout.strip()
    assert printed == str(downloaded / "mha_ref" / "__init__.py")


def test_a_page_whose_code_imports_the_package_links_it(built_site, blocks):
    """Where a block a student copies imports ``mha_ref``, its reading
    page links ``mha_ref.zip`` (copied alone, it raised
    ModuleNotFoundError, and only the home page said why); pages whose
    code imports nothing of it do not."""
    from bs4 import BeautifulSoup

    def imports_package(code: str) -> bool:
        return any(
            line.split()[:2] in (["import", "mha_ref"], ["from", "mha_ref"])
            or line.startswith(("import mha_ref.", "from mha_ref."))
            for line in code.splitlines()
        )

    importing = {
        rel
        for rel, _, code, _ in blocks
        if rel.startswith("slides/") and imports_package(code)
    }
    assert importing, "no copied block imports mha_ref"
    for page in sorted((built_site / "slides").glob("*.html")):
        rel = page.relative_to(built_site).as_posix()
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        links = [
            a
            for a in soup.select(".notebook-download a[download]")
            if a["href"].endswith("mha_ref.zip")
        ]
        assert bool(links) == (rel in importing), rel
        for a in links:
            assert (page.parent / a["href"]).resolve().is_file(), rel
        if not links:
            continue
        # Said once, right above the first block that imports the
        # package where a student sees it before answering anything: not
        # in an exercise, a fold (slide 47's sat in an answer's "verify"
        # fold, locked, over the first block a student copied) or a
        # section shown after an answer; the first folded one if all are.
        assert len(links) == 1, rel
        blocks = [
            div
            for div in soup.select("article div.highlight")
            if imports_package(div.find("code").get_text())
        ]
        seen = [
            div
            for div in blocks
            if not div.find_parent(class_="exercise")
            and not div.find_parent("details")
            and not div.find_parent(class_="after-answer")
        ]
        first = (seen or blocks)[0]
        assert first.find_previous_sibling() is links[0].parent, rel


@pytest.fixture
def run_forked(tmp_path, downloaded):
    """``run(code)``: ``code`` run as a student's file, in a fork of
    ``ZYGOTE``, from the files and folder :func:`run_copied` uses."""
    zygote = subprocess.Popen(
        [sys.executable, "-c", ZYGOTE],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=student_env(downloaded),
        text=True,
    )
    (tmp_path / "empty").mkdir(exist_ok=True)

    def run(code: str) -> subprocess.CompletedProcess:
        program, out, err = (tmp_path / n for n in ("copied.py", "out", "err"))
        program.write_text(code, encoding="utf-8")
        job = {"program": str(program), "cwd": str(tmp_path / "empty")}
        job |= {"out": str(out), "err": str(err), "timeout": TIMEOUT}
        zygote.stdin.write(json.dumps(job) + "\n")
        zygote.stdin.flush()
        status = zygote.stdout.readline()
        assert status, "the zygote died"
        return subprocess.CompletedProcess(
            [program],
            int(status),
            out.read_text(encoding="utf-8"),
            err.read_text(encoding="utf-8"),
        )

    yield run
    zygote.stdin.close()
    zygote.wait(timeout=60)


def test_every_copied_block_runs_and_prints_the_page(blocks, run_forked):
    failures = []
    ran: dict[str, subprocess.CompletedProcess] = {}  # the deck repeats
    for rel, index, code, output in blocks:
        where = f"{rel} block {index} ({code.splitlines()[0][:60]!r})"
        result = ran.get(code) or run_forked(code)
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


def test_a_fork_of_the_zygote_runs_as_a_fresh_interpreter(
    blocks, run_forked, tmp_path, downloaded
):
    """The zygote is a shortcut, not another way to run. These print,
    fail and exit the same in a fork as in ``python copied.py``: the
    site's longest block and its first that imports ``mha_ref``, seeded
    random numbers, a look at ``__file__``, ``sys.argv`` and
    ``sys.path``, a raise, ``sys.exit`` with a status, with none and
    with a message, an atexit handler, and a read of stdin. Unseeded
    random numbers differ from run to run, as between fresh
    interpreters."""
    codes = [code for _, _, code, _ in blocks]
    programs = [
        max(codes, key=len),
        next(code for code in codes if "mha_ref" in code),
        "import torch\ntorch.manual_seed(0)\n"
        "print(torch.randn(3), torch.get_num_threads())\n",
        "import os, sys\nprint(sys.argv == [__file__], __name__)\n"
        "print(sys.path[0] == os.path.dirname(__file__), os.getcwd())\n",
        "raise ValueError('a student bug')\n",
        "import sys\nprint('bye')\nsys.exit(3)\n",
        "import sys\nsys.exit()\n",
        "import sys\nsys.exit('stopped')\n",
        "import atexit\natexit.register(print, 'at exit')\n",
        "import sys\nprint(repr(sys.stdin.read()))\n",
    ]
    for code in programs:
        fresh = run_copied(code, tmp_path, downloaded)
        forked = run_forked(code)
        assert forked.returncode == fresh.returncode, code
        assert forked.stdout == fresh.stdout, code
        last = [r.stderr.strip().splitlines()[-1:] for r in (fresh, forked)]
        assert last[0] == last[1], code
    unseeded = "import torch\nprint(torch.randn(3))\n"
    draws = {run_forked(unseeded).stdout for _ in range(3)}
    assert len(draws) == 3, "forks share one seed; fresh interpreters do not"


def run_copied(
    code: str, tmp_path: Path, package: Path
) -> subprocess.CompletedProcess:
    """Run ``code`` as a student's file, from an empty folder, with the
    unzipped ``package`` folder."""
    program = tmp_path / "copied.py"
    program.write_text(code, encoding="utf-8")
    work = tmp_path / "empty"
    work.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, str(program)],
        cwd=work,
        stdin=subprocess.DEVNULL,
        env=student_env(package),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


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
