"""When the count is not 4 * d_model**2 — GQA and MQA.

Grouped-query attention keeps h query heads but only g key/value heads
(multi-query attention: g = 1), so W_K and W_V shrink to d_model x g*d_k.
Builds the four projections with nn.Linear and counts them.
"""

# --8<-- [start:show]
import torch.nn as nn

d_model, h = 512, 8
d_k = d_model // h  # 64
for name, g in [("MHA", 8), ("GQA", 2), ("MQA", 1)]:  # g key/value heads
    layers = [
        nn.Linear(d_model, d_model, bias=False),  # W_Q: h heads
        nn.Linear(d_model, g * d_k, bias=False),  # W_K: g heads
        nn.Linear(d_model, g * d_k, bias=False),  # W_V: g heads
        nn.Linear(d_model, d_model, bias=False),  # W_O
    ]
    n = sum(p.numel() for layer in layers for p in layer.parameters())
    print(f"{name} g={g}: {n:>9,} = {n / d_model**2:.3f} * d_model^2")
# --8<-- [end:show]
