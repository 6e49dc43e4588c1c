"""The core of every head — scores, the sqrt(d_k) scale, softmax.

Writes the three steps out on split heads, checks them against mha_ref's
scaled_dot_product_attention and torch's fused one, then shows the
common slip of dividing by sqrt(d_model): same shapes, other values.
"""

# --8<-- [start:show]
import torch
import torch.nn.functional as F

from mha_ref import scaled_dot_product_attention

torch.manual_seed(47)
B, h, T, d_k = 2, 2, 5, 4  # d_model = h * d_k = 8
q, k, v = (torch.randn(B, h, T, d_k) for _ in range(3))  # split heads

scores = q @ k.transpose(-2, -1)  # (B, h, T_q, T_k): one dot per pair
scores = scores / d_k**0.5  # keeps the scores' spread near 1
weights = torch.softmax(scores, dim=-1)  # each row: a distribution
context = weights @ v  # (B, h, T_q, d_k)
print("scores, weights:", tuple(scores.shape), tuple(weights.shape))
print("context        :", tuple(context.shape))

ours, _ = scaled_dot_product_attention(q, k, v)  # mha_ref's function
fused = F.scaled_dot_product_attention(q, k, v)  # torch's fused kernel
print("= mha_ref      :", torch.allclose(context, ours))
print("= torch fused  :", torch.allclose(context, fused, atol=1e-6))

# The slip: dividing by sqrt(d_model) instead of sqrt(d_k)
d_model = h * d_k
slip = torch.softmax(q @ k.transpose(-2, -1) / d_model**0.5, dim=-1)
same = torch.allclose(slip, weights)
print("sqrt(d_model)  :", tuple(slip.shape), "allclose:", same)
print(f"max |diff|     : {(slip - weights).abs().max():.4f}")
# --8<-- [end:show]
