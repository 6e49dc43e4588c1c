"""Fixture: split a batch into heads and merge it back."""

# --8<-- [start:show]
import torch

torch.manual_seed(0)
B, T, D, H = 2, 5, 8, 2
x = torch.randn(B, T, D)
heads = x.view(B, T, H, D // H).transpose(1, 2)  # (B, h, T, d_k)
merged = heads.transpose(1, 2).reshape(B, T, D)  # (B, T, D)
print("x       :", tuple(x.shape))
print("heads   :", tuple(heads.shape))
print("merged  :", tuple(merged.shape))
print("round trip exact:", torch.equal(x, merged))
# --8<-- [end:show]

from mha_ref.tables import publish_table, shape_str  # noqa: E402

publish_table(
    "shapes",
    ["tensor", "shape", "note"],
    [
        ["x", shape_str(x.shape), "input"],
        ["heads", shape_str(heads.shape), "(B, h, T, d_k)"],
        ["merged", shape_str(merged.shape), "same as x"],
    ],
)
