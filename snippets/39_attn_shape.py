"""The per-head attention weights of MHA, and torch's average."""

# --8<-- [start:show]
import torch

from mha_ref import MultiHeadAttention, shape_str, to_torch_mha

torch.manual_seed(39)
B, T, d_model, h = 4, 12, 64, 8
x = torch.randn(B, T, d_model)  # (4, 12, 64)
mha = MultiHeadAttention(d_model, h)
out, w = mha(x, x, x)
print("output              :", shape_str(out.shape))
print("weights, per head   :", shape_str(w.shape))

torch_mha = to_torch_mha(mha)  # nn.MultiheadAttention, same weights
_, w_avg = torch_mha(x, x, x)  # average_attn_weights=True by default
_, w_all = torch_mha(x, x, x, average_attn_weights=False)
print("nn.MHA default      :", shape_str(w_avg.shape))
print("nn.MHA, not averaged:", shape_str(w_all.shape))
print("same as ours        :", torch.allclose(w, w_all, atol=1e-6))
# --8<-- [end:show]
