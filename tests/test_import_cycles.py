"""No import cycle in lessonbuild, counting the imports inside functions
(a cycle hidden in a function-level import is still a cycle)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "scripts" / "lessonbuild"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, modules: set[str]) -> set[str]:
    """The package's modules that ``path`` imports, anywhere in it."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[
                    : len(package.split(".")) - node.level + 1
                ]
                base = ".".join(up + ([base] if base else []))
            for alias in node.names:  # a submodule, else a name in base
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in modules else base)
    return {m for m in found if m in modules and m != name}


def graph() -> dict[str, set[str]]:
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    return {module_name(p): imports(p, modules) for p in paths}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Each cycle once, as the path that closes it."""
    found, done = [], set()

    def visit(node, stack):
        if node in stack:
            found.append(stack[stack.index(node) :] + [node])
            return
        if node in done:
            return
        for nxt in sorted(edges.get(node, ())):
            visit(nxt, stack + [node])
        done.add(node)

    for node in sorted(edges):
        visit(node, [])
    return found


def test_the_detector_finds_a_cycle_through_three_modules():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(edges) == [["a", "b", "c", "a"]]


def test_the_package_has_no_import_cycle():
    edges = graph()
    # Seen: the exercises package imports its validator, which imports
    # the kinds' registry.
    assert "lessonbuild.exercises.validate" in edges["lessonbuild.exercises"]
    assert (
        "lessonbuild.exercises.model"
        in edges["lessonbuild.exercises.validate"]
    )
    assert cycles(edges) == []
