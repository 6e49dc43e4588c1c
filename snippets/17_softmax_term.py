"""The score/softmax term that FlopCounterMode does not count.

FlopCounterMode books matrix multiplies only. Scaling, masking and the
softmax work on every entry of the (B, h, T_q, T_k) score tensor, and
there are h * T**2 of them per sequence: this grows with h. The number
of entries is read off a real forward (on the meta device: shapes only).
"""

# --8<-- [start:show]
import torch

from mha_ref import MultiHeadAttention, forward_flops

d_model, T = 512, 128
rows, ratios, all_h_T2 = [], {}, True
for h in [2**i for i in range(d_model.bit_length())]:  # 1 ... d_model
    with torch.device("meta"):  # shapes only, nothing computed
        x = torch.empty(1, T, d_model)  # (B, T, d_model)
        _, weights = MultiHeadAttention(d_model, h)(x, x, x)
    entries = weights.numel()  # (1, h, T, T): one per score
    f = forward_flops(d_model, h, seq_len=T)  # matmuls only
    all_h_T2 &= entries == h * T**2  # one per head, query and key
    rows.append([h, d_model // h, f"{f.total:,}", f"{entries:,}"])
    ratios[h] = f.attention / entries  # attention-matmul FLOPs per entry
print("score entries = h*T^2 for every h:", all_h_T2)
for h in (8, d_model):
    print(f"h={h:3d}: one score entry per {ratios[h]:.0f} attention FLOPs")
# --8<-- [end:show]

from mha_ref import publish_table  # noqa: E402

publish_table(
    "softmax_term",
    [
        "h",
        "d_k",
        "matmul FLOPs (counted)",
        "score entries h·T² (scaled, softmaxed)",
    ],
    rows,
)
