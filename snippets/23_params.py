"""Slide 23: the parameter count of MultiHeadAttention(512, h) for five h.

Prints h, d_k and the count for h = 1, 2, 4, 8, 16 and publishes the
h / d_k / params table and the count itself (for the prose).
"""

# --8<-- [start:show]
import torch

from mha_ref import MultiHeadAttention

torch.manual_seed(0)
d = 512
for h in [1, 2, 4, 8, 16]:
    m = MultiHeadAttention(d, h)
    p = sum(x.numel() for x in m.parameters())
    print(f"h={h:2d}  d_k={m.d_k:3d}  params={p:,}")
# --8<-- [end:show]

from mha_ref import count_parameters, publish_table  # noqa: E402
from mha_ref.tables import publish_value  # noqa: E402

rows = []
for h in [1, 2, 4, 8, 16]:
    m = MultiHeadAttention(d, h)
    rows.append([h, m.d_k, f"{count_parameters(m):,}"])
publish_table("by_heads", ["h", "d_k", "params (d=512)"], rows)
# The figure the slide's prose restates ({{ value("23_params.total") }}).
publish_value("total", f"{count_parameters(MultiHeadAttention(d, 8)):,}")
