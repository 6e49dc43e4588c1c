"""Fixture snippet: the tables the fill-in and buckets pages draw on.

Computed, not typed: parameter counts of mha_ref.MultiHeadAttention for
five head counts (as the lesson's slide 23), and the shapes a forward
pass returns for d_model=8, h=2, B=2, T=5 (as slide 47).
"""

import torch

from mha_ref import MultiHeadAttention, count_parameters, publish_table

torch.manual_seed(0)

# --8<-- [start:show]
d = 512
rows = []
for h in [1, 2, 4, 8, 16]:
    m = MultiHeadAttention(d, h)
    rows.append([h, m.d_k, f"{count_parameters(m):,}"])
# --8<-- [end:show]
publish_table("by_heads", ["h", "d_k", "params (d=512)"], rows)

mha = MultiHeadAttention(8, 2)
x = torch.randn(2, 5, 8)
output, attn_w = mha(x, x, x)
publish_table(
    "shapes",
    ["tensor", "shape"],
    [["output", tuple(output.shape)], ["attn_w", tuple(attn_w.shape)]],
)
