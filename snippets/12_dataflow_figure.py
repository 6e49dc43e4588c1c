"""The dataflow, with the shapes of a real run.

Every label on an arrow is the shape of the tensor that step of
mha_ref.MultiHeadAttention produced, run one step at a time. Its sizes
are not those of the "Predict the shapes" slide two slides on (the class
predicts those), and differ from each other, so each axis reads apart.
"""

# --8<-- [start:show]
import torch

from mha_ref import (
    MultiHeadAttention,
    merge_heads,
    scaled_dot_product_attention,
    shape_str,
    split_heads,
)

torch.manual_seed(0)
B, T, d_model, h = 2, 5, 12, 3
mha = MultiHeadAttention(d_model, h)
x = torch.randn(B, T, d_model)  # (B, T, d_model)
with torch.no_grad():
    q, k, v = mha.W_Q(x), mha.W_K(x), mha.W_V(x)  # each (B, T, d_model)
    q_h, k_h, v_h = (split_heads(t, h) for t in (q, k, v))  # (B, h, T, d_k)
    ctx, weights = scaled_dot_product_attention(q_h, k_h, v_h)
    merged = merge_heads(ctx)  # (B, T, d_model)
    out = mha.W_O(merged)  # (B, T, d_model)
steps = [
    ("x", x),
    ("project: x W_Q, x W_K, x W_V", q),
    ("split heads: view + transpose", q_h),
    ("attend: softmax(Q K^T / sqrt(d_k)) V", ctx),
    ("concat heads: transpose + view", merged),
    ("output: concat W_O", out),
]
for label, tensor in steps:
    print(f"{shape_str(tensor.shape):>14}  {label}")
print(f"{shape_str(weights.shape):>14}  attention weights, one T x T per head")
# --8<-- [end:show]

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from mha_ref.figures import INK, PALETTE, publish_figure, style  # noqa: E402


def draw(narrow=False):
    """The chain of boxes, each step's shape beside it; for a phone's
    column (``narrow``) the shape goes under its box."""
    with matplotlib.rc_context(style()):
        fig, ax = plt.subplots(figsize=(3.7, 6.4) if narrow else (8.4, 4.4))
        ax.set_axis_off()
        n = len(steps)
        # Narrow: the box above its row's middle, the shape under it.
        box_y, shape_x, shape_y = (0.2, 0.5, -0.22) if narrow else (0, 0.93, 0)
        for i, (label, tensor) in enumerate(steps):
            y = n - 1 - i
            colour = PALETTE[1] if tensor.dim() == 4 else PALETTE[0]
            ax.text(
                0.5,
                y + box_y,
                label,
                ha="center",
                va="center",
                fontsize=10 if narrow else 11,
                bbox={
                    "boxstyle": "round,pad=0.4",
                    "fc": "none",
                    "ec": colour,
                    "lw": 1.6,
                },
            )
            ax.text(
                shape_x,
                y + shape_y,
                shape_str(tensor.shape),
                ha="center" if narrow else "right",
                va="center",
                fontsize=10,
                color=colour,
                family="monospace",
            )
            if i:
                top = y + 1 + (shape_y - 0.14 if narrow else -0.28)
                ax.annotate(
                    "",
                    xy=(0.5, y + box_y + 0.28),
                    xytext=(0.5, top),
                    arrowprops={"arrowstyle": "->", "color": INK},
                )
        if not narrow:
            ax.text(0.99, n - 0.45, "shape of the run", ha="right", fontsize=9)
        ax.set_xlim(0, 1)
        ax.set_ylim(-0.6, n - 0.3)
    return fig


publish_figure(
    "dataflow",
    draw(),
    narrow=draw(narrow=True),
    alt=(
        "The dataflow of multi-head attention as a chain of boxes, with the "
        "shape of a real run beside each: "
        + "; ".join(f"{label}: {shape_str(t.shape)}" for label, t in steps)
        + ". Only the split and attention steps carry a head axis."
    ),
)
