"""What a change does to the pages readers see: two builds, compared.

A reviewer of a pull request should see the effect of an edit without
building anything, so CI writes this module's Markdown summary to the
job summary (``$GITHUB_STEP_SUMMARY``). The unit of review is the slide:
every view of a slide is mapped back to its reading page
(``slides/NN-slug.html``) — its section of the presentation deck
(``present.html``, ``data-reading``) and its cells in the lesson
notebook (the ``## N. Title`` heading above them) — so a slide that
changed is listed once, with the other views it changed in. For each,
the summary shows what a reader would notice: the prose and each
exercise as a word diff, each Output block as a line diff (named after
the snippet above it), each table before and after, and which code
blocks changed. Code blocks of other pages are named by the heading
above them, never by position, so one inserted cell renames nothing.

    python -m lessonbuild.sitediff OLD_SITE NEW_SITE
    python -m lessonbuild.sitediff --base main            # vs this tree
    python -m lessonbuild.sitediff --base main --head-site site
    python -m lessonbuild.sitediff --base v1 --head v2    # two revisions

A revision is built from a ``git worktree`` with its own ``lessonbuild``
and ``mha_ref`` first on the path and the run cache of this checkout
(its keys hash every input, so sharing is safe), once: the build of a
commit is kept in ``.cache/sitediff/<sha>`` and reused. A tree that
``git status`` calls clean is its HEAD commit, so a second
run on the same branch builds nothing and takes a second or two; an
edited tree is built afresh.
"""

from __future__ import annotations

import argparse
import difflib
import html as htmlmod
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bs4 import BeautifulSoup

#: Where a page's own content sits: Material, MkDocs' theme, any page.
_CONTENT = ("article.md-content__inner", "[role=main]", "main", "body")
#: Lines of one Output block's diff shown in the summary.
MAX_DIFF_LINES = 40
#: Words of unchanged text kept on each side of a change.
CONTEXT_WORDS = 8
#: A slide's reading page (the URL scheme CONTRIBUTING documents).
SLIDE_PAGE = re.compile(r"(?:^|/)slides/(?P<n>\d+)-[^/]*\.html$")
#: One slide's section of the presentation deck (present.py).
_DECK_SECTION = re.compile(
    r'<section\b[^>]*\bdata-reading="(?P<url>[^"]+)"[^>]*>'
)
#: The end of the deck's slides, before its configuration and scripts.
_DECK_END = re.compile(r"</div></div>\s*<script")
#: A level-2 heading of a notebook page: the deck notebook heads each
#: slide's cells with "## N. Title" (notebooks.deck_notebook).
_H2 = re.compile(r"<h2\b[^>]*>(?P<inner>.*?)</h2>", re.S)
_TAG = re.compile(r"<[^>]+>")
#: The view name of a slide's own page.
PAGE = "page"
#: How many builds of base revisions .cache/sitediff keeps.
KEEP_BUILDS = 4


@dataclass
class Page:
    """One view's content, split into what a reader tells apart."""

    title: str
    outputs: dict[str, str]  # "Output of <snippet>" -> the block's text
    tables: dict[str, list[list[str]]]  # label -> header row + rows
    code: dict[str, str]  # label -> the block's text
    exercises: dict[str, str]  # "exercise N" -> its text
    prose: str  # the rest, as words


@dataclass
class Change:
    path: str  # the reading page the change belongs to
    title: str
    status: str  # "changed", "added", "removed"
    outputs: list[tuple[str, str, str]] = field(default_factory=list)
    tables: list[tuple[str, list, list]] = field(default_factory=list)
    code: list[str] = field(default_factory=list)
    exercises: list[tuple[str, str]] = field(default_factory=list)
    prose: str = ""  # the word diff, "" when unchanged
    views: list[str] = field(default_factory=list)  # other views changed


# --- reading a site ----------------------------------------------------------


def _content(soup: BeautifulSoup):
    for selector in _CONTENT:
        found = soup.select_one(selector)
        if found is not None:
            return found
    return soup


def _unique(labels: dict, label: str) -> str:
    n, name = 1, label
    while name in labels:
        n += 1
        name = f"{label} ({n})"
    return name


def _cells(tr) -> list[str]:
    out = []
    for cell in tr.find_all(["th", "td"]):
        text = cell.get_text(" ", strip=True)
        if not text and cell.find(["input", "textarea", "select"]):
            text = "(to fill in)"
        out.append(text)
    return out


