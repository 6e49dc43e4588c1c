"""The lesson plugin's settings: one typed schema (``Settings``: type,
default, help) for the plugin's block in mkdocs.yml and for the CLI.
Environment variables win over mkdocs.yml, flags over both."""

from __future__ import annotations

import os
import typing
from copy import copy
from dataclasses import dataclass, field, fields
from pathlib import Path

PLUGIN_NAME = "lesson"
TIMEOUT_ENV = "SNIPPET_TIMEOUT"
JOBS_ENV = "SNIPPET_JOBS"
CACHE_ENV = "SNIPPET_CACHE_DIR"


class SettingsError(ValueError):
    """A setting has the wrong type or value; ``name``: which, if one."""

    def __init__(self, message: str, name: str = ""):
        super().__init__(message)
        self.name = name


def _setting(default, help: str, *, positive: bool = False):
    return field(
        default_factory=lambda: copy(default),  # a list: each its own
        metadata={"help": help, "positive": positive},
    )


@dataclass
class Settings:
    parts: list[str] = _setting([], "the lesson's part names, in order")
    snippet_timeout: float = _setting(
        60.0, "seconds one snippet may run", positive=True
    )
    jobs: int = _setting(0, "snippets run at once (0: one per core)")
    storage_prefix: str = _setting("lesson81", "prefix of localStorage keys")
    output_max_lines: int = _setting(
        200, "most lines in one Output block", positive=True
    )
    output_max_bytes: int = _setting(
        20_000, "most bytes in one Output block", positive=True
    )

    @classmethod
    def from_mapping(cls, data: dict, where: str = "mkdocs.yml") -> Settings:
        """Validate ``data`` (the plugin's block) against the fields."""
        names = [f.name for f in fields(cls)]
        if unknown := sorted(set(data) - set(names)):
            raise SettingsError(
                f"{where}: unknown setting(s) of the lesson plugin: "
                f"{', '.join(unknown)}; expected {', '.join(names)}",
                unknown[0],
            )
        hints = typing.get_type_hints(cls)
        values = {}
        for f in (f for f in fields(cls) if f.name in data):
            value, kind, item = data[f.name], hints[f.name], None
            if typing.get_origin(kind) is list:
                kind, (item,) = list, typing.get_args(kind)
            if kind is float and isinstance(value, int):
                value = float(value)  # `snippet_timeout: 5` is seconds too
            wrong = not isinstance(value, kind) or isinstance(value, bool)
            if item and not wrong:
                wrong = any(not isinstance(v, item) for v in value)
            expected = f"a list of {item.__name__}" if item else kind.__name__
            if not wrong and f.metadata["positive"]:
                if kind is float:
                    value = positive_seconds(value, f"{where}: {f.name}")
                elif value < 1:
                    wrong, expected = True, "a positive whole number"
            if wrong:
                raise SettingsError(
                    f"{where}: lesson plugin setting {f.name}: expected "
                    f"{expected}, got {value!r}",
                    f.name,
                )
            values[f.name] = value
        return cls(**values)

    @classmethod
    def help(cls, name: str) -> str:
        """A setting's help text (the CLI's flags quote it)."""
        return next(f.metadata["help"] for f in fields(cls) if f.name == name)

    def timeout(self, flag: float | str | None = None) -> float:
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
        try:
            return max(1, int(value or len(os.sched_getaffinity(0))))
        except ValueError:
            message = f"{JOBS_ENV}: not a whole number: {value!r}"
            raise SettingsError(message) from None


def positive_seconds(value, name: str) -> float:
    """A finite, positive number of seconds, or a ``SettingsError``."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        message = f"{name}: not a number of seconds: {value!r}"
        raise SettingsError(message) from None
    if not 0 < number < 24 * 3600:
        raise SettingsError(
            f"{name}: expected a number of seconds between 0 and 86400, "
            f"got {value!r}"
        )
    return number


def cache_dir(root: Path, flag: Path | None = None) -> Path:
    """The run cache: flag, else $SNIPPET_CACHE_DIR, else .cache/engine
    (one cache may serve many copies of the lesson: the tests share one)."""
    env = os.environ.get(CACHE_ENV)
    return flag or (Path(env) if env else state_dir(root) / "engine")


def state_dir(root: Path) -> Path:
    """This root's own build state (lock, compiled templates, serve
    trigger), never shared with another root."""
    return Path(root) / ".cache"


def read_mkdocs_yml(path: Path) -> dict:
    """``mkdocs.yml`` through MkDocs' loader (``INHERIT:``, its tags)."""
    from mkdocs.exceptions import ConfigurationError
    from mkdocs.utils.yaml import yaml_load

    try:
        with open(path, "rb") as f:
            return yaml_load(f)
    except (OSError, ConfigurationError) as exc:
        raise SettingsError(f"{path}: {exc}") from None


def read_settings(root: Path) -> Settings:
    """The lesson plugin's block of ``root/mkdocs.yml`` (defaults if none)."""
    path = Path(root) / "mkdocs.yml"
    plugins = read_mkdocs_yml(path).get("plugins") if path.is_file() else []
    for item in plugins or []:
        if isinstance(item, dict) and PLUGIN_NAME in item:
            return Settings.from_mapping(item[PLUGIN_NAME] or {})
    return Settings()
