"""Writing a file in one rename: a reader, or a run that was killed
halfway, sees the old file or the new one, never part of either.

The one way the build writes what it keeps: rewritten slides (``make
update-outputs``), the run cache's records, the parsed slides, the
settings and the notebooks it makes.
"""

from __future__ import annotations

import os
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