def read_page(html: str) -> Page:
    """Parse one view into its outputs, tables, code, exercises, prose."""
    soup = BeautifulSoup(html, "html.parser")
    main = _content(soup)
    # Permalinks (¶): MkDocs' headerlink, nbconvert's anchor-link.
    for link in main.select("a.headerlink, a.anchor-link"):
        link.extract()
    h1 = main.find("h1")
    title = h1.get_text(" ", strip=True) if h1 else ""
    if not title and soup.title:
        title = soup.title.get_text(strip=True)
    tables: dict[str, list[list[str]]] = {}
    for n, table in enumerate(main.find_all("table"), start=1):
        # Named by its header row, so a table added above another does
        # not rename it; the position only when there is no header.
        head = [th.get_text(" ", strip=True) for th in table.select("th")]
        label = f"table ({' · '.join(head)})" if head else f"table {n}"
        rows = [_cells(tr) for tr in table.find_all("tr")]
        tables[_unique(tables, label)] = [r for r in rows if r]
        table.extract()
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
            if not label:
                heading = block.find_previous(["h1", "h2", "h3", "h4"])
                label = (
                    f"code under “{heading.get_text(' ', strip=True)}”"
                    if heading
                    else "a code block"
                )
            above = label
            code[_unique(code, label)] = text
        block.extract()
    exercises: dict[str, str] = {}
    for n, section in enumerate(main.select("section.exercise"), start=1):
        exercises[f"exercise {n}"] = " ".join(section.get_text(" ").split())
        section.extract()
    prose = " ".join(main.get_text(" ").split())
    return Page(title, outputs, tables, code, exercises, prose)


def _main_html(html: str) -> str:
    """The page's main content: Material's article if there is one
    (sliced, not parsed, so identical pages cost no parsing)."""
    start = html.find('<article class="md-content__inner')
    end = html.rfind("</article>")
    if start < 0 or end < start:
        return html
    return html[start : end + len("</article>")]


def _deck_sections(html: str) -> dict[str, str]:
    """``present.html``: each slide's section, by its reading page."""
    starts = list(_DECK_SECTION.finditer(html))
    if not starts:
        return {}
    tail = _DECK_END.search(html, starts[-1].end())
    stop = tail.start() if tail else len(html)
    out = {}
    for i, match in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else stop
        out[match.group("url")] = html[match.start() : end]
    return out


def _notebook_slides(html: str, titles: dict[int, str]) -> dict[int, str]:
    """The deck notebook's cells per slide number: the part under each
    ``N. Title`` heading whose title is slide N's. {} for any other
    page (a homework notebook's "1. Split" is not slide 1)."""
    marks = []
    for match in _H2.finditer(html):
        text = htmlmod.unescape(_TAG.sub("", match.group("inner")))
        text = " ".join(text.replace("¶", "").split())
        number, _, title = text.partition(". ")
        if number.isdigit() and titles.get(int(number)) == title:
            marks.append((int(number), match.start()))
    out = {}
    for i, (number, start) in enumerate(marks):
        end = marks[i + 1][1] if i + 1 < len(marks) else len(html)
        out[number] = html[start:end]
    return out


def _title(html: str) -> str:
    match = re.search(r"<h1\b[^>]*>(.*?)</h1>", html, re.S)
    if not match:
        return ""
    text = htmlmod.unescape(_TAG.sub("", match.group(1)))
    return " ".join(text.replace("¶", "").split())


def read_site(site: Path) -> dict[str, dict[str, str]]:
    """Every view of every page, by the reading page it belongs to:
    ``{"slides/23-x.html": {"page": ..., "present.html": ...}}``."""
    raw = {}
    for path in sorted(site.rglob("*.html")):
        rel = path.relative_to(site).as_posix()
        if rel != "404.html":
            raw[rel] = path.read_text(encoding="utf-8")
    slides = {
        int(m.group("n")): rel for rel in raw if (m := SLIDE_PAGE.search(rel))
    }
    titles = {n: _title(_main_html(raw[rel])) for n, rel in slides.items()}
    units: dict[str, dict[str, str]] = {}
    for rel, html in raw.items():
        sections = _deck_sections(html)
        if sections:
            for url, chunk in sections.items():
                units.setdefault(url, {})[rel] = chunk
            continue
        main = _main_html(html)
        cells = _notebook_slides(main, titles)
        for number, chunk in cells.items():
            units.setdefault(slides[number], {})[rel] = chunk
        if cells:  # the notebook's own page: what precedes slide 1
            first = min(main.find(chunk) for chunk in cells.values())
            main = main[:first]
        units.setdefault(rel, {})[PAGE] = main
    return units


# --- comparing ---------------------------------------------------------------


def _changed(old: dict, new: dict):
    return [
        (label, old.get(label, ""), new.get(label, ""))
        for label in sorted(set(old) | set(new), key=str)
        if old.get(label) != new.get(label)
    ]


