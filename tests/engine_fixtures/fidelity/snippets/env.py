"""Fixture: what a snippet sees of its process.

The runner test compares this output under the engine with a standalone
``python snippets/env.py`` from the fixture's root.
"""

import os
import sys
from pathlib import Path

import torch

import mha_ref

root = Path.cwd()
print("__name__  :", __name__)
print("__spec__  :", __spec__)
print("__file__  :", Path(__file__).relative_to(root))
print("absolute  :", Path(__file__).is_absolute())
print(
    "argv      :", [str(Path(a).resolve().relative_to(root)) for a in sys.argv]
)
print("path[0]   :", Path(sys.path[0]).relative_to(root))
print("cwd       :", sorted(p.name for p in root.iterdir() if p.is_dir()))
print("stdin     :", repr(sys.stdin.read()))
print("encoding  :", sys.stdout.encoding)
print("threads   :", torch.get_num_threads())
print("mha_ref   :", Path(mha_ref.__path__[0]).name)
print("tables env:", "MHA_REF_TABLES_FILE" in os.environ)
x = torch.ones(256, 256)
print("matmul    :", (x @ x)[0, 0].item())  # runs on the intra-op pool
