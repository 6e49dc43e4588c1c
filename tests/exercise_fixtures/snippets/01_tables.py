"""Fixture snippet: the tables the fill-in and buckets pages draw on.

Computed, not typed: parameter counts of mha_ref.MultiHeadAttention for
five head counts (the buckets page), the same for four sizes, and the
shapes a forward pass returns for three sizes (the fill-in page's
variants).
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

sizes = []
for d_model, h in [(512, 8), (96, 6), (60, 5), (1024, 16)]:
    m = MultiHeadAttention(d_model, h)
    sizes.append([d_model, h, f"{count_parameters(m):,}"])
publish_table("params", ["d_model", "h", "params"], sizes)

shapes = []
for B, T, d_model, h in [(2, 5, 12, 3), (3, 7, 8, 4), (4, 6, 15, 5)]:
    mha = MultiHeadAttention(d_model, h)
    x = torch.randn(B, T, d_model)  # (B, T, d_model)
    output, attn_w = mha(x, x, x)
    shapes.append([B, T, d_model, h, tuple(output.shape), tuple(attn_w.shape)])
publish_table("shapes", ["B", "T", "d_model", "h", "out", "attn_w"], shapes)
