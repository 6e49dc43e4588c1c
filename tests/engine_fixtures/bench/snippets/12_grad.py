"""Bench: gradients reach all four projections."""

import torch

from mha_ref import MultiHeadAttention

torch.manual_seed(10)
mha = MultiHeadAttention(8, 2)
x = torch.randn(1, 4, 8)
out, _ = mha(x, x, x)
out.pow(2).mean().backward()
for name in ("W_Q", "W_K", "W_V", "W_O"):
    g = getattr(mha, name).weight.grad
    nonzero = bool(g.abs().sum() > 0)
    print(f"{name}: grad {tuple(g.shape)}, nonzero = {nonzero}")
