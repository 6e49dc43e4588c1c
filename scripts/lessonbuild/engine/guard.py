"""The repository after the snippets ran is the repository before, byte
for byte.

The sandbox (server.py) makes the repository read-only to every run;
this is the second line, and the only one under
``LESSONBUILD_NO_SANDBOX``: every tracked and untracked file (what
``git ls-files --cached --others --exclude-standard`` lists, or, outside
a git work tree, every file but the build's own products), the git
hooks and config, hashed before the snippets run and after their last
run ends. A same-size rewrite that puts the old mtime back changes the
hash. The files are read as bytes and hashed, never parsed (the deck
module stays the one reader of the slides' text).
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
        out = subprocess.run(
            GIT_FILES, cwd=root, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return [os.fsdecode(p) for p in out.split(b"\0") if p]


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
        for name in files:
            path = os.path.join(folder, name)
            out.append(os.path.relpath(path, root))
        for name in dirs:  # a link to a folder is listed, not followed
            path = os.path.join(folder, name)
            if os.path.islink(path):
                out.append(os.path.relpath(path, root))
    return out


def fingerprint_paths(root: Path) -> list[str]:
    """The repository's own files, relative: tracked and untracked (git's
    list), or outside a work tree every file but the build's products;
    never a site being built, nor a product git was not told to ignore
    (a tree without the project's .gitignore, as sitediff builds)."""
    root = Path(root)
    rels = _listed(root)
    if rels is None:
        rels = _walked(root, root, skip_products=True)
    caches = _tagged_caches(root, rels)
    return sorted(
        rel
        for rel in set(rels)
        if BUILDING not in rel.split("/", 1)[0]
        and rel.split("/", 1)[0] not in PRODUCTS
        and not any(rel.startswith(folder) for folder in caches)
    )


def _tagged_caches(root: Path, rels) -> list[str]:
    """Folders (``"a/b/"``) that hold a ``CACHEDIR.TAG``: a run cache put
    inside the repository (``SNIPPET_CACHE_DIR``) is the build's product
    too. A tag a run made itself hides nothing: what it hides is missing
    from the second fingerprint, and so reported as deleted."""
    folders = set()
    for rel in rels:
        parts = rel.split("/")[:-1]
        folders.update(
            "/".join(parts[: n + 1]) + "/" for n in range(len(parts))
        )
    return [f for f in folders if (root / f / CACHEDIR_TAG).is_file()]


def fingerprint(root: Path) -> dict[str, str]:
    """{path: sha256 of its bytes (a link: of its target's name)} for
    every file the guard watches."""
    root = Path(root)
    rels = fingerprint_paths(root)
    git = root / ".git"
    if git.is_dir():
        for name in GIT_GUARDED:
            if (git / name).is_dir():
                rels += _walked(root, git / name, skip_products=False)
            elif (git / name).exists():
                rels.append(f".git/{name}")
    return {rel: digest(root / rel) for rel in sorted(set(rels))}


def digest(path: Path) -> str:
    """sha256 of a regular file's bytes, streamed (hex); of a link, its
    target's name, never followed (a committed link to a fifo hung the
    build, one to /dev/zero or a secret would be read); else what is
    there: "folder", "missing", or "special" (a fifo: never opened)."""
    try:
        mode = os.lstat(path).st_mode
        if stat.S_ISLNK(mode):
            return "link:" + os.readlink(path)
        if not stat.S_ISREG(mode):
            return "folder" if stat.S_ISDIR(mode) else "special"
        # A bytes path: the fingerprint hashes every file, it reads no
        # slide (the audit test of the one reader of slides skips it).
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
