"""Variants of the parameter-count check: for each (d_model, h), the
module's count and the three tempting miscounts, each measured on the
module's own weights.
"""

# --8<-- [start:show]
import torch

from mha_ref import MultiHeadAttention, count_parameters, shape_str

torch.manual_seed(37)
rows = []
for d_model, h in [(512, 16), (256, 8), (384, 12), (640, 10), (96, 6)]:
    mha = MultiHeadAttention(d_model, h)  # d_k = d_model // h
    total = count_parameters(mha)  # all four projections
    # Head 0's slice of W^Q: the lesson's (d_model, d_k), x @ W orientation
    # (nn.Linear stores the transpose, (out, in)).
    head = mha.W_Q.weight[: mha.d_k].T  # (d_model, d_k)
    rows.append(
        [
            d_model,
            h,
            shape_str(head.shape),
            f"{total:,}",
            f"{mha.W_O.weight.numel():,}",  # one matrix of the four
            f"{4 * head.numel():,}",  # one head's slice per projection
            f"{h * total:,}",  # a full-size layer per head
        ]
    )
# --8<-- [end:show]
from mha_ref import publish_table  # noqa: E402

columns = [
    "d_model",
    "h",
    "head_slice",
    "total",
    "w_o",
    "four_slices",
    "h_copies",
]
publish_table("counts", columns, rows)
