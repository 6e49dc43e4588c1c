"""Slide 37: count the parameters of MHA with d_model=256, h=8."""

# --8<-- [start:show]
import torch

from mha_ref import MultiHeadAttention, count_parameters, shape_str

torch.manual_seed(37)
for h in (1, 8):
    mha = MultiHeadAttention(256, h)  # d_k = 256 // h
    print(f"h={h}: d_k={mha.d_k:3d}  params={count_parameters(mha):,}")
for name in ("W_Q", "W_K", "W_V", "W_O"):
    weight = getattr(mha, name).weight
    print(f"{name}: {shape_str(weight.shape)} -> {weight.numel():,}")
print(f"4 * 256**2 = {4 * 256**2:,}")
# --8<-- [end:show]
