"""What is_causal means when T_q != T_k, and who accepts it
(slides/53-show-it-off.html).

Causal masks are top-left aligned: query i sees keys 0..i, whatever
T_k is. mha_ref combines a mask with is_causal=True (both must allow a
key); F.scaled_dot_product_attention documents an error for that pair,
so its caller combines the masks (mask & causal) and passes one: given
both anyway, torch 2.13.0's default CPU path runs and its math backend
raises, so whether the pair fails depends on the backend.
nn.MultiheadAttention treats is_causal as a hint and needs attn_mask.
"""

# --8<-- [start:show]
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from mha_ref import causal_mask, scaled_dot_product_attention

torch.manual_seed(53)
T_q, T_k, d_k = 3, 5, 4
q = torch.randn(1, 1, T_q, d_k)  # (B, h, T_q, d_k)
k, v = torch.randn(2, 1, 1, T_k, d_k)  # (B, h, T_k, d_k) each
top_left = torch.ones(T_q, T_k, dtype=torch.bool).tril()  # j <= i
bottom_right = torch.ones(T_q, T_k, dtype=torch.bool).tril(T_k - T_q)
# (bottom-right: the last query sees every key, j <= i + T_k - T_q)
print("top-left (query i sees keys 0..i):")
print(top_left.int())

fused = F.scaled_dot_product_attention(q, k, v, is_causal=True)
for name, mask in [("top-left", top_left), ("bottom-right", bottom_right)]:
    masked = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    print(f"is_causal=True = {name:12}:", torch.allclose(fused, masked))
ours, _ = scaled_dot_product_attention(q, k, v, is_causal=True)
print("mha_ref is_causal = top-left :", torch.allclose(ours, fused))

# A padding mask and causality together: both must allow a key. F.sdpa
# documents an error for attn_mask with is_causal=True: combine them.
real = torch.tensor([[True, True, True, True, False]])  # key 4: padding
theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=top_left & real)
ours, _ = scaled_dot_product_attention(q, k, v, mask=real, is_causal=True)
print("mha_ref mask + is_causal     :", torch.allclose(ours, theirs))
both = {"attn_mask": real, "is_causal": True}  # passed anyway
F.scaled_dot_product_attention(q, k, v, **both)  # CPU default path: runs
print("F.sdpa both, default path    : runs")
try:
    with sdpa_kernel(SDPBackend.MATH):  # the backend dropout_p > 0 takes
        F.scaled_dot_product_attention(q, k, v, **both)
except RuntimeError as err:
    print("F.sdpa both, math backend    :", str(err).split(": ")[-1])

mha = nn.MultiheadAttention(8, 2, batch_first=True)
x = torch.randn(1, 4, 8)  # (B, T, d_model)
try:
    mha(x, x, x, is_causal=True)  # a hint only: no mask given
except RuntimeError as err:
    print("nn.MultiheadAttention:", str(err).split(". ")[0])
# --8<-- [end:show]
assert torch.equal(causal_mask(T_q, T_k), top_left)
