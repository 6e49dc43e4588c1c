"""The two mask conventions, broadcasting over heads, causal.

mha_ref (like F.scaled_dot_product_attention) reads a bool mask as
True = may attend; nn.MultiheadAttention reads True = blocked. The
snippet runs both on the same weights and shows the conversion.
"""

# --8<-- [start:show]
import torch

from mha_ref import MultiHeadAttention, to_torch_mha

torch.manual_seed(53)
B, T, d_model, h = 2, 4, 8, 2
x = torch.randn(B, T, d_model)
mha = MultiHeadAttention(d_model, h)
torch_mha = to_torch_mha(mha)  # nn.MultiheadAttention, same weights

# Padding: sequence 1 has only 2 real tokens. True = may attend.
real = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]], dtype=torch.bool)
mask = real[:, None, None, :]  # (B, 1, 1, T_k): broadcasts over h, T_q
out, w = mha(x, x, x, mask=mask)  # w: (B, h, T_q, T_k)
print("mask", tuple(mask.shape), "-> weights", tuple(w.shape))
print("pads get weight:", w[1, :, :, 2:].abs().max().item())

# nn.MultiheadAttention: True = blocked, so pass the opposite mask
t_out, _ = torch_mha(x, x, x, key_padding_mask=~real)  # (B, T_k)
print("torch, ~mask   :", torch.allclose(out, t_out, atol=1e-6))
t_bad, _ = torch_mha(x, x, x, key_padding_mask=real)  # convention slip
print("torch, mask    :", torch.allclose(out, t_bad, atol=1e-6))
print("  sequence 0 all NaN:", t_bad[0].isnan().all().item())  # no key left
print("  sequence 1 finite:", t_bad[1].isfinite().all().item())  # its pads

# Causal: query i may see keys 0..i (lower triangle, True = may attend)
causal = torch.ones(T, T, dtype=torch.bool).tril()  # (T_q, T_k)
out, w = mha(x, x, x, mask=causal)
print("head 0 weights, sequence 0:")
print(w[0, 0].detach().round(decimals=2))
same, _ = mha(x, x, x, is_causal=True)
print("= is_causal=True:", torch.allclose(out, same))
t_out, _ = torch_mha(x, x, x, attn_mask=~causal)
print("= torch, ~causal:", torch.allclose(out, t_out, atol=1e-6))
# --8<-- [end:show]
