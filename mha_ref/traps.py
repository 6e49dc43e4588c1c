"""The wrong head splits the lesson's trap slides warn about, made runnable.

Each wrong split returns a tensor of a plausible shape, so nothing raises:
the output is silently different. These functions let a snippet show what
each split really hands the heads (ARCHITECTURE.md, source errors 3, 4)
instead of
describing it from memory.

The correct split, for comparison, is
``x.view(B, T, h, d_k).transpose(1, 2)`` (:func:`mha_ref.split_heads`).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ._checks import check_head_split, check_int, check_tensor
from .attention import scaled_dot_product_attention
from .mha import MultiHeadAttention, _check_split_input, merge_heads

__all__ = [
    "attend_flat",
    "attend_with_split",
    "direct_view_origins",
    "flat_row_origins",
    "split_heads_direct_view",
    "split_heads_flat",
    "split_heads_transpose_first",
]


def split_heads_flat(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """The flat split ``view(B, T*h, d_k)``: heads and positions merged.

    Memory holds position 0's ``h`` head slices, then position 1's, ...,
    so row ``r`` is position ``r // h``, head ``r % h`` (not "head 0 gets
    tokens 0, h, 2h, ..." as the slide says). Attention over these rows
    mixes heads and positions.
    """
    _check_split_input(x, num_heads)
    B, T, d_model = x.shape
    d_k = d_model // num_heads
    return x.view(B, T * num_heads, d_k)  # (B, T*h, d_k)


def flat_row_origins(seq_len: int, num_heads: int) -> list[tuple[int, int]]:
    """``(position, head)`` held by each row of :func:`split_heads_flat`."""
    check_int("seq_len", seq_len)
    check_int("num_heads", num_heads)
    return [
        (r // num_heads, r % num_heads) for r in range(seq_len * num_heads)
    ]


def split_heads_direct_view(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """The direct view ``view(B, h, T, d_k)``: the right shape, wrong data.

    ``view`` only re-reads memory in row-major order, so head ``i`` gets
    the ``i``-th block of ``T * d_k`` consecutive values: positions cut
    into ``d_k``-wide pieces that pose as positions, whole positions only
    when ``h`` divides ``T`` (see :func:`direct_view_origins`).
    """
    _check_split_input(x, num_heads)
    B, T, d_model = x.shape
    d_k = d_model // num_heads
    return x.view(B, num_heads, T, d_k)  # (B, h, T, d_k), scrambled


def direct_view_origins(
    seq_len: int, num_heads: int, d_model: int
) -> list[list[tuple[int, int, int]]]:
    """Where row ``j`` of head ``i`` of the direct view really comes from.

    ``origins[i][j] == (position, feature_start, feature_stop)``: that row
    is ``x[b, position, feature_start:feature_stop]``. When ``h`` divides
    ``T``, head ``i`` holds positions ``i*T/h .. (i+1)*T/h - 1``, each cut
    into ``h`` pieces, instead of every position's ``i``-th slice.
    """
    check_int("seq_len", seq_len)
    d_k = check_head_split(d_model, num_heads)
    origins = []
    for i in range(num_heads):
        rows = []
        for j in range(seq_len):
            start = (i * seq_len + j) * d_k  # flat offset in (T, d_model)
            position, feature = divmod(start, d_model)
            rows.append((position, feature, feature + d_k))
        origins.append(rows)
    return origins


def split_heads_transpose_first(
    x: torch.Tensor, num_heads: int
) -> torch.Tensor:
    """Transpose-first: transpose to ``(B, d_model, T)``, then reshape.

    The slide writes ``.view``. The transposed tensor is not contiguous,
    so ``.view`` raises for most sizes, yet it succeeds when the sizes
    line up by coincidence (``T == d_k``, ``d_k == 1`` or ``T == 1``; the
    lesson's ``d_model=8, h=2, T=4`` trace is such a case). ``.reshape``
    gives the values ``.view`` gives whenever ``.view`` works, and copies
    otherwise, so it shows the data for every size: each "head row" is
    read along the sequence axis, mixing positions inside one feature.
    """
    _check_split_input(x, num_heads)
    B, T, d_model = x.shape
    d_k = d_model // num_heads
    x = x.transpose(1, 2)  # (B, d_model, T), not contiguous
    return x.reshape(B, num_heads, T, d_k)  # (B, h, T, d_k), scrambled


def attend_with_split(
    module: MultiHeadAttention,
    query: torch.Tensor,
    split: Callable[[torch.Tensor, int], torch.Tensor],
) -> tuple[torch.Tensor, torch.Tensor]:
    """Self-attention through ``module`` with ``split`` in place of the
    correct head split; returns ``(output, weights)`` like the module.

    A 4-D split result ``(B, h, T, d_k)`` is merged the usual way
    (:func:`mha_ref.merge_heads`). A 3-D result (the flat split's
    ``(B, T*h, d_k)``) is viewed back to ``(B, T, d_model)``, undoing
    that view. Either way the output keeps its correct shape, which is
    exactly why the bug is silent.
    """
    if not isinstance(module, MultiHeadAttention):
        raise TypeError(
            f"module must be a MultiHeadAttention, got {type(module).__name__}"
        )
    if not callable(split):
        raise TypeError(f"split must be callable, got {type(split).__name__}")
    check_tensor("query", query, ndim=3)
    B, T, d_model = query.shape
    if d_model != module.d_model:
        raise ValueError(
            f"query must have feature size d_model ({module.d_model}), "
            f"got {d_model}"
        )
    h = module.num_heads
    q = split(module.W_Q(query), h)
    k = split(module.W_K(query), h)
    v = split(module.W_V(query), h)
    ctx, weights = scaled_dot_product_attention(q, k, v)
    if ctx.dim() == 4:
        merged = merge_heads(ctx)  # (B, T, d_model)
    else:
        merged = ctx.reshape(B, T, d_model)  # (B, T, d_model)
    return module.W_O(merged), weights


def attend_flat(
    module: MultiHeadAttention, x: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """What a module using :func:`split_heads_flat` would return.

    ``weights`` is ``(B, T*h, T*h)``: one attention over every
    (position, head) row, so heads and positions attend to each other.
    """
    return attend_with_split(module, x, split_heads_flat)
