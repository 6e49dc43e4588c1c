"""Slide 41: what options C and D of the reshape question hand each head."""

# --8<-- [start:show]
import torch

from mha_ref import (
    MultiHeadAttention,
    attend_with_split,
    shape_str,
    split_heads,
    split_heads_direct_view,
    split_heads_transpose_first,
)

torch.manual_seed(41)
B, T, h, d_model = 1, 4, 2, 4  # d_k = 2, and h divides T
# Feature values name their origin: value = 4 * position + feature.
x = torch.arange(16.0).view(B, T, d_model)  # (1, 4, 4)
print("A head 0:", split_heads(x, h)[0, 0].int().tolist())
print("C head 0:", split_heads_direct_view(x, h)[0, 0].int().tolist())
print("D head 0:", split_heads_transpose_first(x, h)[0, 0].int().tolist())
try:  # option D exactly as written, with .view
    x.transpose(1, 2).view(B, h, T, d_model // h)  # (B, h, T, d_k)?
except RuntimeError as err:
    print("D .view :", str(err).split(" (")[0])

mha = MultiHeadAttention(d_model, h)
q = torch.randn(B, T, d_model)  # (1, 4, 4)
out, _ = mha(q, q, q)  # option A, the module's own split
for name, split in [
    ("C", split_heads_direct_view),
    ("D", split_heads_transpose_first),
]:
    bad, _ = attend_with_split(mha, q, split)  # (1, 4, 4)
    diff = (out - bad).abs().max().item()
    same = torch.allclose(out, bad)
    print(
        f"{name}: {shape_str(bad.shape)} max|diff|={diff:.4f} allclose={same}"
    )
# --8<-- [end:show]

from mha_ref import direct_view_origins, publish_table  # noqa: E402

d_k = d_model // h
direct = split_heads_direct_view(x, h)  # (1, h, T, d_k)
rows = []
for i, head in enumerate(direct_view_origins(T, h, d_model)):
    for j, (pos, start, stop) in enumerate(head):
        first = int(direct[0, i, j, 0])  # value = d_model * pos + feature
        assert (first // d_model, first % d_model) == (pos, start)
        values = direct[0, i, j].int().tolist()
        rows.append([i, j, pos, f"{start}–{stop - 1}", values])
columns = [
    "head i",
    "row j (poses as position j)",
    "really position",
    "features",
    "values",
]
publish_table("origins", columns, rows)
