"""pyproject.toml declares names; requirements.txt pins every one exactly."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _name(requirement: str) -> str:
    name = re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def pins() -> dict[str, str]:
    out = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"requirements.txt: {line!r} is not an exact pin"
            out[_name(name)] = version
    return out


def declared() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    names = list(project["project"]["dependencies"])
    for group in project["dependency-groups"].values():
        names += group
    return names


def test_every_declared_dependency_is_pinned_exactly():
    pinned = pins()
    missing = [d for d in declared() if _name(d) not in pinned]
    assert missing == []


def test_torch_is_pinned_to_the_local_cpu_build():
    assert pins()["torch"] == "2.13.0"
    torch = [d for d in declared() if _name(d) == "torch"]
    assert torch == ["torch==2.13.0"]


def test_every_torch_install_names_the_pin():
    """No install step asks for another torch (a CUDA build, gigabytes)."""
    found = []
    for rel in (
        "Makefile",
        *sorted(
            p.relative_to(ROOT).as_posix()
            for p in (ROOT / ".github/workflows").glob("*.yml")
        ),
    ):
        text = (ROOT / rel).read_text(encoding="utf-8")
        for line in text.splitlines():
            if "pip" in line and "install" in line and "torch" in line:
                found += [
                    (rel, spec)
                    for spec in re.findall(r"torch[^\s)'\"]*", line)
                    if spec != "torch==2.13.0"
                ]
    assert found == []
