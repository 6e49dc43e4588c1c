"""Milestone 1 — the module skeleton and its parameter count."""

# --8<-- [start:show]
import torch

from mha_ref import MultiHeadAttention

torch.manual_seed(45)
m = MultiHeadAttention(32, 4)
n = sum(p.numel() for p in m.parameters())
print(f"{n:,} == 4*32^2 = {4 * 32**2:,}")
try:
    MultiHeadAttention(32, 5)  # 5 heads of width 6.4?
except ValueError as err:
    print("ValueError:", err)
# --8<-- [end:show]

from mha_ref import count_parameters, publish_table  # noqa: E402

rows = []
for d_model, h in [(8, 2), (32, 4), (512, 8)]:
    actual = count_parameters(MultiHeadAttention(d_model, h))
    rows.append([d_model, h, f"{4 * d_model**2:,}", f"{actual:,}"])
columns = ["d_model", "h", "expected params", "actual params"]
publish_table("params", columns, rows)
