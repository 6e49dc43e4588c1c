"""Trace d_model=8, h=2, d_k=4, seq=4, batch=1 through MHA.

Shows the lesson's nn.MultiheadAttention run, then (unshown) replays the
same weights step by step through mha_ref to publish every intermediate
shape: the tensor / shape / note table.
"""

# --8<-- [start:show]
import torch
import torch.nn as nn

torch.manual_seed(42)
d_model, h, T = 8, 2, 4  # d_k = d_model // h = 4
mha = nn.MultiheadAttention(d_model, h, batch_first=True, bias=False)
X = torch.randn(1, T, d_model)  # (B=1, T=4, d_model=8)
out, aw = mha(X, X, X, need_weights=True, average_attn_weights=False)
print("input :", tuple(X.shape))  # (1, 4, 8)
print("output:", tuple(out.shape))  # (1, 4, 8)
print("attn  :", tuple(aw.shape))  # (1, 2, 4, 4) = (B, h, T, T)
n_params = sum(p.numel() for p in mha.parameters())
print("params:", n_params, "== 4*8^2 =", 4 * d_model**2)
# --8<-- [end:show]

from mha_ref import (  # noqa: E402
    from_torch_mha,
    merge_heads,
    publish_table,
    scaled_dot_product_attention,
    shape_str,
    split_heads,
)
from mha_ref.tables import publish_value  # noqa: E402

# The same weights, one step at a time, through the reference module.
ref = from_torch_mha(mha)
with torch.no_grad():
    Q, K, V = ref.W_Q(X), ref.W_K(X), ref.W_V(X)  # (B, T, d_model) each
    Q_h = split_heads(Q, h)  # (B, h, T, d_k)
    K_h = split_heads(K, h)  # (B, h, T, d_k)
    V_h = split_heads(V, h)  # (B, h, T, d_k)
    context, attn = scaled_dot_product_attention(Q_h, K_h, V_h)
    concat = merge_heads(context)  # (B, T, d_model)
    output = ref.W_O(concat)  # (B, T, d_model)
    # The replay must be the layer PyTorch ran, not a look-alike.
    torch.testing.assert_close(output, out.detach())
    torch.testing.assert_close(attn, aw.detach())


def same(*tensors):
    """The one shape shared by tensors listed in a single row."""
    (shape,) = {tuple(t.shape) for t in tensors}
    return shape_str(shape)


B = X.shape[0]
# Cells are Markdown: tensor names as code, weights as math.
rows = [
    ["X (input)", same(X), f"B={B}, T={T}, d_model={d_model}"],
    ["Q, K, V", same(Q, K, V), r"after \(W^Q, W^K, W^V\)"],
    ["`Q_heads`, `K_heads`", same(Q_h, K_h, V_h), "B, h, T, d_k after split"],
    ["`attn_weights`", same(attn), "one (T×T) per head"],
    ["context", same(context), "`attn @ V_heads`"],
    ["concat", same(concat), f"merge h={h} heads"],
    ["output", same(output), r"after \(W^O\) — matches input shape"],
]
publish_table("shapes", ["tensor", "shape", "note"], rows)
# The two shapes named in the prose of this slide and the slides either
# side of it (what PyTorch returned).
publish_value("output", shape_str(out.shape))
publish_value("weights", shape_str(aw.shape))
