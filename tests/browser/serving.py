"""What the tests that run ``mkdocs serve`` share: a free port, and a
wait for a condition (never for a fixed time)."""

from __future__ import annotations

import socket
import time


def free_port() -> int:
    """A port on 127.0.0.1 nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, seconds: float, what: str) -> None:
    """Return once ``predicate()`` holds; fail naming ``what`` after
    ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.25)
    raise AssertionError(f"gave up waiting for {what}")