def compare(old_site: Path, new_site: Path) -> tuple[list[Change], int]:
    """The reading pages whose views differ, and the number of pages."""
    old, new = read_site(old_site), read_site(new_site)
    changes = []
    for path in sorted(set(old) | set(new), key=_order):
        a, b = old.get(path, {}), new.get(path, {})
        if a == b:
            continue
        views = [v for v in sorted(set(a) | set(b)) if a.get(v) != b.get(v)]
        others = [v for v in views if v != PAGE]
        if PAGE not in a or PAGE not in b:
            status = "added" if PAGE not in a else "removed"
            page = read_page(a.get(PAGE) or b.get(PAGE) or "")
            changes.append(Change(path, page.title, status, views=others))
            continue
        if PAGE not in views:
            title = _title(b[PAGE])
            changes.append(Change(path, title, "changed", views=others))
            continue
        pa, pb = read_page(a[PAGE]), read_page(b[PAGE])
        changes.append(
            Change(
                path,
                pb.title,
                "changed",
                outputs=_changed(pa.outputs, pb.outputs),
                tables=_changed(pa.tables, pb.tables),
                code=[label for label, _, _ in _changed(pa.code, pb.code)],
                exercises=[
                    (label, word_diff(x, y))
                    for label, x, y in _changed(pa.exercises, pb.exercises)
                ],
                prose=word_diff(pa.prose, pb.prose)
                if pa.prose != pb.prose
                else "",
                views=others,
            )
        )
    pages = [
        p
        for p in set(old) | set(new)
        if PAGE in old.get(p, {}) or PAGE in new.get(p, {})
    ]
    return changes, len(pages)


def _order(path: str):
    """Slides in their order, then every other page by name."""
    match = SLIDE_PAGE.search(path)
    return (0, int(match.group("n")), path) if match else (1, 0, path)


def _md_words(words: list[str]) -> str:
    text = htmlmod.escape(" ".join(words), quote=False)
    return re.sub(r"([\\`*_\[\]|#])", r"\\\1", text)


def word_diff(old: str, new: str, context: int = CONTEXT_WORDS) -> str:
    """The changed words of ``old`` -> ``new`` as Markdown:
    ``<del>gone</del> <ins>added</ins>`` with a few words around each,
    the unchanged stretches between them cut to "…"."""
    a, b = old.split(), new.split()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    codes = matcher.get_opcodes()
    out = []
    for k, (tag, i1, i2, j1, j2) in enumerate(codes):
        if tag == "equal":
            words = a[i1:i2]
            first, last = k == 0, k == len(codes) - 1
            keep_head = 0 if first else context
            keep_tail = 0 if last else context
            if len(words) > keep_head + keep_tail:
                head = words[:keep_head]
                tail = words[len(words) - keep_tail :] if keep_tail else []
                parts = [_md_words(head)] if head else []
                parts.append("…")
                if tail:
                    parts.append(_md_words(tail))
                out.append(" ".join(parts))
            else:
                out.append(_md_words(words))
            continue
        if i2 > i1:
            out.append(f"<del>{_md_words(a[i1:i2])}</del>")
        if j2 > j1:
            out.append(f"<ins>{_md_words(b[j1:j2])}</ins>")
    return " ".join(out)


def _line_diff(old: str, new: str) -> str:
    lines = list(
        difflib.unified_diff(
            old.splitlines(), new.splitlines(), lineterm="", n=1
        )
    )[2:]
    if len(lines) > MAX_DIFF_LINES:
        cut = len(lines) - MAX_DIFF_LINES
        lines = lines[:MAX_DIFF_LINES] + [f"... ({cut} more lines)"]
    return "\n".join(lines)


def _md_table(rows: list[list[str]], marks: list[str]) -> list[str]:
    """A Markdown table; ``marks`` is the first column (+, −, or "")."""
    if not rows:
        return ["(no table)"]
    width = max(len(r) for r in rows)

    def line(cells):
        cells = list(cells) + [""] * (width + 1 - len(cells))
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    out = [line(["", *rows[0]]), "|" + "---|" * (width + 1)]
    out += [line([m, *r]) for m, r in zip(marks[1:], rows[1:], strict=True)]
    return out


def table_diff(old: list[list[str]], new: list[list[str]]) -> list[str]:
    """Before and after as tables, the rows that differ marked − and +."""
    a = [" | ".join(r) for r in old]
    b = [" | ".join(r) for r in new]
    gone, added = [""] * len(a), [""] * len(b)
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(
        None, a, b, autojunk=False
    ).get_opcodes():
        if tag != "equal":
            gone[i1:i2] = ["−"] * (i2 - i1)
            added[j1:j2] = ["+"] * (j2 - j1)
    return [
        "**Before**",
        "",
        *_md_table(old, gone),
        "",
        "**After**",
        "",
        *_md_table(new, added),
    ]


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
    parts += [label for label, _ in change.exercises]
    if change.prose:
        parts.append("text")
    if not parts and not change.views:
        parts.append("markup only")
    return ", ".join(parts) or "—"


