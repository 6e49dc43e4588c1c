"""Writing in one rename: a reader, or a run killed halfway, sees the old
file or the new one, never part of either.

The one way the build writes what it keeps (rewritten slides, the run
cache, the notebooks), and the site itself: written into a fresh folder
and moved into place in one step (``SiteSwap``), by one build at a time
(``BuildLock``).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from pathlib import Path

# What open() would give a new file (the umask read once, at import).
_UMASK = os.umask(0)
os.umask(_UMASK)


def write_atomic(path: Path, data: bytes | str, *, prefix: str = "") -> None:
    """Replace or create ``path`` with ``data`` (text as UTF-8).

    An existing file keeps its mode; a new one gets open()'s. The
    temporary file is ``.<name><prefix>...`` beside it (a caller that
    cleans up after killed runs names its ``prefix``). The data reaches
    the disk (fsync) before the rename, so a crash cannot leave an empty
    file. Raises OSError, leaving no temporary file.
    """
    path = Path(path)
    data = data.encode("utf-8") if isinstance(data, str) else data
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
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


#: A site being built: ``.~<site name>.building-<pid>-<random>`` beside
#: it. (The "~": the minify plugin names ``x.min.css`` by replacing
#: ".css" anywhere in the path, and ``.css-site.building-…`` broke every
#: build into a folder whose name starts with css or js.)
BUILDING = ".building-"


def building_prefix(site_dir: Path | str) -> str:
    """The name a build of ``site_dir`` writes into starts with this."""
    return f".~{Path(site_dir).name}{BUILDING}"


class SiteSwap:
    """A build writes its site into ``building``, a fresh folder beside
    ``site_dir``, and ``publish`` moves it into place in one step once
    the whole build succeeded: no page of a build that failed, was
    killed or runs alongside ever sits in ``site_dir``."""

    def __init__(self, site_dir: Path | str):
        self.final = Path(site_dir)
        self.final.parent.mkdir(parents=True, exist_ok=True)
        # What killed builds left (their process is gone).
        name = building_prefix(self.final)
        for folder in self.final.parent.glob(f"{name}*"):
            pid = folder.name[len(name) :].split("-", 1)[0]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                shutil.rmtree(folder, ignore_errors=True)
        prefix = f"{name}{os.getpid()}-"
        self.building = Path(
            tempfile.mkdtemp(prefix=prefix, dir=self.final.parent)
        )
        os.chmod(self.building, 0o777 & ~_UMASK)

    def publish(self) -> None:
        """``building`` becomes ``site_dir``; the old site is removed."""
        if not self.final.is_dir() or self.final.is_symlink():
            self.final.unlink(missing_ok=True)  # a file or a link
            os.rename(self.building, self.final)
            return
        if not _exchange(self.building, self.final):  # in two steps
            old = self.final.with_name(self.building.name + "-old")
            os.rename(self.final, old)
            os.rename(self.building, self.final)
            self.building = old
        shutil.rmtree(self.building, ignore_errors=True)

    def discard(self) -> None:
        shutil.rmtree(self.building, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders in one step: renameat2(2) with RENAME_EXCHANGE
    (2), both paths from the working folder (AT_FDCWD, -100)."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        a, b = os.fsencode(a), os.fsencode(b)
        return libc.renameat2(-100, a, -100, b, 2) == 0
    except (OSError, AttributeError):
        return False


class BuildLock:
    """An exclusive lock on ``path`` (flock), held until ``release`` or
    the process ends: a second build of the same site waits for the
    first, saying so, instead of writing over it."""

    def __init__(self, path: Path, say=print):
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
