"""The Makefile's set-up on a machine without Node.js: `make node`.

README promises two commands on a machine with only Python 3.11 (and
apt). The build needs node (KaTeX typesets the math) and `make lint`
needs npm, so `make node` (a prerequisite of build, serve, lint and
test-fast) installs Debian's nodejs and npm when node is missing. Run
for real with a PATH that holds no node and a fake apt-get that records
what it was asked to install (and, like the real one, puts node there).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: What the recipe itself calls, besides the shell's builtins.
TOOLS = ("id", "mkdir", "touch")

FAKE_APT = """\
#!/bin/sh
echo "$*" >> "{log}"
case "$*" in
  *install*nodejs*)
    printf '#!/bin/sh\\n[ "$1" = --version ] && echo v{version}; '\\
'[ "$1" = -e ] && exit {verdict}; exit 0\\n' > "{bin}/node"
    printf '#!/bin/sh\\nexit 0\\n' > "{bin}/npm"
    {chmod} +x "{bin}/node" "{bin}/npm" ;;
esac
"""


def _executable(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP)


def _machine(tmp_path: Path, version: str = "18.20.4") -> tuple[Path, Path]:
    """A bin folder with no node, a fake apt-get and sudo; its log."""
    bin_dir, log = tmp_path / "bin", tmp_path / "apt.log"
    bin_dir.mkdir()
    for tool in TOOLS:
        (bin_dir / tool).symlink_to(shutil.which(tool))
    verdict = 0 if int(version.split(".")[0]) >= 18 else 1
    _executable(
        bin_dir / "apt-get",
        FAKE_APT.format(
            log=log,
            bin=bin_dir,
            version=version,
            verdict=verdict,
            chmod=shutil.which("chmod"),
        ),
    )
    _executable(bin_dir / "sudo", '#!/bin/sh\nexec "$@"\n')
    return bin_dir, log


def _make(bin_dir: Path, *targets: str) -> subprocess.CompletedProcess:
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    return subprocess.run(
        [make, "--no-print-directory", *targets],
        cwd=ROOT,
        env={"PATH": str(bin_dir), "HOME": os.environ.get("HOME", "/")},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_make_node_installs_debians_nodejs_and_npm_when_node_is_missing(
    tmp_path,
):
    bin_dir, log = _machine(tmp_path)
    assert shutil.which("node", path=str(bin_dir)) is None
    run = _make(bin_dir, "node")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Installing Debian's nodejs and npm" in run.stdout
    assert log.read_text().splitlines() == [
        "update -qq",
        "install -y -qq nodejs npm",
    ]
    # Once it is there, nothing is installed again.
    log.unlink()
    again = _make(bin_dir, "node")
    assert again.returncode == 0, again.stderr
    assert not log.exists()


#: apt-get on a system without a chromium-headless-shell package (Ubuntu,
#: a GitHub runner): installing it fails as apt does; chromium installs.
FAKE_APT_UBUNTU = """\
#!/bin/sh
echo "$*" >> "{log}"
case "$*" in
  *install*chromium-headless-shell*)
    echo "E: Unable to locate package chromium-headless-shell" >&2; exit 100 ;;
  *install*chromium*)
    printf '#!/bin/sh\\nexit 0\\n' > "{chromium}"; {chmod} +x "{chromium}" ;;
