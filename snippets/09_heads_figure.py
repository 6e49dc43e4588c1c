"""Two trained heads that took different relationships.

The model (mha_ref.specialise) must name, at every position, both the
previous token and the first token; with two heads, each head takes one
relationship. Trained here, seeded, on one thread (under half a second).
"""

# --8<-- [start:show]
from mha_ref.specialise import (
    attention_maps,
    held_out_batch,
    specialisation,
    train,
)

model, _ = train(seed=0, cache_dir=None)  # trained, not loaded
batch = held_out_batch()
result = specialisation(model, batch)
maps = attention_maps(model, batch.tokens[0])  # (h, T, T)
for relationship, head in result["heads"].items():
    score = result["scores"][relationship]
    print(f"head {head} took '{relationship}': {score:.2f} of its attention")
# --8<-- [end:show]

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from mha_ref.figures import publish_figure, style  # noqa: E402

names = {head: rel for rel, head in result["heads"].items()}


def draw(narrow=False):
    """The heads' maps side by side, or stacked for a phone's column."""
    with matplotlib.rc_context(style()):
        heads = maps.shape[0]
        grid = (heads, 1) if narrow else (1, heads)
        size = (3.7, 6.8) if narrow else (7, 3.4)
        fig, axes = plt.subplots(*grid, figsize=size)
        for head, ax in enumerate(axes):
            ax.imshow(maps[head].numpy(), cmap="Blues", vmin=0, vmax=1)
            ax.set_title(f"head {head}: {names.get(head, '?')} token")
            ax.set_xlabel("key position")
            ax.set_ylabel("query position")
            # Positions are whole: no 2.5 ticks on the narrow drawing.
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        fig.tight_layout()
    return fig


publish_figure(
    "heads",
    draw(),
    narrow=draw(narrow=True),
    alt=(
        "Attention weights of two trained heads on one sequence. Head "
        f"{result['heads']['previous']} puts its weight on the diagonal "
        "just below the main one: each position attends to the previous "
        f"token. Head {result['heads']['first']} puts its weight in the "
        "first column: every position attends to the first token."
    ),
)
