"""MultiHeadAttention with h=1 is single-head attention.

Runs MultiHeadAttention(8, 1) and single_head_attention with the module's
own weights on the same input, and compares the outputs.
"""

# --8<-- [start:show]
import torch

from mha_ref import MultiHeadAttention, single_head_attention, split_heads

torch.manual_seed(5)
d_model = 8
mha_h1 = MultiHeadAttention(d_model, 1)
X = torch.randn(1, 4, d_model)  # (B=1, T=4, d_model=8)
with torch.no_grad():
    out_mha, _ = mha_h1(X, X, X)  # (1, 4, 8)
    # The same four matrices in x @ W form: each (d_model, d_model)
    W = [m.weight.T for m in (mha_h1.W_Q, mha_h1.W_K, mha_h1.W_V, mha_h1.W_O)]
    out_single, _ = single_head_attention(X, X, *W)  # (1, 4, 8)
    Q = mha_h1.W_Q(X)  # (1, 4, 8)
    one_head = split_heads(Q, 1)  # (1, 1, 4, 8): d_k = d_model
print("split is a no-op:", torch.equal(one_head[:, 0], Q))
print("allclose:", torch.allclose(out_mha, out_single, atol=1e-5))
print("max |diff|:", (out_mha - out_single).abs().max().item())
# --8<-- [end:show]
