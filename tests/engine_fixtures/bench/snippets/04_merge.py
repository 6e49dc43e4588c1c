"""Bench: merge_heads undoes split_heads exactly."""

import torch

from mha_ref import merge_heads, split_heads

torch.manual_seed(3)
x = torch.randn(1, 5, 8)
for h in (1, 2, 4, 8):
    same = torch.equal(merge_heads(split_heads(x, h)), x)
    print(f"h={h}: round trip exact = {same}")
