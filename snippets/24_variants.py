"""Variants of the parameter-count fill-in: counted, with and without
biases, on PyTorch's own nn.MultiheadAttention and on mha_ref's module.
"""

# --8<-- [start:show]
import torch

from mha_ref import MultiHeadAttention, count_parameters

torch.manual_seed(24)
rows = []
for d_model, h, bias in [
    (512, 8, 1),
    (384, 6, 1),
    (640, 10, 0),
    (768, 12, 1),
    (1024, 16, 1),
]:
    torch_mha = torch.nn.MultiheadAttention(
        d_model, h, bias=bool(bias), batch_first=True
    )
    params = sum(p.numel() for p in torch_mha.parameters())
    if not bias:  # mha_ref's module, bias-free, counts the same
        assert params == count_parameters(MultiHeadAttention(d_model, h))
    words = "with biases" if bias else "bias-free"
    rows.append([d_model, h, bias, words, f"{params:,}"])
# It prints nothing: `rows` holds every variant's answers, the ones
# "Try another" draws from (print(*rows, sep="\n") shows them).
# --8<-- [end:show]
from mha_ref import publish_table  # noqa: E402

publish_table("params", ["d_model", "h", "bias", "biases", "params"], rows)
