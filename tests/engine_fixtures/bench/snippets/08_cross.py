"""Bench: cross-attention with T_q != T_k."""

import torch

from mha_ref import MultiHeadAttention, shape_str

torch.manual_seed(7)
mha = MultiHeadAttention(8, 2)
queries = torch.randn(1, 3, 8)
memory = torch.randn(1, 7, 8)
out, w = mha(queries, memory, memory)
print("out:", shape_str(out.shape), " weights:", shape_str(w.shape))
