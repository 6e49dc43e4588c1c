"""Variants of the attention-weight-shape check: for each (B, T,
d_model, h), the shapes the module's forward pass produces.
"""

# --8<-- [start:show]
import torch

from mha_ref import MultiHeadAttention, shape_str, split_heads

torch.manual_seed(39)
rows = []
for B, T, d_model, h in [
    (4, 12, 64, 8),
    (2, 6, 48, 4),
    (3, 5, 40, 4),
    (8, 9, 96, 6),
    (2, 7, 72, 3),
]:
    mha = MultiHeadAttention(d_model, h)
    x = torch.randn(B, T, d_model)  # (B, T, d_model)
    out, weights = mha(x, x, x)  # (B, T, d_model), (B, h, T, T)
    q = split_heads(mha.W_Q(x), h)  # (B, h, T, d_k)
    averaged = weights.mean(dim=1)  # (B, T, T): the heads averaged
    shapes = [shape_str(t.shape) for t in (averaged, q, out, weights)]
    rows.append([B, T, d_model, h, mha.d_k, *shapes])
# It prints nothing: `rows` holds every variant's answers, the ones
# "Try another" draws from (print(*rows, sep="\n") shows them).
# --8<-- [end:show]
from mha_ref import publish_table  # noqa: E402
from mha_ref.tables import publish_value  # noqa: E402

columns = ["B", "T", "d_model", "h", "d_k"]
columns += ["averaged", "queries", "output", "weights"]
publish_table("shapes", columns, rows)
# The first layer is the question asked with no options first
# (slides/38-answer-it-before-you-see-the-options-check.html).
case = dict(zip(columns, rows[0], strict=True))
publish_value("case", ", ".join(f"{c}={case[c]}" for c in columns[:4]))
for column in ("averaged", "queries", "weights"):
    publish_value(column, case[column])
