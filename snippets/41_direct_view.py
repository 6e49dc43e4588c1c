"""The reshape questions: what each merge gives back, and what the wrong
splits (the direct view, transpose-first) hand each head, run on the same
module as the right split; then transpose-first with .view at the
trace's sizes (T == d_k), where .view does not raise and the heads are
scrambled silently (mha_ref.traps.split_heads_transpose_first).

The questions are slides/41-check-yourself-reshape-order.html#ex-merge-heads
and slides/40-rule-out-three-check-yourself-reshape-order.html#ex-split-heads.
"""

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
# The heads as attention hands them back: laid out (B, h, T, d_k).
context = split_heads(x, h).contiguous()  # (1, 2, 4, 2)
merged = context.transpose(1, 2).contiguous().view(B, T, d_model)
print("transpose, contiguous, view == x:", torch.equal(merged, x))
print(
    "view without transpose     == x:",
    torch.equal(context.view(B, T, d_model), x),
)  # (1, 4, 4), scrambled
try:
    context.transpose(1, 2).view(B, T, d_model)  # (B, T, h, d_k) strides
except RuntimeError as err:
    print("transpose, then .view      :", str(err).split(" (")[0])

for name, split in [
    ("split  ", split_heads),
    ("direct ", split_heads_direct_view),
    ("t-first", split_heads_transpose_first),
]:
    print(f"{name} head 0:", split(x, h)[0, 0].int().tolist())  # (T, d_k)
try:  # transpose-first exactly as written, with .view
    x.transpose(1, 2).view(B, h, T, d_model // h)  # (B, h, T, d_k)?
except RuntimeError as err:
    print("t-first .view  :", str(err).split(" (")[0])

mha = MultiHeadAttention(d_model, h)
q = torch.randn(B, T, d_model)  # (1, 4, 4)
out, _ = mha(q, q, q)  # the module's own split
for name, split in [
    ("direct ", split_heads_direct_view),
    ("t-first", split_heads_transpose_first),
]:
    bad, _ = attend_with_split(mha, q, split)  # (1, 4, 4)
    diff = (out - bad).abs().max().item()
    same = torch.allclose(out, bad)
    print(
        f"{name}: {shape_str(bad.shape)} max|diff|={diff:.4f} allclose={same}"
    )

# At the trace's sizes, d_model = 8, h = 2, T = 4, so T == d_k: .view runs.
x8 = torch.randn(1, 4, 8)  # (B, T, d_model)
viewed = x8.transpose(1, 2).view(1, 2, 4, 4)  # (B, h, T, d_k): no error
right = torch.equal(viewed, split_heads(x8, 2))
print("T = d_k: .view runs:", shape_str(viewed.shape), "right split:", right)
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
