"""The run cache: a snippet's result, keyed by everything it depends on
(``base_key``, ``snippet_key``; the date too: a run may read the clock).
A record names every file under the root the run opened, with its hash,
and carries a checksum; a run that started a program or called C is
never cached. Checking the cache reads files only, never imports torch.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

from ..atomic import write_atomic
from .guard import CACHEDIR_TAG, digest, fingerprint_paths

_TAG_TEXT = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# The snippet engine's run cache (scripts/lessonbuild/engine/cache.py).\n"
)
#: Bump when the meaning of a cached record changes.
FORMAT = 2
#: The engine code a record's verdict depends on: how snippets run
#: (server, runner), how two runs are judged, what is refused unrun.
_RUNNER_FILES = ("server.py", "runner.py", "judge.py", "lint.py", "tables.py")


def find_package(name: str, snippets_dir: Path) -> Path | None:
    """The folder of package ``name`` as ``python snippets/X.py`` would
    import it (the snippet's folder first, then this interpreter's path
    and finders), found without importing it or touching ``sys.path``."""
    search = [str(snippets_dir), *sys.path[1:]]
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            spec = find(name, search)
        except (ImportError, ValueError, TypeError):
            continue
        if spec is not None:
            locations = spec.submodule_search_locations
            return Path(list(locations)[0]) if locations else None
    return None


def _digest_files(h, base: Path, files) -> None:
    for path in sorted(files):
        h.update(path.relative_to(base).as_posix().encode() + b"\0")
        h.update(digest(path).encode() + b"\0")


def base_key(snippets_dir: Path) -> str:
    """Hash of what every snippet depends on besides its own file: the
    engine code that runs and judges it, Python and every installed
    package, torch, the data files, ``mha_ref`` and today's date (UTC)."""
    h = hashlib.sha256()
    head = {
        "format": FORMAT,
        "python": sys.version,
        "packages": installed_versions(),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
    }
    h.update(json.dumps(head, sort_keys=True).encode())
    here = Path(__file__).parent
    _digest_files(h, here, [here / name for name in _RUNNER_FILES])
    # torch's version.py names its version and git commit: hashing it is
    # as good as importing torch to ask, at a thousandth of the cost.
    torch = find_package("torch", snippets_dir)
    if torch is not None and (torch / "version.py").is_file():
        _digest_files(h, torch, [torch / "version.py"])
    # Data a run may read from C, unseen by the audit hook (data_files).
    root = snippets_dir.parent
    h.update(b"data\0")
    _digest_files(h, root, [root / rel for rel in data_files(root)])
    if (mha_ref := find_package("mha_ref", snippets_dir)) is not None:
        files = [
            p
            for p in mha_ref.rglob("*")
            if p.is_file()
            and "__pycache__" not in p.parts
            and p.suffix not in (".pyc", ".pyo")
        ]
        h.update(b"mha_ref\0")
        _digest_files(h, mha_ref, files)
    return h.hexdigest()


#: Not data a run reads from C: the pages and theme (keyed page by page),
#: the tests, the build's code (its engine part is in the key), git's.
_NOT_DATA_FOLDERS = "docs overrides tests scripts .git .github".split()
#: Python reads sources with ``open`` (the audit hook sees it); Markdown
#: is a page's text.
_NOT_DATA_SUFFIXES = (".py", ".md")


def data_files(root: Path) -> list[str]:
    """The repository's files a snippet may read from C (``open`` unseen):
    every file the guard watches but pages, sources and the folders
    above. Editing one re-runs every snippet: the price of a key that
    never lies (issue 31)."""
    return [
        rel
        for rel in fingerprint_paths(root)
        if rel.split("/", 1)[0] not in _NOT_DATA_FOLDERS
        and not rel.endswith(_NOT_DATA_SUFFIXES)
        and "__pycache__" not in rel.split("/")
    ]


def installed_versions() -> list[str]:
    """Every installed distribution as its metadata folder names it
    (``torch-2.13.0+cpu.dist-info``), sorted: a run imports what it
    likes. Listing the folders takes 8 ms; importlib.metadata, 1.7 s."""
    found = set()
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        found.update(
            n for n in names if n.endswith((".dist-info", ".egg-info"))
        )
    return sorted(found)


def snippet_key(base: str, rel: str, data: bytes) -> str:
    h = hashlib.sha256(base.encode())
    h.update(rel.encode() + b"\0")
    h.update(hashlib.sha256(data).digest())
    return h.hexdigest()


def file_hashes(root: Path, rels, seen: dict | None = None) -> dict[str, str]:
    """sha256 of each file (relative to ``root``); "" when unreadable or
    not a regular file. ``seen`` ((root, rel) -> hash) is shared by one
    pass over many records (the lesson's 38 name 637 files, 71 distinct)."""
    out, inside = {}, Path(root).resolve()
    seen = {} if seen is None else seen
    for rel in sorted(set(rels)):
        if (root, rel) not in seen:
            seen[root, rel] = ""  # gone, or a folder: the record's state
            try:
                real = (root / rel).resolve()
                if real.is_relative_to(inside) and real.is_file():
                    seen[root, rel] = digest(real)
            except (OSError, RuntimeError):  # 3.11: a loop of links
                pass
        out[rel] = seen[root, rel]
    return out


def checksum(record: dict) -> str:
    """sha256 of the record without its checksum (canonical JSON)."""
    body = {k: v for k, v in record.items() if k != "checksum"}
    data = json.dumps(body, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


class Cache:
    """JSON records under ``directory``, one file per key, trusted only
    with the right key and checksum (an edited record runs again, never
    published) and every file it read unchanged; unreadable is a miss."""

    def __init__(self, directory: Path | None):
        self.directory = directory
        self.hashes: dict = {}  # file_hashes' ``seen``: one per pass

    def get(self, key: str, root: Path | None = None) -> dict | None:
        if self.directory is None:
            return None
        try:
            with open(self.directory / f"{key}.json", encoding="utf-8") as f:
                record = json.load(f)
        except (OSError, ValueError):
            return None
        if (
            not isinstance(record, dict)
            or record.get("key") != key
            or record.get("checksum") != checksum(record)
            or not isinstance(reads := record.get("reads", {}), dict)
        ):
            return None
        if root is not None and file_hashes(root, reads, self.hashes) != reads:
            return None
        return record

    def put(self, key: str, record: dict) -> None:
        """Best effort: without a cache, the result is still right."""
        if self.directory is None:
            return
        record = {**record, "key": key}
        record["checksum"] = checksum(record)
        target = self.directory / f"{key}.json"
        try:
            tag = self.directory / CACHEDIR_TAG
            if not tag.is_file():  # the guard and backup tools skip it
                self.directory.mkdir(parents=True, exist_ok=True)
                write_atomic(tag, _TAG_TEXT)
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            write_atomic(target, json.dumps(record))
        except OSError:
            pass
