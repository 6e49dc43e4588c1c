"""The MHA recipe at its edges, run on the reference module."""

# --8<-- [start:show]
import torch

from mha_ref import MultiHeadAttention, shape_str

torch.manual_seed(35)
# 1. Cross-attention: 3 queries attend over 7 keys/values.
mha = MultiHeadAttention(8, 2)
q = torch.randn(1, 3, 8)  # (B, T_q, d_model)
kv = torch.randn(1, 7, 8)  # (B, T_k, d_model)
out, w = mha(q, kv, kv)
print("T_q=3, T_k=7 :", shape_str(out.shape), shape_str(w.shape))
try:  # a split that reshapes K with the query's T
    mha.W_K(kv).view(1, 3, 2, 4)  # (B, T_q, h, d_k): wrong T
except RuntimeError as err:
    print("split by T_q :", err)

# 2. h = d_model: d_k = 1, each head sees one number per token.
x = torch.randn(1, 4, 8)  # (B, T, d_model)
out, w = MultiHeadAttention(8, 8)(x, x, x)
print("h=d_model=8  :", shape_str(out.shape), shape_str(w.shape))

# 3. T = 1: one key, so every weight is exactly 1.
x1 = torch.randn(1, 1, 8)  # (B, 1, d_model)
out, w = mha(x1, x1, x1)
print("T=1 weights  :", w.flatten().tolist())
print("T=1 output   :", torch.allclose(out, mha.W_O(mha.W_V(x1))))

# 4. Every token equal: all scores tie, weights are 1/T.
same = x1.expand(1, 4, 8)  # (B, 4, d_model), identical rows
_, w = mha(same, same, same)
print("equal tokens :", w[0, 0, 0].tolist())

# 5. Empty: no tokens at all (T = 0), or no keys (T_k = 0).
empty = torch.randn(1, 0, 8)  # (B, 0, d_model)
out, w = mha(empty, empty, empty)
print("T=0          :", shape_str(out.shape), shape_str(w.shape))
out, w = mha(q, empty, empty)  # 3 queries, nothing to attend to
print(
    "T_k=0 output :", shape_str(out.shape), "all zero:", bool((out == 0).all())
)

# 6. d_model not divisible by h.
try:
    MultiHeadAttention(10, 4)
except ValueError as err:
    print("d_model=10,h=4:", err)
# --8<-- [end:show]
