"""Find set order reaching a snippet's output, from its syntax tree.

Two hash seeds often give a small set the same order, so two runs catch
a printed set only by chance; this makes the verdict certain. Reported:
a ``print`` of a set (``_is_set``) not under ``sorted(...)`` or another
order-free reduction, and a ``for`` loop over a set that prints.
"""

from __future__ import annotations

import ast

from ..problems import Problem

#: Calls whose result does not depend on the order of their argument.
ORDER_FREE = {"sorted", "len", "sum", "min", "max", "any", "all", "bool"}
_SET_CALLS = {"set", "frozenset"}
_SET_METHODS = {
    "union", "intersection", "difference", "symmetric_difference", "copy",
}  # fmt: skip
ADVICE = (
    "set order changes from run to run (it depends on the hash seed): "
    "print sorted(...) of it instead"
)


def set_order_problems(rel: str, source: str) -> list[Problem]:
    """A problem per place where a set's order reaches the output."""
    try:
        tree = ast.parse(source, filename=rel)
    except SyntaxError:
        return []  # the run reports it, with Python's own message
    names = _set_names(tree)
    found: dict[int, str] = {}  # line -> what was found there first
    for node in ast.walk(tree):
        if _called(node) == "print":
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                if (where := _unordered_set(arg, names)) is not None:
                    what = "prints a set without sorting it"
                    found.setdefault(where.lineno, what)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            if _is_set(node.iter, names) and any(
                _called(n) == "print" for n in ast.walk(node)
            ):
                what = "prints while iterating over a set"
                found.setdefault(node.lineno, what)
    return [
        Problem(rel, line, f"{what}; {ADVICE}")
        for line, what in sorted(found.items())
    ]


def _called(node) -> str | None:
    """The name ``node`` calls (``print`` of ``print(x)``), or None."""
    match node:
        case ast.Call(func=ast.Name(id=name)):
            return name
    return None


def _set_names(tree) -> set[str]:
    """Names every assignment of which binds a set, and ``f()`` for each
    function of the snippet every ``return`` of which gives a set."""
    functions = set()
    for _ in range(3):  # a function returning another's set, and so on
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            returns = [
                n.value
                for n in ast.walk(node)
                if isinstance(n, ast.Return) and n.value is not None
            ]
            local = _assigned_sets(node, functions)
            if returns and all(_is_set(r, local | functions) for r in returns):
                functions.add(f"{node.name}()")
    return _assigned_sets(tree, functions) | functions


def _assigned_sets(tree, functions) -> set[str]:
    sets, others = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name):
                (sets if _is_set(value, functions) else others).add(target.id)
    return sets - others


def _is_set(node, names) -> bool:
    """A display, comprehension, ``set()`` or ``frozenset()`` call, set
    operation, a name only ever bound to one, or a call of a snippet's
    function whose every ``return`` gives one."""
    match node:
        case ast.Set() | ast.SetComp():
            return True
        case ast.Name(id=name):
            return name in names
        case ast.Call(func=ast.Name(id=name)):
            return name in _SET_CALLS or f"{name}()" in names
        case ast.Call(func=ast.Attribute(attr=method, value=value)):
            return method in _SET_METHODS and _is_set(value, names)
        case ast.BinOp(
            op=ast.BitOr() | ast.BitAnd() | ast.Sub() | ast.BitXor()
        ):
            return _is_set(node.left, names) or _is_set(node.right, names)
    return False


def _unordered_set(node, names):
    """The first set in ``node`` whose order can reach the output."""
    if _is_set(node, names):
        return node
    if isinstance(node, ast.Compare) or _called(node) in ORDER_FREE:
        return None  # `x in s`: a bool; `sorted(s)`: no order
    for child in ast.iter_child_nodes(node):
        found = _unordered_set(child, names)
        if found is not None:
            return found
    return None
