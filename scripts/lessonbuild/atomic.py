"""Writing a file in one rename: a reader, or a run that was killed
halfway, sees the old file or the new one, never part of either.

The one way the build writes what it keeps: rewritten slides (``make
update-outputs``), the run cache's records, the parsed slides, the
settings and the notebooks it makes; and the site itself, written into
a fresh folder and moved into place in one step (``SiteSwap``), by one
build at a time (``BuildLock``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

# What open() would give a new file (the umask read once, at import).
_UMASK = os.umask(0)
os.umask(_UMASK)


def write_atomic(
    path: Path, data: bytes | str, *, prefix: str = "", durable: bool = True
) -> None:
    """Replace or create ``path`` with ``data`` (text as UTF-8).

    An existing file keeps its mode; a new one gets open()'s. The
    temporary file is ``.<name><prefix>...`` in the same folder (a
    caller that cleans up after killed runs names its own ``prefix``).
    ``durable``: the data reaches the disk before the rename (fsync), so
    a crash of the machine cannot leave an empty file; a cache whose
    reader refuses a damaged entry can skip that (1 ms a file here).
    Raises OSError, leaving no temporary file behind.
    """
    path = Path(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_UMASK
    fd, tmp = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}{prefix or '.'}", suffix=".tmp"
    )
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --- the site, in one step ------------------------------------------------


#: A site being built: ``.<site name>.building-<pid>-<random>`` beside it.
BUILDING = ".building-"
# renameat2(2) flag: swap two paths in one step (Linux 3.15).
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


class SiteSwap:
    """A build writes its site into a fresh folder beside ``site_dir``
    (``building``), and ``publish`` moves it into place in one step once
    the whole build succeeded: no page of a build that failed, was
    killed or runs alongside ever sits in ``site_dir``, and a run of a
    snippet never sees the folder being written (it is under the
    repository, read-only to runs, or wherever ``site_dir`` is)."""

    def __init__(self, site_dir: Path | str):
        self.final = Path(site_dir)
        self.final.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_builds(self.final)
        self.building = Path(
            tempfile.mkdtemp(
                prefix=f".{self.final.name}{BUILDING}{os.getpid()}-",
                dir=self.final.parent,
            )
        )
        os.chmod(self.building, 0o777 & ~_UMASK)

    def publish(self) -> None:
        """``building`` becomes ``site_dir``; the old site is removed."""
        if self.final.is_dir() and not self.final.is_symlink():
            if not _exchange(self.building, self.final):
                old = self.final.with_name(self.building.name + "-old")
                os.rename(self.final, old)
                os.rename(self.building, self.final)
                self.building = old
            shutil.rmtree(self.building, ignore_errors=True)
        else:
            if self.final.is_symlink() or self.final.exists():
                self.final.unlink()
            os.rename(self.building, self.final)

    def discard(self) -> None:
        shutil.rmtree(self.building, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders in one rename (renameat2 RENAME_EXCHANGE)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return (
            libc.renameat2(
                _AT_FDCWD,
                os.fsencode(a),
                _AT_FDCWD,
                os.fsencode(b),
                _RENAME_EXCHANGE,
            )
            == 0
        )
    except (OSError, AttributeError):
        return False


def remove_stale_builds(site_dir: Path) -> None:
    """Remove what killed builds left beside ``site_dir`` (their process
    is gone)."""
    site_dir = Path(site_dir)
    for folder in site_dir.parent.glob(f".{site_dir.name}{BUILDING}*"):
        pid = folder.name.split(BUILDING, 1)[1].split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(folder, ignore_errors=True)


# --- one build at a time -------------------------------------------------


class BuildLock:
    """An exclusive lock on ``path`` (flock), held until ``release`` or
    the process ends: a second build of the same site waits for the
    first, saying so, instead of writing over it."""

    def __init__(self, path: Path, say=print):
        import fcntl

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(self.fd, 64, 0).decode(errors="replace").strip()
            say(
                f"another build of this site is running (pid {holder or '?'}"
                f", lock {path}): waiting for it to finish"
            )
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, str(os.getpid()).encode(), 0)

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the last descriptor unlocks
            self.fd = None