esac
"""


@pytest.mark.parametrize("has_chromium", [True, False])
def test_make_browser_needs_no_headless_shell_package(tmp_path, has_chromium):
    """A GitHub runner (Ubuntu) has a Chromium at /usr/bin/chromium and
    no chromium-headless-shell package: ``make browser`` (part of ``make
    test``) stopped there, so every pull request failed and Pages never
    deployed. Chromium is what it needs; the shell, where apt has it."""
    bin_dir, log = _machine(tmp_path)
    chromium = tmp_path / "chromium"
    _executable(
        bin_dir / "apt-get",
        FAKE_APT_UBUNTU.format(
            log=log, chromium=chromium, chmod=shutil.which("chmod")
        ),
    )
    if has_chromium:
        _executable(chromium, "#!/bin/sh\nexit 0\n")
    options = [
        f"CHROMIUM={chromium}",
        f"HEADLESS_SHELL={tmp_path / 'no-shell'}",
        f"NO_SHELL={tmp_path / 'state' / 'no-shell'}",
    ]
    run = _make(bin_dir, "browser", *options)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "no chromium-headless-shell package here" in run.stdout
    installs = [a for a in log.read_text().splitlines() if "install" in a]
    wanted = ["install -y -qq chromium-headless-shell"]
    if not has_chromium:
        wanted.insert(0, "install -y -qq chromium")
    assert installs == wanted
    # Not asked again: no apt-get update (and sudo) on every make test.
    log.unlink()
    again = _make(bin_dir, "browser", *options)
    assert again.returncode == 0, again.stdout + again.stderr
    assert not log.exists(), log.read_text()


def test_make_node_refuses_a_node_older_than_18(tmp_path):
    bin_dir, _ = _machine(tmp_path, version="12.22.12")
    run = _make(bin_dir, "node")
    assert run.returncode != 0
    assert "node v18 or later is needed, found v12.22.12" in run.stderr


#: What in a recipe needs node: node or npm themselves, and every command
#: that builds the site (KaTeX typesets its math with node): mkdocs, the
#: review's builds (sitediff), the bench, serving, the tests.
NEEDS_NODE = re.compile(
    r"(^|[\s/])(node|npm|mkdocs)\s|lessonbuild(\.sitediff|\.liveserve| bench)"
    r"|\$\(PYTEST\)"
)


def _rules() -> dict[str, tuple[list[str], str]]:
    """{target: (prerequisites, recipe)} as make itself reads the
    Makefile (``make -p``): prerequisites expanded, so a variable used
    before it is set shows as the nothing it expands to there."""
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    dump = subprocess.run(
        [make, "-pRrq", "-f", "Makefile", "__no_such_target__"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    files = dump[dump.index("# Files") :]
    rules: dict[str, tuple[list[str], str]] = {}
    target = None
    for line in files.splitlines():
        if line.startswith("\t") and target:
            prereqs, recipe = rules[target]
            rules[target] = (prereqs, recipe + line[1:] + "\n")
        elif m := re.match(r"^([^#\s:=][^:=]*):(?!=)\s*(.*)$", line):
            target = m[1].strip()
            prereqs = m[2].replace("|", " ").split()
            rules.setdefault(target, (prereqs, ""))
        elif not line.strip():
            target = None
    return rules


def test_every_target_that_runs_node_or_npm_installs_it_first():
    """Each target whose recipe runs node or npm, or builds the site
    (mkdocs: the build typesets math with node), has `node` among its
    prerequisites, directly or through another target, so a machine
    without node gets it first. (`codemirror` once named $(BIOME) above
    the line that set it: no prerequisite at all, and a fresh clone ran
    node without npm ci.)"""
    rules = _rules()

    def needs(target: str, seen: set[str]) -> set[str]:
        if target in seen or target not in rules:
            return seen
        seen.add(target)
        for p in rules[target][0]:
            needs(p, seen)
        return seen

    runs_node = {
        t for t, (_, recipe) in rules.items() if NEEDS_NODE.search(recipe)
    }
    # What the test reads is make's view of the Makefile, not a copy.
    assert {"build", "serve", "test-fast", "codemirror", "site-diff"} <= (
        runs_node
    ), sorted(runs_node)
    missing = {
        t: rules[t][0] for t in runs_node if "node" not in needs(t, set())
    }
    missing.pop("node", None)
    assert not missing, (
        "targets that run node, npm or a build without `node` among "
        f"their prerequisites: {missing}"
    )


def test_a_shared_venv_or_node_modules_linked_in_is_ignored(tmp_path):
    """A second worktree or clone often links the first one's .venv and
    node_modules; git must not offer them for commit."""
    repo = tmp_path / "clone"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    shutil.copy(ROOT / ".gitignore", repo / ".gitignore")
    for name in (".venv", "node_modules"):
        (tmp_path / name).mkdir()
        (repo / name).symlink_to(tmp_path / name)
    status = subprocess.run(
        ["git", "status", "--porcelain"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert status.splitlines() == ["?? .gitignore"]


def test_make_refuses_to_install_into_a_venv_linked_from_elsewhere(tmp_path):
    """A clone whose .venv links another checkout's: `make` must not
    re-point that environment's editable install at the clone (a trial's
    clone did so silently, and the other checkout ran the clone's code)."""
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    clone, other = tmp_path / "clone", tmp_path / "other" / ".venv"
    clone.mkdir()
    for name in ("Makefile", "requirements.txt", "pyproject.toml"):
        shutil.copy(ROOT / name, clone / name)
    (other / "bin").mkdir(parents=True)
    calls = tmp_path / "calls"
    _executable(other / "bin" / "python", f'#!/bin/sh\necho "$*" >> {calls}\n')
    (clone / ".venv").symlink_to(other)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _executable(bin_dir / "python3.11", "#!/bin/sh\nexit 0\n")
    run = subprocess.run(
        [make, "--no-print-directory", "venv"],
        cwd=clone,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode != 0
    assert ".venv is a link to" in run.stderr
    assert "Remove the link" in run.stderr
    assert not calls.exists(), calls.read_text()
