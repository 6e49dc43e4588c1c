"""Bench: mha_ref agrees with torch.nn.MultiheadAttention."""

import torch

from mha_ref import MultiHeadAttention, to_torch_mha

torch.manual_seed(8)
ours = MultiHeadAttention(8, 2)
theirs = to_torch_mha(ours)
x = torch.randn(2, 5, 8)
a, _ = ours(x, x, x)
b, _ = theirs(x, x, x, need_weights=False)
print("max |difference|:", f"{(a - b).abs().max().item():.1e}")
print("allclose:", torch.allclose(a, b, atol=1e-5, rtol=1.3e-6))
