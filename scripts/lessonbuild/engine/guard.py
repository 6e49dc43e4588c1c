"""The repository after the snippets ran is the repository before, byte
for byte.

The second line behind the sandbox (server.py), and the only one under
``LESSONBUILD_NO_SANDBOX``: every tracked and untracked file (git's
list; outside a work tree every file but the build's products), the git
hooks and config, hashed before the snippets run and after the last
ends. Hashes, not stat: a same-size rewrite that puts the old mtime
back is caught. Files are hashed as bytes, never parsed (deck.py stays
the one reader of the slides).
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from pathlib import Path

from ..atomic import BUILDING
from ..problems import Problem

#: Folders that are the build's own products or caches, never inputs.
PRODUCTS = {".cache", ".venv", "node_modules", "__pycache__", "site"}
#: Under .git: what runs the next time git does (hooks) or says where.
GIT_GUARDED = ("config", "hooks", "info")
#: The Cache Directory Tagging Specification's file: backup tools skip
#: its folder, and so does the guard.
CACHEDIR_TAG = "CACHEDIR.TAG"
GIT_FILES = "git ls-files -z --cached --others --exclude-standard".split()


def _listed(root: Path) -> list[str] | None:
    """Tracked and untracked (not ignored) files, by git; None outside a
    work tree (or in a folder inside someone else's)."""
    if not (root / ".git").exists():
        return None
    try:
        run = subprocess.run(GIT_FILES, cwd=root, capture_output=True)
    except OSError:
        return None
    if run.returncode:
        return None
    return [os.fsdecode(p) for p in run.stdout.split(b"\0") if p]


def _walked(root: Path, top: Path, skip_products: bool) -> list[str]:
    out = []
    for folder, dirs, files in os.walk(top):
        if skip_products:
            dirs[:] = [
                d
                for d in dirs
                if d not in PRODUCTS
                and BUILDING not in d
                and not (folder == str(root) and d == ".git")
            ]
        # A link to a folder is listed, not followed.
        links = [d for d in dirs if os.path.islink(os.path.join(folder, d))]
        for name in files + links:
            out.append(os.path.relpath(os.path.join(folder, name), root))
    return out


def fingerprint_paths(root: Path) -> list[str]:
    """The repository's own files, relative: git's list, or outside a
    work tree every file but the build's products; never a site being
    built, nor a product git was not told to ignore (a tree without the
    project's .gitignore, as sitediff builds)."""
    root = Path(root)
    rels = _listed(root)
    if rels is None:
        rels = _walked(root, root, skip_products=True)
    caches = tuple(_tagged_caches(root, rels))
    return sorted(
        rel
        for rel in set(rels)
        if BUILDING not in rel.split("/", 1)[0]
        and rel.split("/", 1)[0] not in PRODUCTS
        and not rel.startswith(caches)
    )


def _tagged_caches(root: Path, rels) -> list[str]:
    """Folders (``"a/b/"``) holding a ``CACHEDIR.TAG``: a run cache put
    inside the repository is the build's product too. A tag a run made
    itself hides nothing: the second fingerprint misses what it hides,
    which is reported as deleted."""
    folders = set()
    for rel in rels:
        parts = rel.split("/")[:-1]
        folders.update(
            "/".join(parts[: n + 1]) + "/" for n in range(len(parts))
        )
    return [f for f in folders if (root / f / CACHEDIR_TAG).is_file()]


def fingerprint(root: Path) -> dict[str, str]:
    """{path: ``digest``} for every file the guard watches."""
    root = Path(root)
    rels = fingerprint_paths(root)
    git = root / ".git"
    for name in GIT_GUARDED if git.is_dir() else ():
        if (git / name).is_dir():
            rels += _walked(root, git / name, skip_products=False)
        elif (git / name).exists():
            rels.append(f".git/{name}")
    return {rel: digest(root / rel) for rel in sorted(set(rels))}


def digest(path: Path) -> str:
    """sha256 of a regular file's bytes (hex); of a link, its target's
    name, never followed (a committed link to a fifo hung the build, one
    to /dev/zero or a secret would be read); else "folder", "missing",
    or "special" (a fifo: never opened)."""
    try:
        mode = os.lstat(path).st_mode
        if stat.S_ISLNK(mode):
            return "link:" + os.readlink(path)
        if not stat.S_ISREG(mode):
            return "folder" if stat.S_ISDIR(mode) else "special"
        # A bytes path: this reads no slide (the audit test of the one
        # reader of slides skips it).
        with open(os.fsencode(path), "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return "missing"


def tampering(before: dict, after: dict) -> list[Problem]:
    """A problem for each watched file created, changed or deleted (not
    one missing before and after: deleted, not yet staged, it is still
    git's)."""
    problems = []
    for rel in sorted(set(before) | set(after)):
        old, new = before.get(rel, "missing"), after.get(rel, "missing")
        if old == new:
            continue
        if new == "missing":
            how = "deleted"
        elif old == "missing":
            how = "created"
        else:
            how = "changed"
        message = (
            f"{rel} was {how} while the snippets ran; snippets must not "
            "write into the repository (write to a temporary folder "
            "instead); if you saved it, build again"
        )
        problems.append(Problem(rel, 1, message))
    return problems
