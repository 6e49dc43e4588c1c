"""The attn_w shape each forward-pass bug leaves behind.

Milestone 2 checks attn_w against (B, h, T, T) = (2, 2, 5, 5). Runs each
bug on the same projected query and key and prints the shape it gives:
some bugs change it, the direct view does not.
"""

# --8<-- [start:show]
import torch

from mha_ref import split_heads, split_heads_direct_view, split_heads_flat

torch.manual_seed(48)
B, T, d_model, h = 2, 5, 8, 2
d_k = d_model // h
q, k = torch.randn(B, T, d_model), torch.randn(B, T, d_model)


def attn_w(q_heads, k_heads):
    scores = q_heads @ k_heads.transpose(-2, -1) / d_k**0.5
    return torch.softmax(scores, dim=-1)


def attn_shape(q_heads, k_heads):
    return tuple(attn_w(q_heads, k_heads).shape)


w = attn_w(split_heads(q, h), split_heads(k, h))
right = tuple(w.shape)
print("right split        :", right)  # (B, h, T, T)
no_t = attn_shape(q.view(B, T, h, d_k), k.view(B, T, h, d_k))
print("forgot transpose   :", no_t)  # (B, T, h, h)
flat = attn_shape(split_heads_flat(q, h), split_heads_flat(k, h))
print("flat view          :", flat)  # (B, T*h, T*h)
print("heads averaged     :", tuple(w.mean(dim=1).shape))  # (B, T, T)
direct = attn_shape(
    split_heads_direct_view(q, h), split_heads_direct_view(k, h)
)
print("direct view        :", direct, "same as right:", direct == right)
# --8<-- [end:show]

from mha_ref.tables import publish_value  # noqa: E402

# The shapes the slide's prose and model answer name (never typed).
publish_value("forgot_transpose", no_t)
publish_value("flat", flat)
publish_value("averaged", tuple(w.mean(dim=1).shape))
