"""Parameter and FLOP counts, measured rather than derived by hand.

The lesson source's FLOPs slide claimed ``d_model^2 / h`` per head; that
is not the attention cost (ARCHITECTURE.md, source error 1). Counting the real
forward with ``FlopCounterMode`` shows both parts are independent of
``h``: the four projections cost ``2 * 4 * B * T * d_model^2`` FLOPs and
the two attention matmuls ``2 * 2 * B * T^2 * d_model`` (the counter
books 2 FLOPs per multiply-add). Equal FLOPs do not mean equal wall-clock
time: many small heads can use the hardware less efficiently.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from ._checks import check_head_split, check_int
from .mha import MultiHeadAttention

__all__ = ["FlopCount", "count_parameters", "forward_flops"]

_PROJECTIONS = ("W_Q", "W_K", "W_V", "W_O")


def count_parameters(module: nn.Module) -> int:
    """Number of scalars in ``module``'s parameters (trainable or not)."""
    if not isinstance(module, nn.Module):
        raise TypeError(
            f"module must be a torch.nn.Module, got {type(module).__name__}"
        )
    return sum(p.numel() for p in module.parameters())


@dataclass(frozen=True)
class FlopCount:
    """FLOPs of one self-attention forward, split by where they are spent."""

    projections: int  # the four d_model x d_model Linear layers
    attention: int  # Q K^T and weights @ V, summed over heads
    total: int


def forward_flops(
    d_model: int, num_heads: int, seq_len: int, batch_size: int = 1
) -> FlopCount:
    """Count the FLOPs of ``MultiHeadAttention`` on a self-attention input.

    The module is built on the ``meta`` device: shapes propagate and the
    counter sees every matmul, but no memory is allocated and nothing is
    computed, so large sizes cost nothing.
    """
    check_head_split(d_model, num_heads)
    check_int("seq_len", seq_len)
    check_int("batch_size", batch_size)
    with torch.device("meta"):
        module = MultiHeadAttention(d_model, num_heads)
        x = torch.empty(batch_size, seq_len, d_model)
    counter = FlopCounterMode(display=False)
    with counter:
        module(x, x, x)
    by_module = counter.get_flop_counts()
    root = type(module).__name__
    projections = sum(
        sum(by_module.get(f"{root}.{name}", {}).values())
        for name in _PROJECTIONS
    )
    attention = int(by_module["Global"].get(torch.ops.aten.bmm, 0))
    total = int(counter.get_total_flops())
    if projections + attention != total:
        # Some other op was counted; the split above would be a lie.
        raise RuntimeError(
            f"FLOPs outside projections ({projections}) and attention "
            f"matmuls ({attention}) were counted: total {total}"
        )
    return FlopCount(int(projections), attention, total)
