"""The parameter count of MultiHeadAttention(512, h) for each h listed.

One loop prints h, d_k and the count for each h in the shown list and
keeps its rows; the build gets those same rows as the h / d_k / params
table, and the prose (slides/22-guess-the-shape-of-the-answer-verify-param.html
and slides/23-verify-param-count-for-any-h.html) gets the list of h and the one
count they all share, so an edit to the list changes every one of them.
"""

# --8<-- [start:show]
import torch

from mha_ref import MultiHeadAttention

torch.manual_seed(0)
d = 512
rows = []  # (h, d_k, params) of each printed line
for h in [1, 2, 4, 8, 16]:
    m = MultiHeadAttention(d, h)
    p = sum(x.numel() for x in m.parameters())
    print(f"h={h:2d}  d_k={m.d_k:3d}  params={p:,}")
    rows.append((h, m.d_k, p))
# --8<-- [end:show]

from mha_ref import publish_table  # noqa: E402
from mha_ref.tables import publish_value  # noqa: E402

publish_table(
    "by_heads",
    ["h", "d_k", f"params (d={d})"],
    [[h, d_k, f"{p:,}"] for h, d_k, p in rows],
)
# The prose restates them ({{ value("23_params.heads") }}, "...total").
publish_value("heads", ", ".join(str(h) for h, _, _ in rows))
counts = {p for _, _, p in rows}
assert len(counts) == 1, f"the count depends on h: {sorted(counts)}"
publish_value("total", f"{counts.pop():,}")
