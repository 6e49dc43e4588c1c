"""What a change does to the pages readers see: two builds, compared.

A reviewer of a pull request should see the effect of a Markdown edit
without building anything, so CI writes this module's Markdown summary
to the job summary (``$GITHUB_STEP_SUMMARY``). It compares the main
content of every HTML page of two built sites (Material's article, or
the page's ``main`` element) and, for each page that differs, says what
changed: the Output blocks (named after the snippet above them), the
tables (named by their header row), other code, or the text around them.

    python -m lessonbuild.sitediff OLD_SITE NEW_SITE
    python -m lessonbuild.sitediff --base main            # vs this tree
    python -m lessonbuild.sitediff --base main --head-site site
    python -m lessonbuild.sitediff --base v1 --head v2    # two revisions

A revision is built from a ``git worktree`` in a temporary folder, with
its own ``lessonbuild`` and ``mha_ref`` first on the path and the run
cache of this checkout (its keys hash every input, so sharing is safe).
"""

from __future__ import annotations

import argparse
import difflib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from bs4 import BeautifulSoup

#: Where a page's own content sits: Material, MkDocs' theme, any page.
_CONTENT = ("article.md-content__inner", "[role=main]", "main", "body")
#: Lines of one block's diff shown in the summary.
MAX_DIFF_LINES = 40


@dataclass
class Page:
    """One page's main content, split into what a reader tells apart."""

    title: str
    html: str
    outputs: dict[str, str]  # label -> the block's text
    tables: dict[str, str]
    code: dict[str, str]
    rest: str  # the content without outputs, tables and code


@dataclass
class Change:
    path: str
    title: str
    status: str  # "changed", "added", "removed"
    outputs: list[tuple[str, str, str]] = field(default_factory=list)
    tables: list[tuple[str, str, str]] = field(default_factory=list)
    code: list[str] = field(default_factory=list)
    text: bool = False


def _content(soup: BeautifulSoup):
    for selector in _CONTENT:
        found = soup.select_one(selector)
        if found is not None:
            return found
    return soup


def _unique(labels: dict[str, str], label: str) -> str:
    n, name = 1, label
    while name in labels:
        n += 1
        name = f"{label} ({n})"
    return name


def read_page(html: str) -> Page:
    """Parse one built page into its outputs, tables, code and the rest."""
    soup = BeautifulSoup(html, "html.parser")
    main = _content(soup)
    html = str(main)
    # Permalinks (¶): MkDocs' headerlink, nbconvert's anchor-link.
    for link in main.select("a.headerlink, a.anchor-link"):
        link.extract()
    h1 = main.find("h1")
    title = h1.get_text(" ", strip=True) if h1 else ""
    if not title and soup.title:
        title = soup.title.get_text(strip=True)
    outputs: dict[str, str] = {}
    code: dict[str, str] = {}
    above = "a code block"
    for pre in main.find_all("pre"):
        block = pre.find_parent(class_="highlight") or pre
        name = block.find(class_="filename")
        label = name.get_text(strip=True) if name else ""
        text = pre.get_text()
        if label.rstrip(":") == "Output":
            outputs[_unique(outputs, f"Output of {above}")] = text
        else:
            above = label or "an untitled code block"
            code[_unique(code, above)] = text
        block.extract()
    tables: dict[str, str] = {}
    for n, table in enumerate(main.find_all("table"), start=1):
        # Named by its header row, so a table added above another does
        # not rename it; the position only when there is no header.
        head = [
            th.get_text(" ", strip=True) for th in table.select("thead th")
        ]
        label = f"table ({' · '.join(head)})" if head else f"table {n}"
        label = _unique(tables, label)
        rows = [
            " | ".join(
                c.get_text(" ", strip=True) for c in tr.find_all(["td"])
            )
            for tr in table.find_all("tr")
        ]
        tables[label] = "\n".join(r for r in rows if r)
        table.extract()
    rest = " ".join(main.get_text(" ").split())
    return Page(title, html, outputs, tables, code, rest)


def _main_html(html: str) -> str:
    """The page's main content as text: Material's article if there is
    one (sliced, not parsed, so identical pages cost no parsing)."""
    start = html.find('<article class="md-content__inner')
    end = html.rfind("</article>")
    if start < 0 or end < start:
        return html
    return html[start : end + len("</article>")]


def read_site(site: Path) -> dict[str, str]:
    """Every HTML page's main content, by its path inside the site."""
    pages = {}
    for path in sorted(site.rglob("*.html")):
        rel = path.relative_to(site).as_posix()
        if rel == "404.html":
            continue
        pages[rel] = _main_html(path.read_text(encoding="utf-8"))
    return pages


def _changed(old: dict[str, str], new: dict[str, str]):
    return [
        (label, old.get(label, ""), new.get(label, ""))
        for label in sorted(set(old) | set(new))
        if old.get(label) != new.get(label)
    ]


