"""Variants of the full-program fill-in: PyTorch's nn.MultiheadAttention
holding the module's weights, asked for its weights with and without
averaging, and the packed projection it stores.
"""

# --8<-- [start:show]
import torch

from mha_ref import MultiHeadAttention, shape_str, to_torch_mha

torch.manual_seed(52)
rows = []
for B, T, d_model, h in [
    (2, 6, 20, 4),
    (2, 4, 30, 5),
    (1, 7, 48, 6),
    (4, 5, 42, 7),
    (2, 9, 40, 8),
]:
    twin = to_torch_mha(MultiHeadAttention(d_model, h))  # batch_first
    x = torch.randn(B, T, d_model)  # (B, T, d_model)
    _, averaged = twin(x, x, x)  # the default: heads averaged
    _, per_head = twin(x, x, x, average_attn_weights=False)
    packed = twin.in_proj_weight  # W_Q, W_K, W_V stacked
    shapes = [shape_str(t.shape) for t in (averaged, per_head, packed)]
    rows.append([B, T, d_model, h, *shapes])
# It prints nothing: `rows` holds every variant's answers, the ones
# "Try another" draws from (print(*rows, sep="\n") shows them).
# --8<-- [end:show]
from mha_ref import publish_table  # noqa: E402

columns = ["B", "T", "d_model", "h", "averaged", "per_head", "in_proj"]
publish_table("twin", columns, rows)
