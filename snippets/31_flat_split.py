"""The flat split view(B, T*h, d_k) silently gives wrong output."""

# --8<-- [start:show]
import torch

from mha_ref import (
    MultiHeadAttention,
    attend_flat,
    shape_str,
    split_heads,
    split_heads_flat,
)

torch.manual_seed(31)
B, T, h, d_model = 1, 3, 2, 4  # d_k = 2
# Feature values name their origin: value = 4 * position + feature.
x = torch.arange(12.0).view(B, T, d_model)  # (1, 3, 4)

wrong = split_heads_flat(x, h)  # (1, 6, 2) = (B, T*h, d_k)
right = split_heads(x, h)  # (1, 2, 3, 2) = (B, h, T, d_k)
print("flat view  :", wrong[0].int().tolist())
print("head 0 rows:", right[0, 0].int().tolist())
print("head 1 rows:", right[0, 1].int().tolist())

# Same module, same input: the flat split versus the right one.
mha = MultiHeadAttention(d_model, h)
q = torch.randn(B, T, d_model)  # (1, 3, 4)
out, w = mha(q, q, q)  # (1, 3, 4), weights (1, 2, 3, 3)
bad, w_bad = attend_flat(mha, q)  # (1, 3, 4), weights (1, 6, 6)
print("weights    :", shape_str(w.shape), shape_str(w_bad.shape))
print("outputs    :", shape_str(out.shape), shape_str(bad.shape))
print(f"max |diff| : {(out - bad).abs().max().item():.4f}")
print("allclose   :", torch.allclose(out, bad))
# --8<-- [end:show]

from mha_ref import flat_row_origins, publish_table  # noqa: E402

d_k = d_model // h
rows = []
for r, origin in enumerate(flat_row_origins(T, h)):
    first = int(wrong[0, r, 0])  # value = d_model * position + feature
    from_data = (first // d_model, first % d_model // d_k)
    assert from_data == tuple(origin), (r, from_data, origin)
    rows.append([r, *from_data, wrong[0, r].int().tolist()])
columns = ["flat row r", "position r // h", "head r % h", "features"]
publish_table("rows", columns, rows)
