"""Socket files outside a sandbox, for the tests that show a sandboxed
run cannot reach them (the grader's and the engine's: a socket file was
a way out of their network namespace)."""

from __future__ import annotations

import contextlib
import socket
from pathlib import Path

import pytest


@contextlib.contextmanager
def socket_files(folder: Path):
    """A listening stream socket and a bound datagram one in ``folder``:
    {"stream": path, "datagram": path}. On a clean exit, asserts that
    nothing connected to or sent to either."""
    stream = socket.socket(socket.AF_UNIX)
    datagram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    paths = {
        "stream": str(folder / "s.sock"),
        "datagram": str(folder / "d.sock"),
    }
    try:
        stream.bind(paths["stream"])
        stream.listen()
        datagram.bind(paths["datagram"])
        yield paths
        stream.setblocking(False)  # nothing reached them
        datagram.setblocking(False)
        with pytest.raises(BlockingIOError):
            stream.accept()
        with pytest.raises(BlockingIOError):
            datagram.recv(1)
    finally:
        stream.close()
        datagram.close()
