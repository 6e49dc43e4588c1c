"""Bench: the parameter count does not depend on the number of heads."""

import torch

from mha_ref import MultiHeadAttention, count_parameters, publish_table

torch.manual_seed(5)
rows = []
for h in (1, 2, 4, 8):
    n = count_parameters(MultiHeadAttention(64, h))
    rows.append([h, 64 // h, f"{n:,}"])
    print(f"h={h}: {n:,} parameters")
print("4 * 64^2 =", f"{4 * 64**2:,}")
publish_table("by_heads", ["h", "d_k", "params"], rows)
