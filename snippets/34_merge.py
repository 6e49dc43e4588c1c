"""The two recipe details — K transpose and the merge reshape."""

# --8<-- [start:show]
import warnings

import torch

from mha_ref import merge_heads, shape_str

# `.T` on a 4-D tensor warns (deprecated); the slide shows what it returns.
warnings.simplefilter("ignore", UserWarning)
torch.manual_seed(34)
B, h, T, d_k = 2, 2, 5, 4
k_heads = torch.randn(B, h, T, d_k)  # (2, 2, 5, 4)
print("K_heads.T              :", shape_str(k_heads.T.shape))  # all 4 reversed
print("K_heads.transpose(-2,-1):", shape_str(k_heads.transpose(-2, -1).shape))

ctx = torch.randn(B, h, T, d_k)  # (B, h, T, d_k) per-head context
back = ctx.transpose(1, 2)  # (B, T, h, d_k), no longer contiguous
try:
    back.view(B, T, h * d_k)  # (B, T, d_model)?
except RuntimeError as err:
    print("view after transpose    :", str(err).split(" (")[0])
print(
    "reshape                 :", shape_str(back.reshape(B, T, h * d_k).shape)
)
print("merge_heads             :", shape_str(merge_heads(ctx).shape))
# --8<-- [end:show]
