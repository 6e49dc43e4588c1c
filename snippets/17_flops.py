"""Count MHA's FLOPs for several h at a fixed d_model and T.

forward_flops measures one forward pass with FlopCounterMode (2 FLOPs per
multiply-add). The printed lines check the claim (one total for every h,
equal to the formulas); the slide's table shows the counts, once.
"""

# --8<-- [start:show]
import torch

from mha_ref import forward_flops

torch.manual_seed(0)
d_model, T = 512, 128
counts = {h: forward_flops(d_model, h, seq_len=T) for h in [1, 2, 4, 8, 16]}
print("same total for every h:", len({f.total for f in counts.values()}) == 1)
# 2 FLOPs per multiply-add:
print("projections 2*4*T*d^2 =", f"{2 * 4 * T * d_model**2:,}")
print("attention   2*2*T^2*d =", f"{2 * 2 * T**2 * d_model:,}")
# --8<-- [end:show]

from mha_ref import publish_table  # noqa: E402

rows = []
for h, f in counts.items():
    rows.append(
        [
            h,
            d_model // h,
            f"{f.projections:,}",
            f"{f.attention:,}",
            f"{f.total:,}",
        ]
    )
publish_table(
    "by_heads",
    ["h", "d_k", "projection FLOPs", "attention FLOPs", "total"],
    rows,
)
