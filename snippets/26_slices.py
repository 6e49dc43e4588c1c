"""Eight (512, 64) per-head matrices hold what one (512, 512) does.

Cuts W_Q of MultiHeadAttention(512, 8) into its per-head column blocks and
compares parameter counts with h=1.
"""

# --8<-- [start:show]
import torch

from mha_ref import MultiHeadAttention, count_parameters, shape_str

torch.manual_seed(0)
mha8 = MultiHeadAttention(512, 8)
mha1 = MultiHeadAttention(512, 1)
W_Q = mha8.W_Q.weight.T  # (d_model, d_model), x @ W form
heads = W_Q.split(mha8.d_k, dim=1)  # h tensors of (d_model, d_k)
print("h=8:", len(heads), "x W^Q_i", shape_str(heads[0].shape))
print("     entries:", f"{sum(w.numel() for w in heads):,}")
print("h=1: 1 x W^Q_0", shape_str(mha1.W_Q.weight.T.shape))
print("     entries:", f"{mha1.W_Q.weight.numel():,}")
print("params h=8:", f"{count_parameters(mha8):,}")
print("params h=1:", f"{count_parameters(mha1):,}")
# --8<-- [end:show]
