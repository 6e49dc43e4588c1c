"""Variants of the cross-attention fill-in: queries and keys of
different lengths, run through mha_ref, and the shapes that came out.
"""

# --8<-- [start:show]
import torch

from mha_ref import MultiHeadAttention, shape_str, split_heads

torch.manual_seed(48)
rows = []
for B, T_q, T_k, d_model, h in [
    (2, 5, 7, 12, 3),
    (3, 5, 2, 24, 4),
    (3, 6, 10, 35, 5),
    (1, 4, 9, 16, 8),
    (5, 8, 3, 42, 6),
]:
    model = MultiHeadAttention(d_model, h)
    query = torch.randn(B, T_q, d_model)  # (B, T_q, d_model)
    memory = torch.randn(B, T_k, d_model)  # (B, T_k, d_model)
    out, attn_w = model(query, memory, memory)
    K_heads = split_heads(model.W_K(memory), h)  # (B, h, T_k, d_k)
    shapes = [shape_str(t.shape) for t in (out, attn_w, K_heads)]
    rows.append([B, T_q, T_k, d_model, h, *shapes])
# It prints nothing: `rows` holds every variant's answers, the ones
# "Try another" draws from (print(*rows, sep="\n") shows them).
# --8<-- [end:show]
from mha_ref import publish_table  # noqa: E402

columns = ["B", "T_q", "T_k", "d_model", "h", "out", "attn_w", "K_heads"]
publish_table("cross", columns, rows)
