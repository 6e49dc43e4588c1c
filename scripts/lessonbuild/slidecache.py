"""Parsed slides kept between runs, keyed by their text.

Parsing the deck (front matter with PyYAML, fences with markdown-it) is
most of a check that runs no snippet: 56 slides took ~0.08 s, and
importing the two parsers ~0.08 s more. A slide whose text, path and
parser code did not change parses to the same ``Slide``, so its parse is
kept:

- in memory, for ``mkdocs serve`` (the plugin keeps one cache across
  rebuilds: an edit parses one slide again);
- on disk, given a file (``<run cache>/parsed-slides.pickle``), for the
  next process: a warm ``make check-outputs`` imports neither parser.

The key hashes the parser's own source (``deck.py``, ``problems.py``),
so a change to how slides are read never serves an old parse. Anything
wrong with the file (missing, damaged, written by other code, holding a
type the parser never makes) is a miss, never a crash: the slide is
parsed again. Loading refuses every class but the deck's own, so a
planted file cannot run code.
"""

from __future__ import annotations

import hashlib
import io
import pickle
from pathlib import Path

from . import deck as deck_mod
from . import problems as problems_mod
from .atomic import write_atomic

#: The classes a parsed slide is made of; nothing else is unpickled.
_ALLOWED = {
    ("lessonbuild.deck", name)
    for name in (
        "Slide",
        "Fence",
        "Include",
        "TableCall",
        "FigureCall",
        "Note",
    )
} | {
    ("lessonbuild.problems", "Problem"),
    # YAML front matter may hold dates (SafeLoader builds them).
    ("datetime", "date"),
    ("datetime", "datetime"),
    ("datetime", "timedelta"),
    ("datetime", "timezone"),
}


class _DeckUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not a slide")
        return super().find_class(module, name)


def _loads(data: bytes):
    return _DeckUnpickler(io.BytesIO(data)).load()


_VERSION: list[bytes] = []


def _parser_version() -> bytes:
    """Hash of the code that parses a slide (read once per process)."""
    if not _VERSION:
        h = hashlib.sha256()
        for module in (deck_mod, problems_mod):
            h.update(Path(module.__file__).read_bytes())
        _VERSION.append(h.digest())
    return _VERSION[0]


class SlideCache:
    """``parse(rel, text, numbered, parts)`` -> (Slide, its problems),
    parsed once per distinct input; ``save()`` writes what this run used
    to ``path`` (when given), atomically."""

    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path is not None else None
        self._entries: dict[bytes, bytes] | None = None  # key -> pickle
        self._used: set[bytes] = set()
        self._changed = False

    def parse(
        self,
        rel: str,
        text: str,
        numbered: bool,
        parts: list[str] | None,
    ):
        entries = self._load()
        key = _key(rel, text, numbered, parts)
        self._used.add(key)
        data = entries.get(key)
        if data is not None:
            try:
                slide, problems = _loads(data)
                if isinstance(slide, deck_mod.Slide) and slide.text == text:
                    return slide, problems
            except Exception:  # damaged or foreign: parse again
                pass
        problems: list = []
        slide = deck_mod.parse_slide(rel, text, problems, numbered, parts)
        entries[key] = pickle.dumps((slide, problems), protocol=5)
        self._changed = True
        return _loads(entries[key])  # the caller owns a fresh copy

    def save(self) -> None:
        """Keep the slides this run read (a deleted slide's parse goes);
        best effort: a cache that cannot be written only costs a parse."""
        entries = self._load()
        stale = entries.keys() - self._used
        self._used = set()
        if not (self._changed or stale):
            return
        for key in stale:
            del entries[key]
        self._changed = False
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # A cache: a file a crash left short is a miss (_load).
            data = pickle.dumps(entries, protocol=5)
            write_atomic(self.path, data, durable=False)
        except OSError:
            pass

    def _load(self) -> dict[bytes, bytes]:
        if self._entries is None:
            self._entries = {}
            if self.path is not None:
                try:
                    data = self.path.read_bytes()
                    # The file is a dict of bytes to bytes: plain pickle
                    # types only, so no class is allowed here at all.
                    entries = _BytesUnpickler(io.BytesIO(data)).load()
                    if isinstance(entries, dict) and all(
                        isinstance(k, bytes) and isinstance(v, bytes)
                        for k, v in entries.items()
                    ):
                        self._entries = entries
                except Exception:  # missing, damaged, foreign: empty
                    pass
        return self._entries


class _BytesUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed")


def _key(rel: str, text: str, numbered: bool, parts) -> bytes:
    h = hashlib.sha256(_parser_version())
    h.update(repr((rel, bool(numbered), list(parts or []))).encode())
    h.update(b"\0")
    h.update(text.encode("utf-8", errors="surrogatepass"))
    return h.digest()
