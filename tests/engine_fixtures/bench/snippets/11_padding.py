"""Bench: a padding mask hides the pad tokens of shorter sequences."""

import torch

from mha_ref import MultiHeadAttention, padding_mask

torch.manual_seed(9)
mha = MultiHeadAttention(8, 2)
x = torch.randn(2, 4, 8)
mask = padding_mask([4, 2], 4)  # (B, 1, 1, T_k)
_, w = mha(x, x, x, mask=mask)
print("weight on padding, sequence 2:", w[1, :, :, 2:].sum().item())
print("mask:", mask[:, 0, 0].int().tolist())
