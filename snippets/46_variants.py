"""Variants of the milestone-1 fill-in: your module's count, and the
count of the same projections built from h per-head nn.Linear layers.
"""

# --8<-- [start:show]
import torch
from torch import nn

from mha_ref import MultiHeadAttention, count_parameters

torch.manual_seed(46)


def per_head(d_model: int, h: int, bias: bool) -> int:
    """Q, K, V as h separate nn.Linear(d_model, d_k) each, plus W_O."""
    d_k = d_model // h
    heads = [
        nn.Linear(d_model, d_k, bias=bias) for _ in range(3 * h)
    ]  # h for each of Q, K, V
    layers = nn.ModuleList([*heads, nn.Linear(d_model, d_model, bias=bias)])
    return sum(p.numel() for p in layers.parameters())


rows = []
for d_model, h in [(48, 6), (80, 5), (144, 9), (200, 8), (352, 11)]:
    ours = count_parameters(MultiHeadAttention(d_model, h))
    rows.append(
        [
            d_model,
            h,
            f"{ours:,}",
            f"{per_head(d_model, h, bias=False):,}",
            f"{per_head(d_model, h, bias=True):,}",
        ]
    )
# It prints nothing: `rows` holds every variant's answers, the ones
# "Try another" draws from (print(*rows, sep="\n") shows them).
# --8<-- [end:show]
from mha_ref import publish_table  # noqa: E402

columns = ["d_model", "h", "ours", "per-head", "per-head with biases"]
publish_table("params", columns, rows)
