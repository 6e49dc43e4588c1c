"""Slide 51: the full module at a toy size and at the paper's base size."""

import torch

from mha_ref import (
    MultiHeadAttention,
    count_parameters,
    publish_table,
    shape_str,
)

# --8<-- [start:show]
torch.manual_seed(0)
for d, h in [(8, 2), (512, 8)]:
    m = MultiHeadAttention(d, h)
    p = count_parameters(m)
    x = torch.randn(2, 6, d)  # (B, T, d_model)
    out, aw = m(x, x, x)
    print(
        f"d={d:3d} h={h} params={p:,} "
        f"out={shape_str(out.shape)} aw={shape_str(aw.shape)}"
    )
# --8<-- [end:show]

rows = []
for d, h in [(8, 2), (512, 8)]:
    m = MultiHeadAttention(d, h)
    x = torch.randn(2, 6, d)  # (B, T, d_model)
    out, aw = m(x, x, x)
    rows.append(
        [
            d,
            h,
            f"{count_parameters(m):,}",
            shape_str(out.shape),
            shape_str(aw.shape),
        ]
    )
columns = ["d_model", "h", "params", "output shape", "attn shape"]
publish_table("runs", columns, rows)
