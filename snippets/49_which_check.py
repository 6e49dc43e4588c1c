"""Which check catches a wrong head split — h=1 or h>1.

Runs the module with each wrong split of the reshape questions in place of
its own, and compares the output at h=1 with single-head attention and at
h=2 with torch's nn.MultiheadAttention holding the same weights.
"""

# --8<-- [start:show]
import torch

from mha_ref import (
    MultiHeadAttention,
    attend_with_split,
    single_head_attention,
    split_heads,
    split_heads_direct_view,
    split_heads_flat,
    split_heads_transpose_first,
    to_torch_mha,
)

torch.manual_seed(49)
SPLITS = {
    "view + transpose (right)": split_heads,
    "flat view(B, T*h, d_k)": split_heads_flat,
    "direct view(B, h, T, d_k)": split_heads_direct_view,
    "transpose first": split_heads_transpose_first,
}
x = torch.randn(2, 6, 8)  # (B, T, d_model)


def at_h1(split):
    """Milestone 3: h=1 against single-head attention, same weights."""
    m = MultiHeadAttention(8, 1)
    out, _ = attend_with_split(m, x, split)  # (B, T, d_model)
    W = [lin.weight.T for lin in (m.W_Q, m.W_K, m.W_V, m.W_O)]
    want, _ = single_head_attention(x, x, *W)  # (B, T, d_model)
    return torch.allclose(out, want, atol=1e-5)


def at_h2(split):
    """Values at h=2 against nn.MultiheadAttention, same weights."""
    m = MultiHeadAttention(8, 2)
    out, _ = attend_with_split(m, x, split)  # (B, T, d_model)
    want, _ = to_torch_mha(m)(x, x, x)  # (B, T, d_model)
    return torch.allclose(out, want, atol=1e-5)


with torch.no_grad():
    for name, split in SPLITS.items():
        print(f"{name:26s} h=1: {at_h1(split)!s:5s}  h=2: {at_h2(split)}")
# --8<-- [end:show]