def to_markdown(changes: list[Change], total: int) -> str:
    """The summary: one row per changed page, then what changed in it."""
    if not changes:
        return f"### Site diff\n\nNo page changed ({total} pages compared).\n"
    out = [
        f"### Site diff: {len(changes)} of {total} pages changed",
        "",
        "| page | title | what changed | also changed in |",
        "|---|---|---|---|",
    ]
    for ch in changes:
        title = ch.title.replace("|", "\\|")
        views = ", ".join(f"`{v}`" for v in ch.views) or "—"
        out.append(f"| `{ch.path}` | {title} | {_what(ch)} | {views} |")
    for ch in changes:
        blocks = []
        if ch.prose:
            blocks += ["**Text**", "", ch.prose, ""]
        for label, diff in ch.exercises:
            blocks += [f"**{label.capitalize()}**", "", diff, ""]
        for label, old, new in ch.outputs:
            blocks += [
                f"**{label}**",
                "",
                "```diff",
                _line_diff(old, new),
                "```",
                "",
            ]
        for label, old, new in ch.tables:
            blocks += [f"**{_md_words([label])}**", "", *table_diff(old, new)]
            blocks.append("")
        if not blocks:
            continue
        out += [
            "",
            f"<details><summary><code>{ch.path}</code> — "
            f"{htmlmod.escape(ch.title)}</summary>",
            "",
            *blocks,
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


def build_revision(repo: Path, rev: str, builds: Path, cache: Path) -> Path:
    """The build of git revision ``rev`` of ``repo``: made once per
    commit in ``builds/<sha>`` (a commit's site never changes)."""
    sha = _git(repo, "rev-parse", "--verify", f"{rev}^{{commit}}")
    dest = builds / sha
    if (dest / ".complete").is_file():
        dest.touch()  # recently used: pruned last
        return dest
    builds.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="sitediff-tree-"))
    tree = work / "tree"
    _git(repo, "worktree", "add", "--detach", str(tree), sha)
    try:
        shutil.rmtree(dest, ignore_errors=True)
        build_tree(tree, dest, cache)
        (dest / ".complete").touch()
    finally:
        _git(repo, "worktree", "remove", "--force", str(tree))
        shutil.rmtree(work, ignore_errors=True)
    _prune(builds)
    return dest


def _prune(builds: Path) -> None:
    kept = sorted(
        (p for p in builds.iterdir() if p.is_dir()),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    for old in kept[KEEP_BUILDS:]:
        shutil.rmtree(old, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lessonbuild.sitediff",
        description="List the slides and pages that differ between two "
        "builds (prose and exercises as word diffs, Output blocks, "
        "tables before and after), as Markdown for a CI job summary.",
    )
    parser.add_argument("sites", nargs="*", type=Path, help="OLD NEW")
    parser.add_argument("--base", help="git revision to compare against")
    parser.add_argument("--head", help="git revision (default: this tree)")
    parser.add_argument(
        "--head-site", type=Path, help="an existing build of this tree"
    )
    parser.add_argument("--repo", type=Path, default=Path("."))
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.sites:
        if len(args.sites) != 2 or args.base:
            parser.error("give two site folders, or --base REV")
        old, new = args.sites
        print(to_markdown(*compare(old, new)), end="")
        _timing(started)
        return 0
    if not args.base:
        parser.error("give two site folders, or --base REV")
    repo = Path(_git(args.repo, "rev-parse", "--show-toplevel"))
    cache = repo / ".cache" / "engine"
    builds = repo / ".cache" / "sitediff"
    old = build_revision(repo, args.base, builds, cache)
    with tempfile.TemporaryDirectory(prefix="sitediff-") as tmp:
        if args.head_site:
            new = args.head_site
        elif args.head:
            new = build_revision(repo, args.head, builds, cache)
        elif not _git(repo, "status", "--porcelain"):
            # A clean tree is its commit: built once, like the base.
            new = build_revision(repo, "HEAD", builds, cache)
        else:
            new = Path(tmp) / "head"
            build_tree(repo, new, cache)
        print(to_markdown(*compare(old, new)), end="")
    _timing(started)
    return 0


def _timing(started: float) -> None:
    print(
        f"site diff: {time.perf_counter() - started:.2f} s",
        file=sys.stderr,
    )


if __name__ == "__main__":
    sys.exit(main())
