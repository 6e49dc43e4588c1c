"""nn.MultiheadAttention without batch_first=True.

Its default layout is (T, B, d_model); a (B, T, d_model) batch typed in
as is gets read as T=1 sequences of B tokens, and nothing complains.
"""

# --8<-- [start:show]
import torch
import torch.nn as nn

torch.manual_seed(15)
d_model, h, T = 8, 2, 4
X = torch.randn(1, T, d_model)  # meant as (B=1, T=4, d_model=8)

# batch_first defaults to False: the layer reads X as (T=1, B=4, d_model)
wrong = nn.MultiheadAttention(d_model, h, bias=False)
out, aw = wrong(X, X, X, average_attn_weights=False)
print("no batch_first  :", tuple(out.shape), tuple(aw.shape))
print("every weight 1.0:", bool((aw == 1).all()))  # each token alone

right = nn.MultiheadAttention(d_model, h, bias=False, batch_first=True)
right.load_state_dict(wrong.state_dict())  # the same weights
out, aw = right(X, X, X, average_attn_weights=False)
print("batch_first=True:", tuple(out.shape), tuple(aw.shape))
# --8<-- [end:show]
