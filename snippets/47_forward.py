"""Milestone 2 — the forward pass and its shapes."""

# --8<-- [start:show]
import torch

from mha_ref import MultiHeadAttention, shape_str

torch.manual_seed(99)
B, T, d_model, h = 2, 5, 8, 2
model = MultiHeadAttention(d_model, h)
q, k, v = (torch.randn(B, T, d_model) for _ in range(3))  # (2, 5, 8) each
out, attn_w = model(q, k, v)
print("output:", shape_str(out.shape), "  attn_w:", shape_str(attn_w.shape))
row_sums = attn_w.sum(dim=-1)  # (2, 2, 5)
print("rows sum to 1:", torch.allclose(row_sums, torch.ones_like(row_sums)))
# --8<-- [end:show]

from mha_ref import count_parameters, publish_table  # noqa: E402
from mha_ref.tables import publish_value  # noqa: E402

params = count_parameters(model)
rows = [
    ["output", shape_str((B, T, d_model)), shape_str(out.shape)],
    ["attn_w", shape_str((B, h, T, T)), shape_str(attn_w.shape)],
    ["params", f"4·{d_model}²={4 * d_model**2:,}", f"{params:,}"],
]
publish_table("shapes", ["tensor", "expected shape", "actual shape"], rows)
publish_value("output", shape_str(out.shape))
publish_value("weights", shape_str(attn_w.shape))
