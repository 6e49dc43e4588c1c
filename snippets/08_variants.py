"""Variants of the weight-shapes fill-in, read off real modules.

Each layer is built and its weights measured, for sizes the lesson never
prints; the fill-in draws one row at a time and grades against these.
"""

# --8<-- [start:show]
import torch

from mha_ref import MultiHeadAttention, shape_str

torch.manual_seed(8)
rows = []
for d_model, h in [(96, 4), (120, 5), (192, 12), (300, 6), (448, 7)]:
    mha = MultiHeadAttention(d_model, h)
    # nn.Linear stores (out, in); the formulas use x @ W, so W = weight.T
    W_Q = mha.W_Q.weight.T  # (d_model, d_model)
    W_Q_0 = W_Q[:, 0 : mha.d_k]  # head 0's columns: (d_model, d_k)
    W_O = mha.W_O.weight.T  # (d_model, d_model)
    shapes = [shape_str(w.shape) for w in (W_Q, W_Q_0, W_O)]
    rows.append([d_model, h, mha.d_k, *shapes])
# It prints nothing: `rows` holds every variant's answers, the ones
# "Try another" draws from (print(*rows, sep="\n") shows them).
# --8<-- [end:show]
from mha_ref import publish_table  # noqa: E402

publish_table("roles", ["d_model", "h", "d_k", "W_Q", "W_Q_i", "W_O"], rows)
