"""Fixture: a snippet that only publishes a table."""

# --8<-- [start:show]
import torch.nn as nn

from mha_ref.tables import publish_table

rows = []
for h in (1, 2, 4):
    proj = [nn.Linear(8, 8, bias=False) for _ in range(4)]
    n = sum(p.weight.numel() for p in proj)
    rows.append([h, 8 // h, f"{n:,}"])
publish_table("by_heads", ["h", "d_k", "params"], rows)
# --8<-- [end:show]
