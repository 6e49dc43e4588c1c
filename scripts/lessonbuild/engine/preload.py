"""What the fork servers import before forking: what the snippets need.

A child inherits its server's imports for free and imports the rest
itself, each run; importing what no snippet uses delays the first fork
(torch._dynamo ~0.5 s, sympy ~0.2 s, matplotlib.pyplot ~0.3 s). So the
plan is read from the snippets' syntax trees, never by running them:
torch (unless every snippet uses only the standard library and imports
nothing at run time, ``DYNAMIC``), the modules of ``PACKAGES`` a snippet
imports, and those torch imports lazily behind a name it uses
(``LAZY``). A plan that misses a module costs time, never correctness.
"""

from __future__ import annotations

import ast
import functools
import sys

#: Packages that import without side effects (no output, no files), so
#: the server may import them ahead of a snippet. Installed ones only:
#: the lesson's own code runs in a run's sandbox, never in the server.
PACKAGES = ("torch", "matplotlib")
#: Names that import a module the syntax tree does not name.
DYNAMIC = {"__import__", "import_module", "exec", "eval", "run_module"}
DYNAMIC |= {"run_path", "compile", "execfile", "load_module"}
_SHAPES = "torch.fx.experimental.symbolic_shapes"
_DTENSOR = "torch.distributed.tensor"
_DYNAMO = "torch._dynamo"
_TRAINING = (_SHAPES, _DYNAMO, _DTENSOR)
#: A name a snippet uses -> the modules torch imports lazily behind it,
#: measured by running each lesson snippet in a fork and listing what it
#: imported beyond torch and mha_ref.
LAZY = {
    # nn.MultiheadAttention's forward (mha_ref's converters build one).
    "MultiheadAttention": (_SHAPES, _DTENSOR),
    "to_torch_mha": (_SHAPES, _DTENSOR),
    "from_torch_mha": (_SHAPES, _DTENSOR),
    "broadcast_shapes": (_SHAPES,),
    # FlopCounterMode dispatches through torch/_compile.py; an
    # optimiser's step (mha_ref.specialise trains a model).
    "FlopCounterMode": _TRAINING,
    "forward_flops": _TRAINING,
    "optim": _TRAINING,
    "mha_ref.specialise": _TRAINING,
}


def preload_plan(sources: list[str]) -> list[str]:
    """The modules to import in the servers for snippets of these texts:
    torch first, then sorted; none for the standard library alone (a
    snippet that does not parse wants torch: its run reports the error)."""
    wanted = set().union(*map(_wanted, sources))
    if not wanted:
        return []
    return ["torch", *sorted(wanted - {"torch"})]


@functools.lru_cache(maxsize=1024)
def _wanted(source: str) -> frozenset[str]:
    """One snippet's part of the plan, kept per text: ``make serve``
    plans every snippet on each rebuild (parsing was 7% of an edit)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return frozenset({"torch"})
    names: set[str] = set()
    modules: set[str] = set()
    relative = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            relative = relative or node.level > 0
            if node.level == 0 and node.module:
                modules.add(node.module)
                names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
    wanted = {m for m in modules if m.split(".")[0] in PACKAGES}
    for key in names | modules:
        wanted.update(LAZY.get(key, ()))
    outside = {m.split(".")[0] for m in modules} - sys.stdlib_module_names
    if outside or relative or names & DYNAMIC:
        wanted.add("torch")
    return frozenset(wanted)
