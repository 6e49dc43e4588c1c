"""What the fork servers import before forking: what the snippets need.

A module the server imported is inherited by every child for free; one
it did not import, a child imports itself (the same code, each time it
runs). Importing what no snippet about to run uses only delays the
first fork: torch._dynamo alone takes ~0.5 s, sympy (via
``symbolic_shapes``) ~0.2 s, matplotlib.pyplot ~0.3 s. So the plan is
read from the snippets' syntax trees (never by running them):

- torch, unless every snippet about to run imports only the standard
  library (and nothing by name at run time, ``DYNAMIC``): a test site's
  ``print("hi")`` then costs no ``import torch`` in each server;
- the modules a snippet imports, where they belong to a package known
  to import without side effects (``PACKAGES``: no output, no files);
- the modules torch imports lazily, on first use, behind a name the
  snippet uses (``LAZY``): nn.MultiheadAttention reaches
  torch.distributed.tensor and sympy, FlopCounterMode and the
  optimisers torch._dynamo.

A plan that misses a module costs time, never correctness: the child
imports it as a standalone run would.
"""

from __future__ import annotations

import ast
import functools
import sys

#: Packages whose modules may be imported in the server ahead of a
#: snippet that imports them: importing them prints nothing and writes
#: nothing the snippet could see. Installed packages only: the lesson's
#: own code (mha_ref, snippets/) runs in a run's sandbox, never in the
#: server, whose mounts a module could otherwise change.
PACKAGES = ("torch", "matplotlib")
#: Names that import a module the syntax tree does not name.
DYNAMIC = {"__import__", "import_module", "exec", "eval", "run_module"}
DYNAMIC |= {"run_path", "compile", "execfile", "load_module"}
_SHAPES = "torch.fx.experimental.symbolic_shapes"
_DTENSOR = "torch.distributed.tensor"
_DYNAMO = "torch._dynamo"
#: A name a snippet uses (a variable, an attribute or an imported name,
#: a module it imports) -> the modules torch imports lazily behind it,
#: measured by running each lesson snippet in a fork and listing what it
#: imported beyond torch and mha_ref.
LAZY = {
    # nn.MultiheadAttention's forward (mha_ref's converters build one).
    "MultiheadAttention": (_SHAPES, _DTENSOR),
    "to_torch_mha": (_SHAPES, _DTENSOR),
    "from_torch_mha": (_SHAPES, _DTENSOR),
    "broadcast_shapes": (_SHAPES,),
    # FlopCounterMode dispatches through torch/_compile.py.
    "FlopCounterMode": (_SHAPES, _DYNAMO, _DTENSOR),
    "forward_flops": (_SHAPES, _DYNAMO, _DTENSOR),
    # An optimiser's step (mha_ref.specialise trains a model).
    "optim": (_SHAPES, _DYNAMO, _DTENSOR),
    "mha_ref.specialise": (_SHAPES, _DYNAMO, _DTENSOR),
}


def preload_plan(sources: list[str]) -> list[str]:
    """The modules to import in the servers, torch first, then sorted;
    none for snippets of the standard library alone.

    ``sources``: the text of each snippet about to run. A snippet that
    does not parse contributes torch (its run reports the error).
    """
    wanted = set().union(*map(_wanted, sources))
    if not wanted:
        return []
    wanted.discard("torch")
    return ["torch", *sorted(wanted)]


@functools.lru_cache(maxsize=1024)
def _wanted(source: str) -> frozenset[str]:
    """One snippet's part of the plan. Kept per text: under ``make
    serve`` every rebuild plans for every snippet (to keep the servers
    warm), and parsing the ones an edit did not touch again was about 7%
    of a slide edit's profile."""
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
