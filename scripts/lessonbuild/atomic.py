"""Writing in one rename: a reader, or a run killed halfway, sees the old
file or the new one, never part of either. The site itself is built in
a fresh folder and swapped in (``SiteSwap``), one build at a time
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
    """Replace or create ``path`` with ``data`` (text as UTF-8), keeping
    an existing file's mode. The temporary ``.<name><prefix>...`` beside
    it is fsynced before the rename (a crash leaves no empty file) and
    removed on error."""
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


#: A site being built: ``.~<site name>.building-<pid>-<random>``. The
#: "~": the minify plugin replaces ".css" anywhere in a path, and
#: ``.css-site.building-…`` broke builds into folders named css or js.
BUILDING = ".building-"


def building_prefix(site_dir: Path | str) -> str:
    """The name a build of ``site_dir`` writes into starts with this."""
    return f".~{Path(site_dir).name}{BUILDING}"


class SiteSwap:
    """A build writes into ``building``, a fresh folder beside
    ``site_dir``; ``publish`` moves it into place in one step, so no page
    of a failed, killed or concurrent build ever sits in ``site_dir``."""

    def __init__(self, site_dir: Path | str):
        self.final = Path(site_dir)
        parent, name = self.final.parent, building_prefix(self.final)
        parent.mkdir(parents=True, exist_ok=True)
        for folder in parent.glob(f"{name}*"):  # what killed builds left
            pid = folder.name[len(name) :].split("-", 1)[0]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                shutil.rmtree(folder, ignore_errors=True)
        mine = f"{name}{os.getpid()}-"
        self.building = Path(tempfile.mkdtemp(prefix=mine, dir=parent))
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
        self.discard()

    def discard(self) -> None:
        shutil.rmtree(self.building, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders in one step: renameat2(AT_FDCWD, a, AT_FDCWD, b,
    RENAME_EXCHANGE)."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        a, b = os.fsencode(a), os.fsencode(b)
        return libc.renameat2(-100, a, -100, b, 2) == 0
    except (OSError, AttributeError):
        return False


class BuildLock:
    """An exclusive flock on ``path`` until ``release`` or exit: a second
    build of the same site says so and waits instead of writing over."""

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
