"""What the counter counts, and what it leaves out.

FlopCounterMode counts the matmuls: flat in h. The scores, their
scaling and their softmax run on a (B, h, T, T) tensor: h·T² elements
per example, growing with h. Both come from the real module.
"""

# --8<-- [start:show]
from mha_ref import forward_flops

d_model, T = 512, 128
heads = [2**i for i in range(d_model.bit_length())]  # 1, 2, 4 ... d_model
counted = [forward_flops(d_model, h, T).total for h in heads]
score_elements = [h * T * T for h in heads]  # (B=1, h, T, T)
print("h    counted matmul FLOPs   score/softmax elements")
for h, flops, elements in zip(heads, counted, score_elements, strict=True):
    print(f"{h:<4} {flops:>20,} {elements:>24,}")
# --8<-- [end:show]

import math  # noqa: E402

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, NullFormatter  # noqa: E402

from mha_ref.figures import PALETTE, publish_figure, style  # noqa: E402

SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def power_of_ten(value, _position):
    """10⁶ for 1e6; a value between powers keeps its digits."""
    exponent = math.log10(value) if value > 0 else 0.0
    if exponent.is_integer():
        return "10" + str(int(exponent)).translate(SUPERSCRIPT)
    return f"{value:g}"


def draw(narrow=False):
    """The two counts against h; narrower and taller for a phone."""
    with matplotlib.rc_context(style()):
        size = (3.7, 3.6) if narrow else (6.4, 3.6)
        fig, ax = plt.subplots(figsize=size)
        # Narrow: each long label on two lines.
        fit = (lambda t: t.replace(" (", "\n(")) if narrow else str
        ax.plot(
            heads,
            counted,
            marker="o",
            color=PALETTE[0],
            label=fit("matmul FLOPs (what FlopCounterMode counts)"),
        )
        ax.plot(
            heads,
            score_elements,
            marker="s",
            color=PALETTE[1],
            label="score / softmax elements, h·T²",
        )
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        # Tick labels as plain text ("512", "10⁶"), not mathtext: the SVG's
        # text stays text, and no TeX is parsed for each label.
        # Every h drawn is a tick (every third when narrow), so both ends
        # are labelled: the default stopped at 256 of the 512 drawn.
        ax.set_xticks(heads[::3] if narrow else heads)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_major_formatter(FuncFormatter(power_of_ten))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(fit(f"number of heads h (d_model = {d_model}, T = {T})"))
        ax.set_ylabel("count, log scale")
        # Narrow: under the axes, where it covers no line.
        under = {"loc": "upper left", "bbox_to_anchor": (0, -0.42)}
        ax.legend(frameon=False, fontsize=9, **(under if narrow else {}))
        fig.tight_layout()
    return fig


publish_figure(
    "cost",
    draw(),
    narrow=draw(narrow=True),
    alt=(
        f"Two lines against the number of heads h from 1 to {heads[-1]}, "
        "log scales. "
        f"Counted matmul FLOPs stay flat at {counted[0]:,}. The score and "
        f"softmax elements grow with h, from {score_elements[0]:,} at h=1 "
        f"to {score_elements[-1]:,} at h={heads[-1]}."
    ),
)