def compare(old_site: Path, new_site: Path) -> tuple[list[Change], int]:
    """The pages whose main content differs, and the number of pages."""
    old, new = read_site(old_site), read_site(new_site)
    changes = []
    for path in sorted(set(old) | set(new)):
        if old.get(path) == new.get(path):
            continue
        if path not in old or path not in new:
            status = "added" if path not in old else "removed"
            page = read_page(old.get(path) or new[path])
            changes.append(Change(path, page.title, status))
            continue
        a, b = read_page(old[path]), read_page(new[path])
        if a.html == b.html:
            continue
        changes.append(
            Change(
                path,
                b.title,
                "changed",
                outputs=_changed(a.outputs, b.outputs),
                tables=_changed(a.tables, b.tables),
                code=[label for label, _, _ in _changed(a.code, b.code)],
                text=a.rest != b.rest,
            )
        )
    return changes, len(set(old) | set(new))


def _diff(old: str, new: str) -> str:
    lines = list(
        difflib.unified_diff(
            old.splitlines(), new.splitlines(), lineterm="", n=1
        )
    )[2:]
    if len(lines) > MAX_DIFF_LINES:
        cut = len(lines) - MAX_DIFF_LINES
        lines = lines[:MAX_DIFF_LINES] + [f"... ({cut} more lines)"]
    return "\n".join(lines)


def _names(names: list[str], noun: str, most: int = 4) -> list[str]:
    """At most ``most`` names, then a count of the rest."""
    if len(names) <= most:
        return names
    return names[:most] + [f"{len(names) - most} more {noun}"]


def _what(change: Change) -> str:
    if change.status != "changed":
        return change.status
    parts = _names([f"`{label}`" for label, _, _ in change.outputs], "outputs")
    parts += _names([label for label, _, _ in change.tables], "tables")
    parts += _names(
        [f"code `{label}`" for label in change.code], "code blocks"
    )
    if change.text:
        parts.append("text")
    return ", ".join(parts) or "markup only"


def to_markdown(changes: list[Change], total: int) -> str:
    """The summary: a table of changed pages, then each block's diff."""
    if not changes:
        return f"### Site diff\n\nNo page changed ({total} pages compared).\n"
    out = [
        f"### Site diff: {len(changes)} of {total} pages changed",
        "",
        "| page | title | what changed |",
        "|---|---|---|",
    ]
    for ch in changes:
        title = ch.title.replace("|", "\\|")
        out.append(f"| `{ch.path}` | {title} | {_what(ch)} |")
    for ch in changes:
        for label, old, new in ch.outputs + ch.tables:
            out += [
                "",
                f"<details><summary><code>{ch.path}</code>: {label}</summary>",
                "",
                "```diff",
                _diff(old, new),
                "```",
                "",
                "</details>",
            ]
    return "\n".join(out) + "\n"


# --- building revisions ------------------------------------------------------


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def build_tree(tree: Path, dest: Path, cache: Path) -> None:
    """``mkdocs build --strict`` of the site at ``tree`` into ``dest``."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    env.setdefault("SNIPPET_CACHE_DIR", str(cache))
    # The tree's own machinery and reference package, not this checkout's.
    path = [str(tree), str(tree / "scripts"), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in path if p)
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", dest],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    if run.returncode:
        raise SystemExit(
            f"error: the build of {tree} failed:\n{run.stderr[-4000:]}"
        )


def build_revision(repo: Path, rev: str, dest: Path, cache: Path) -> None:
    """Build git revision ``rev`` of ``repo`` into ``dest``."""
    sha = _git(repo, "rev-parse", "--verify", f"{rev}^{{commit}}")
    work = Path(tempfile.mkdtemp(prefix="sitediff-tree-"))
    tree = work / "tree"
    _git(repo, "worktree", "add", "--detach", str(tree), sha)
    try:
        build_tree(tree, dest, cache)
    finally:
        _git(repo, "worktree", "remove", "--force", str(tree))
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lessonbuild.sitediff",
        description="List the pages, Output blocks and tables that differ "
        "between two builds, as Markdown for a CI job summary.",
    )
    parser.add_argument("sites", nargs="*", type=Path, help="OLD NEW")
    parser.add_argument("--base", help="git revision to compare against")
    parser.add_argument("--head", help="git revision (default: this tree)")
    parser.add_argument(
        "--head-site", type=Path, help="an existing build of this tree"
    )
    parser.add_argument("--repo", type=Path, default=Path("."))
    args = parser.parse_args(argv)
    if args.sites:
        if len(args.sites) != 2 or args.base:
            parser.error("give two site folders, or --base REV")
        print(to_markdown(*compare(*args.sites)), end="")
        return 0
    if not args.base:
        parser.error("give two site folders, or --base REV")
    repo = Path(_git(args.repo, "rev-parse", "--show-toplevel"))
    cache = repo / ".cache" / "engine"
    with tempfile.TemporaryDirectory(prefix="sitediff-") as tmp:
        old = Path(tmp) / "base"
        build_revision(repo, args.base, old, cache)
        if args.head_site:
            new = args.head_site
        elif args.head:
            new = Path(tmp) / "head"
            build_revision(repo, args.head, new, cache)
        else:
            new = Path(tmp) / "head"
            build_tree(repo, new, cache)
        print(to_markdown(*compare(old, new)), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
