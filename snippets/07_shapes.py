"""The symbol, shape and role of every MHA weight, read off a module.

Builds MultiHeadAttention(512, 8) and publishes the shapes of its per-head
projection slices and of W_O, in symbols and at d_model=512, h=8.
"""

# --8<-- [start:show]
import torch

from mha_ref import MultiHeadAttention, shape_str

torch.manual_seed(0)
mha = MultiHeadAttention(512, 8)  # d_model=512, h=8
d_k = mha.d_k
# nn.Linear stores (out, in); the formulas use x @ W, so W = weight.T
W_Q = mha.W_Q.weight.T  # (d_model, d_model)
W_Q_0 = W_Q[:, 0:d_k]  # head 0's columns: (d_model, d_k)
W_O = mha.W_O.weight.T  # (d_model, d_model)
print("d_k   =", d_k)
print("W^Q_0 :", shape_str(W_Q_0.shape))
print("W^O   :", shape_str(W_O.shape))
# --8<-- [end:show]

from mha_ref import publish_table  # noqa: E402
from mha_ref.tables import publish_value  # noqa: E402

h = mha.num_heads
d_model = h * d_k
names = {d_model: "d_model", d_k: "d_k"}


def symbolic(shape):
    """Write a concrete shape in the lesson's symbols: (d_model, d_k)."""
    return "(" + ", ".join(names[int(n)] for n in shape) + ")"


# Every head's slice of W_Q, W_K and W_V: they all share one shape.
slices = {
    tuple(lin.weight.T[:, i * d_k : (i + 1) * d_k].shape)
    for lin in (mha.W_Q, mha.W_K, mha.W_V)
    for i in range(h)
}
(per_head,) = slices
# Symbols are TeX (\(...\)): the table shows them typeset, as the
# slide's formulas are. The role comes first: it names each row in words
# (a fill-in's row header must be text a screen reader can read out).
rows = [
    [
        "per-head projection matrices",
        r"\(W^Q_i, W^K_i, W^V_i\)",
        symbolic(per_head),
        shape_str(per_head),
    ],
    [
        "head dimension — the width of each head",
        r"\(d_k = d_{\text{model}} / h\)",
        "scalar",
        f"{d_model} / {h} = {d_k}",
    ],
    [
        "output projection merges all heads",
        r"\(W^O\)",
        symbolic(W_O.shape),
        shape_str(W_O.shape),
    ],
]
publish_table("roles", ["role", "symbol", "shape", "at d=512, h=8"], rows)
# The prose's two shapes: one head's slice, and a full d_model x d_model
# matrix (W^O; W^Q at h = 1).
publish_value("per_head", shape_str(per_head))
publish_value("full", shape_str(W_O.shape))
