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

from mha_ref.figures import INK, PALETTE, publish_figure, style  # noqa: E402


def attentions(split):
    """How many attentions the split's rows go to: one per head for
    (B, h, T, d_k), one for all rows of (B, T*h, d_k)."""
    return split.shape[1] if split.dim() == 4 else 1


def draw(panels, title, narrow=False):
    """Each panel: one row per row of the split, coloured by head slice,
    and a line between the rows that go to different attentions, each
    block named; side by side, or stacked for a phone's column."""
    with matplotlib.rc_context(style()):
        if narrow:
            fig, axes = plt.subplots(len(panels), 1, figsize=(3.7, 7.6))
        else:
            fig, axes = plt.subplots(1, len(panels), figsize=(7.9, 3.6))
        # Cells under white labels: the palette's blue, its orange
        # darkened (white on #e0793a was 3.0:1, and dark text turned light
        # on it in the dark scheme, 2.5:1): each at least 4.5:1 in both.
        cmap = ListedColormap([PALETTE[0], "#a7501a"][:h])
        for ax, (label, split) in zip(axes, panels, strict=True):
            position, head = origins(split)
            rows = position.shape[0]
            ax.imshow(head.numpy(), cmap=cmap, vmin=0, vmax=h - 1)
            ax.set_title(label, fontsize=10)
            ax.set_xlabel("feature within the slice")
            ax.set_ylabel("row of the split")
            ax.set_xticks(range(d_k))
            ax.set_yticks(range(rows))
            for r in range(rows):
                for c in range(d_k):
                    ax.text(
                        c,
                        r,
                        f"p{int(position[r, c])}",
                        ha="center",
                        va="center",
                        color="white",
                        # 8 pt drew 10.7 px in a phone's 278 px column.
                        fontsize=10 if narrow else 8,
                    )
            groups = attentions(split)
            block = rows // groups
            for g in range(groups):
                if g:  # out to the names, past the grid's edge
                    y = g * block - 0.5
                    ax.plot([-0.5, d_k + 0.3], [y, y], color=INK, lw=3)
                    ax.lines[-1].set_clip_on(False)
                    ax.set_xlim(-0.5, d_k - 0.5)  # the grid's, not the line's
                name = f"head {g}" if groups > 1 else "one attention"
                ax.text(
                    d_k - 0.35,
                    (g + 0.5) * block - 0.5,
                    name,
                    rotation=270,
                    ha="left",
                    va="center",
                    fontsize=9,
                )
        fig.suptitle(
            title.replace(", ", ",\n") if narrow else title, fontsize=11
        )
        fig.tight_layout()
    return fig


KEY = "colour = head slice of the features, pN = position N"
CORRECT = ("correct: view, then transpose", split_heads(x, h))
FLAT = [CORRECT, ("wrong: view(B, T*h, d_k)", split_heads_flat(x, h))]
DIRECT = [
    CORRECT,
    ("wrong: view(B, h, T, d_k)", split_heads_direct_view(x, h)),
]
publish_figure(
    "flat",
    draw(FLAT, KEY),
    narrow=draw(FLAT, KEY, narrow=True),
    alt=(
        "Two grids of 8 rows by 4 features, each cell coloured by the head "
        "slice its features come from and labelled with its position. "
        "Correct split: a line parts the rows into head 0 and head 1; head "
        "0's four rows are head 0's slice of positions 0 to 3, head 1's the "
        "other slice. Flat view: no line, one attention over all eight "
        "rows, whose colours alternate row by row (position 0 head 0, "
        "position 0 head 1, position 1 head 0, ...): both heads' slices "
        "mixed."
    ),
)
publish_figure(
    "direct",
    draw(DIRECT, KEY),
    narrow=draw(DIRECT, KEY, narrow=True),
    alt=(
        "Two grids of 8 rows by 4 features, a line parting each into head "
        "0's four rows and head 1's. Correct split: head 0's rows hold "
        "positions 0, 1, 2, 3, all in head 0's colour. Direct view: head "
        "0's rows hold positions 0, 0, 1, 1 in alternating colours: head 0 "
        "sees only the first two positions, cut into both slices."
    ),
)
