"""Bench: MultiHeadAttention keeps (B, T, d_model) and returns weights."""

import torch

from mha_ref import MultiHeadAttention, publish_table, shape_str

torch.manual_seed(4)
mha = MultiHeadAttention(16, 4)
x = torch.randn(2, 7, 16)
out, w = mha(x, x, x)
print("out :", shape_str(out.shape))
print("w   :", shape_str(w.shape))
publish_table(
    "shapes",
    ["tensor", "shape"],
    [["x", shape_str(x.shape)], ["out", shape_str(out.shape)]],
)
