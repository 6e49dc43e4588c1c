"""Variants of the milestone-2 fill-in: the forward pass run on sizes
the slide does not print, and the shapes it returned.
"""

# --8<-- [start:show]
import torch

from mha_ref import MultiHeadAttention, shape_str

torch.manual_seed(47)
rows = []
for B, T, d_model, h in [
    (2, 7, 12, 3),
    (3, 6, 20, 5),
    (1, 9, 24, 6),
    (5, 3, 28, 7),
    (3, 11, 18, 9),
]:
    model = MultiHeadAttention(d_model, h)
    x = torch.randn(B, T, d_model)  # (B, T, d_model)
    out, attn_w = model(x, x, x)
    shapes = [shape_str(t.shape) for t in (out, attn_w)]
    rows.append([B, T, d_model, h, *shapes])
# It prints nothing: `rows` holds every variant's answers, the ones
# "Try another" draws from (print(*rows, sep="\n") shows them).
# --8<-- [end:show]
from mha_ref import publish_table  # noqa: E402

publish_table("forward", ["B", "T", "d_model", "h", "out", "attn_w"], rows)
