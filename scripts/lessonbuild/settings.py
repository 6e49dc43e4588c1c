"""The lesson plugin's settings: one schema, for the plugin and the CLI.

In mkdocs.yml::

    plugins:
      - lesson:
          parts: ["Opening", "Part 1 — Why multiple heads?", ...]
          snippet_timeout: 60

The plugin turns ``SCHEMA`` into MkDocs' typed config; the CLI reads the
same block from mkdocs.yml without importing MkDocs (a warm check must
stay fast) and validates it with the same table. Environment variables
win over mkdocs.yml, and command-line flags over both.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

PLUGIN_NAME = "lesson"
TIMEOUT_ENV = "SNIPPET_TIMEOUT"
JOBS_ENV = "SNIPPET_JOBS"
CACHE_ENV = "SNIPPET_CACHE_DIR"

#: name -> (type, default, what it is). The one definition of the schema.
SCHEMA: dict[str, tuple[type, object, str]] = {
    "parts": (list, [], "the lesson's part names, in order"),
    "snippet_timeout": (float, 60.0, "seconds one snippet may run"),
    "jobs": (int, 0, "snippets run at once (0: one per core)"),
    "storage_prefix": (str, "lesson81", "prefix of localStorage keys"),
    "output_max_lines": (int, 200, "most lines in one Output block"),
    "output_max_bytes": (int, 20_000, "most bytes in one Output block"),
}


class SettingsError(ValueError):
    """A setting has the wrong type or value; the message says which."""


@dataclass
class Settings:
    parts: list[str] = field(default_factory=list)
    snippet_timeout: float = 60.0
    jobs: int = 0
    storage_prefix: str = "lesson81"
    output_max_lines: int = 200
    output_max_bytes: int = 20_000

    @classmethod
    def from_mapping(cls, data: dict, where: str = "mkdocs.yml") -> Settings:
        """Validate ``data`` (the plugin's block) against ``SCHEMA``."""
        unknown = sorted(set(data) - set(SCHEMA))
        if unknown:
            raise SettingsError(
                f"{where}: unknown setting(s) of the lesson plugin: "
                f"{', '.join(unknown)}; expected {', '.join(SCHEMA)}"
            )
        values = {}
        for name, (kind, default, _help) in SCHEMA.items():
            value = data.get(name, default)
            if kind is float and isinstance(value, int):
                value = float(value)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise SettingsError(
                    f"{where}: lesson plugin setting {name}: expected "
                    f"{kind.__name__}, got {value!r}"
                )
            values[name] = value
        if any(not isinstance(p, str) for p in values["parts"]):
            raise SettingsError(f"{where}: parts: expected a list of names")
        for name in ("output_max_lines", "output_max_bytes"):
            if values[name] < 1:
                raise SettingsError(
                    f"{where}: lesson plugin setting {name}: expected a "
                    f"positive whole number, got {values[name]!r}"
                )
        settings = cls(**values)
        settings.snippet_timeout = positive_seconds(
            settings.snippet_timeout, f"{where}: snippet_timeout"
        )
        return settings

    def timeout(self, flag: float | None = None) -> float:
        """The snippet timeout: flag, else $SNIPPET_TIMEOUT, else setting."""
        if flag is not None:
            return positive_seconds(flag, "--timeout")
        if os.environ.get(TIMEOUT_ENV):
            return positive_seconds(os.environ[TIMEOUT_ENV], TIMEOUT_ENV)
        return self.snippet_timeout

    def output_limits(self) -> tuple[int, int]:
        """(lines, bytes): the most one Output block may hold."""
        return self.output_max_lines, self.output_max_bytes

    def job_count(self, flag: int | None = None) -> int:
        value = flag or os.environ.get(JOBS_ENV) or self.jobs
        if value:
            try:
                return max(1, int(value))
            except ValueError:
                raise SettingsError(
                    f"{JOBS_ENV}: not a whole number: {value!r}"
                ) from None
        return max(1, len(os.sched_getaffinity(0)))


def positive_seconds(value, name: str) -> float:
    """A finite, positive number of seconds, or a ``SettingsError``."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise SettingsError(
            f"{name}: not a number of seconds: {value!r}"
        ) from None
    if not 0 < number < 24 * 3600:
        raise SettingsError(
            f"{name}: expected a number of seconds between 0 and 86400, "
            f"got {value!r}"
        )
    return number


#: The parsed slides (``slidecache.py``), kept in the run cache's folder.
SLIDES_FILE = "parsed-slides.pickle"


def cache_dir(root: Path, flag: Path | None = None) -> Path:
    """The run cache: flag, else $SNIPPET_CACHE_DIR, else .cache/engine."""
    if flag is not None:
        return flag
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else root / ".cache" / "engine"


#: The lesson plugin's block, as last read, with the files it came from.
SETTINGS_FILE = "settings.json"


def read_settings(root: Path, cache: Path | None = None) -> Settings:
    """The lesson plugin's block of ``root/mkdocs.yml`` (defaults if none).

    Follows ``INHERIT:`` (fixture sites inherit the lesson's config).
    ``cache`` (a JSON file): the block last read, kept with the hash of
    every file it was read from, so that a warm check reads those files
    but parses no YAML (importing PyYAML alone took 25 ms of 0.25 s).
    """
    path = Path(root) / "mkdocs.yml"
    block = _cached_block(cache)
    if block is None:
        read: dict[str, str] = {}
        block = _plugin_block(path, read=read)
        _save_block(cache, block, read)
    else:
        block = block["block"]
    return Settings.from_mapping(block or {}, "mkdocs.yml")


def _sha(data: bytes | None) -> str:
    """sha256 of a config file's bytes; "" for a missing file."""
    import hashlib

    return "" if data is None else hashlib.sha256(data).hexdigest()


def _digest(path: str) -> str:
    try:
        return _sha(Path(path).read_bytes())
    except OSError:
        return ""


def _cached_block(cache: Path | None) -> dict | None:
    """{"block": ...} if every file it was read from is unchanged."""
    import json

    if cache is None:
        return None
    try:
        data = json.loads(cache.read_text(encoding="utf-8"))
        files = data["files"]
        if not files or any(_digest(p) != h for p, h in files.items()):
            return None
        return {"block": data["block"]}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # missing, damaged, foreign: read mkdocs.yml


def _save_block(cache: Path | None, block, read: dict[str, str]) -> None:
    import json

    from .atomic import write_atomic

    if cache is None:
        return
    try:
        text = json.dumps({"files": read, "block": block})
        cache.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(cache, text, durable=False)  # damaged: a miss
    except (OSError, TypeError, ValueError):
        pass  # best effort: the next check parses again


def config_files(path: Path) -> list[Path]:
    """``mkdocs.yml`` and each file it inherits from (``INHERIT:``), in
    order; a file named but missing is listed too."""
    return [file for file, _, _ in _config_chain(path)]


def _config_chain(path: Path):
    """(path, its bytes or None if missing, its YAML) for ``path`` and
    each file it inherits from, as MkDocs follows ``INHERIT:`` (at most
    five deep here)."""
    for _ in range(6):
        try:
            data_bytes = path.read_bytes()
        except OSError:
            yield path, None, None
            return
        data = _load_yaml(path, data_bytes)
        yield path, data_bytes, data
        parent = data.get("INHERIT") if isinstance(data, dict) else None
        if not isinstance(parent, str):
            return
        path = path.parent / parent


def _load_yaml(path: Path, data_bytes: bytes):
    try:
        text = data_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SettingsError(f"{path}: not UTF-8: {exc}") from None
    import yaml  # here: most commands that import settings never parse

    # libyaml's parser where PyYAML has it: mkdocs.yml in 3 ms, not 50.
    class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        pass

    # !ENV and other MkDocs tags: not needed here, read as None.
    Loader.add_multi_constructor("", lambda loader, suffix, node: None)
    try:
        return yaml.load(text, Loader=Loader)
    except yaml.YAMLError as exc:
        raise SettingsError(f"{path}: not valid YAML: {exc}") from None


def _plugin_block(path: Path, read=None) -> dict | None:
    """The lesson plugin's block, from the first file of the chain that
    lists the plugin; ``read`` gets the sha256 of each file read ("" for
    a missing one), for the settings cache."""
    for file, data_bytes, data in _config_chain(path):
        if read is not None:
            read[str(file)] = _sha(data_bytes)
        if not isinstance(data, dict):
            return None
        for item in data.get("plugins") or []:
            if isinstance(item, dict) and PLUGIN_NAME in item:
                return item[PLUGIN_NAME] or {}
            if item == PLUGIN_NAME:
                return {}
    return None
