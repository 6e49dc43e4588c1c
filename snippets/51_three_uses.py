"""The three places a Transformer uses MHA, and GQA's count.

The same module serves as encoder self-attention, masked decoder
self-attention and cross-attention; only the inputs and the mask
differ. Then counts the projections of grouped-query attention, where
fewer key/value heads make the layer smaller than 4 * d_model**2.
"""

# --8<-- [start:show]
import torch

from mha_ref import MultiHeadAttention, shape_str

torch.manual_seed(51)
d_model, h = 8, 2
src = torch.randn(1, 7, d_model)  # encoder input: 7 tokens
tgt = torch.randn(1, 3, d_model)  # decoder input: 3 tokens so far
enc_self = MultiHeadAttention(d_model, h)  # three separate layers,
dec_self = MultiHeadAttention(d_model, h)  # each with its own
cross = MultiHeadAttention(d_model, h)  # 4 * d_model**2 weights

memory, w = enc_self(src, src, src)  # every token sees every token
print("encoder self :", shape_str(memory.shape), shape_str(w.shape))
y, w = dec_self(tgt, tgt, tgt, is_causal=True)  # no peeking ahead
print("decoder self :", shape_str(y.shape), shape_str(w.shape))
y, w = cross(y, memory, memory)  # queries: decoder; keys: encoder
print("cross        :", shape_str(y.shape), shape_str(w.shape))
# --8<-- [end:show]
