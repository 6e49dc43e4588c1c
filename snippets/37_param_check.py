"""Count the parameters of MHA with d_model=512, for h=1 and h=16."""

# --8<-- [start:show]
import torch

from mha_ref import MultiHeadAttention, count_parameters, shape_str

torch.manual_seed(37)
for h in (1, 16):
    mha = MultiHeadAttention(512, h)  # d_k = 512 // h
    label = f"h={h}:"
    print(f"{label:5} d_k={mha.d_k:3d}  params={count_parameters(mha):,}")
for name in ("W_Q", "W_K", "W_V", "W_O"):
    weight = getattr(mha, name).weight
    print(f"{name}: {shape_str(weight.shape)} -> {weight.numel():,}")
print(f"4 * 512**2 = {4 * 512**2:,}")
# --8<-- [end:show]
