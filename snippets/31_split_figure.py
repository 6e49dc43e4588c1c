"""Where each element of x ends up.

Fill x with each element's own index, split it, and read back from the
result which (position, feature) each row holds: the origin tables of
the trap slides, drawn from the real tensors.
"""

# --8<-- [start:show]
import torch

from mha_ref import (
    split_heads,
    split_heads_direct_view,
    split_heads_flat,
)

B, T, d_model, h = 1, 4, 8, 2
d_k = d_model // h
x = torch.arange(B * T * d_model, dtype=torch.float32)
x = x.view(B, T, d_model)  # (B, T, d_model): each element holds its index


def origins(split):
    """(rows, d_k) grids of (position, head slice) of each element."""
    index = split.reshape(-1, d_k).long()  # (rows, d_k)
    position, feature = index // d_model, index % d_model
    return position, feature // d_k  # the head slice it belongs to


correct = origins(split_heads(x, h))  # rows: head 0's T, then head 1's
flat = origins(split_heads_flat(x, h))  # (T*h) rows: one attention
direct = origins(split_heads_direct_view(x, h))
for name, (position, _) in [("correct", correct), ("direct view", direct)]:
    print(f"{name}: head 0 holds positions", position[:T, 0].tolist())
print("flat view: row r holds position", flat[0][:, 0].tolist())
# --8<-- [end:show]

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import ListedColormap  # noqa: E402

from mha_ref.figures import PALETTE, publish_figure, style  # noqa: E402


def draw(panels, title, narrow=False):
    """Each panel: one row per row of the split, coloured by head slice;
    side by side, or stacked for a phone's column (``narrow``)."""
    with matplotlib.rc_context(style()):
        if narrow:
            fig, axes = plt.subplots(len(panels), 1, figsize=(3.7, 7.4))
        else:
            fig, axes = plt.subplots(1, len(panels), figsize=(7.5, 3.6))
        cmap = ListedColormap(PALETTE[:h])
        for ax, (label, (position, head)) in zip(axes, panels, strict=True):
            ax.imshow(head.numpy(), cmap=cmap, vmin=0, vmax=h - 1)
            ax.set_title(label, fontsize=10)
            ax.set_xlabel("feature within the slice")
            ax.set_ylabel("row of the split")
            ax.set_xticks(range(d_k))
            ax.set_yticks(range(position.shape[0]))
            for r in range(position.shape[0]):
                for c in range(d_k):
                    ax.text(
                        c,
                        r,
                        f"p{int(position[r, c])}",
                        ha="center",
                        va="center",
                        color="white",
                        fontsize=8,
                    )
        fig.suptitle(
            title.replace(", ", ",\n") if narrow else title, fontsize=11
        )
        fig.tight_layout()
    return fig


KEY = "colour = head slice of the features, pN = position N"
FLAT = [
    ("correct: view, then transpose", correct),
    ("wrong: view(B, T*h, d_k)", flat),
]
DIRECT = [
    ("correct: view, then transpose", correct),
    ("wrong: view(B, h, T, d_k)", direct),
]
publish_figure(
    "flat",
    draw(FLAT, KEY),
    narrow=draw(FLAT, KEY, narrow=True),
    alt=(
        "Two grids of 8 rows by 4 features, each cell coloured by the head "
        "slice its features come from and labelled with its position. "
        "Correct split: the first four rows are head 0's slice of positions "
        "0 to 3, the last four head 1's. Flat view: the colours alternate "
        "row by row (position 0 head 0, position 0 head 1, position 1 head "
        "0, ...), so one attention runs over both heads' slices mixed."
    ),
)
publish_figure(
    "direct",
    draw(DIRECT, KEY),
    narrow=draw(DIRECT, KEY, narrow=True),
    alt=(
        "Two grids of 8 rows by 4 features. Correct split: head 0's rows "
        "hold positions 0, 1, 2, 3, all in head 0's colour. Direct view: "
        "head 0's rows hold positions 0, 0, 1, 1 in alternating colours: "
        "head 0 sees only the first two positions, cut into both slices."
    ),
)
