"""Variants of the parameter-count exercises (the rule-out-three in
slides/36-rule-out-three-check-yourself-parameter.html and the check in
slides/37-check-yourself-parameter-count.html): for each (d_model, h), the
module's count and the three miscounts, each measured on the module's own
weights. The two exercises draw from different layers, one table each.
No h is 1 or 4: there two options coincide (4 d_model^2 / 4 is
d_model^2; 4 d_model^2 * 1 is 4 d_model^2).
"""

# --8<-- [start:show]
import torch

from mha_ref import MultiHeadAttention, count_parameters, shape_str

torch.manual_seed(36)
LAYERS = {  # the (d_model, h) each exercise's table draws from
    "counts": [(128, 8), (192, 3), (320, 5), (448, 7), (768, 12)],
    "check_counts": [(512, 16), (256, 8), (384, 12), (640, 10), (96, 6)],
}
rows = {table: [] for table in LAYERS}
for table, layers in LAYERS.items():
    for d_model, h in layers:
        mha = MultiHeadAttention(d_model, h)  # d_k = d_model // h
        total = count_parameters(mha)  # all four projections
        # The lesson's x @ W orientation (nn.Linear stores the transpose).
        full = mha.W_Q.weight.T  # (d_model, d_model)
        head = mha.W_Q.weight[: mha.d_k].T  # (d_model, d_k): head 0's slice
        rows[table].append(
            [
                d_model,
                h,
                shape_str(full.shape),
                shape_str(head.shape),
                f"{total:,}",
                f"{mha.W_O.weight.numel():,}",  # one matrix of the four
                f"{4 * head.numel():,}",  # one head's slice per projection
                f"{h * total:,}",  # a full-size layer per head
            ]
        )
# It prints nothing: `rows` holds every variant's answers, the ones
# "Try another" draws from (print(*rows, sep="\n") shows them).
# --8<-- [end:show]
from mha_ref import publish_table  # noqa: E402

columns = [
    "d_model",
    "h",
    "full",
    "head_slice",
    "total",
    "w_o",
    "four_slices",
    "h_copies",
]
for table, table_rows in rows.items():
    publish_table(table, columns, table_rows)
