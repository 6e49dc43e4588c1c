"""Bench: split_heads gives every head its own (T, d_k) slice."""

import torch

from mha_ref import shape_str, split_heads

torch.manual_seed(2)
B, T, D, H = 2, 6, 12, 3
x = torch.randn(B, T, D)
heads = split_heads(x, H)  # (B, h, T, d_k)
print("x     :", shape_str(x.shape))
print("heads :", shape_str(heads.shape))
print("head 1 is columns 4..7:", torch.equal(heads[:, 1], x[..., 4:8]))
