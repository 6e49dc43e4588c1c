"""Bench: a causal mask lets query i see keys 0..i."""

import torch

from mha_ref import causal_mask, scaled_dot_product_attention

torch.manual_seed(6)
T = 4
mask = causal_mask(T, T)
print(mask.int())
q = k = v = torch.randn(1, 1, T, 8)
_, w = scaled_dot_product_attention(q, k, v, mask=mask)
print("weights above the diagonal:", w[0, 0].triu(1).abs().sum().item())
