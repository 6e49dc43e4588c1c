"""Milestone 1 — the module skeleton and its parameter count."""

# --8<-- [start:show]
import torch

from mha_ref import MultiHeadAttention

torch.manual_seed(45)
d_model, h = 32, 4
m = MultiHeadAttention(d_model, h)
n = sum(p.numel() for p in m.parameters())
print(f"{n:,} == 4*{d_model}^2 = {4 * d_model**2:,}")
try:
    MultiHeadAttention(d_model, 5)  # 5 heads cannot split d_model evenly
except ValueError as err:
    print("ValueError:", err)
# --8<-- [end:show]

from mha_ref import count_parameters, publish_table  # noqa: E402
from mha_ref.tables import publish_value  # noqa: E402

# The table's row for (d_model, h) is the count printed above.
counts = {(d_model, h): n}
for size in [(8, 2), (512, 8)]:
    counts[size] = count_parameters(MultiHeadAttention(*size))
columns = ["d_model", "h", "expected params", "actual params"]
rows = [
    [d, k, f"{4 * d**2:,}", f"{c:,}"] for (d, k), c in sorted(counts.items())
]
publish_table("params", columns, rows)

# The numbers the slide's prose restates.
publish_value("d_model", d_model)
publish_value("h", h)
publish_value("d_k", m.d_k)
publish_value("params", f"{n:,}")
# The instructor's question: the same four layers with bias=True.
linear = torch.nn.Linear(d_model, d_model)
publish_value(
    "with_bias", f"{4 * sum(p.numel() for p in linear.parameters()):,}"
)
