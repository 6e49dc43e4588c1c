"""Milestone 3 — MHA with h=1 equals single-head attention."""

# --8<-- [start:show]
import math

import torch
import torch.nn.functional as F

from mha_ref import MultiHeadAttention

torch.manual_seed(5)
d_model = 8
mha_h1 = MultiHeadAttention(d_model, 1)
X = torch.randn(1, 4, d_model)  # (B, T, d_model)
out_mha, _ = mha_h1(X, X, X)

# Single-head attention by hand, with the same weights in x @ W form.
WQ = mha_h1.W_Q.weight.T  # (d_model, d_model)
WK = mha_h1.W_K.weight.T
WV = mha_h1.W_V.weight.T
WO = mha_h1.W_O.weight.T
Q, K, V = X @ WQ, X @ WK, X @ WV  # (1, 4, 8) each
scores = Q @ K.transpose(-2, -1) / math.sqrt(d_model)  # (1, 4, 4)
out_single = F.softmax(scores, dim=-1) @ V @ WO  # (1, 4, 8)
same = torch.allclose(out_mha, out_single, atol=1e-5)
print("allclose:", same)
# --8<-- [end:show]

from mha_ref import publish_table, shape_str  # noqa: E402

rows = [
    ["out_mha shape", shape_str(out_mha.shape)],
    ["out_single shape", shape_str(out_single.shape)],
    ["torch.allclose", same],
    [
        "conclusion",
        "h=1 MHA ≡ single-head attention" if same else "they differ",
    ],
]
publish_table("equivalence", ["check", "result"], rows)
