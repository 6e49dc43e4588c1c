"""Scaled dot-product attention, written out step by step.

This is the readable manual path (as in nanoGPT): every step of
``softmax(Q K^T / sqrt(d_k)) V`` is one line, so a slide can show the
formula and the code that implements exactly it. The tests check it
against PyTorch's fused ``F.scaled_dot_product_attention``.

Mask convention (the same as ``F.scaled_dot_product_attention``):

* a **boolean** mask is ``True`` where a query **may attend** to a key;
* a **float** mask is **added** to the scores (``-inf`` blocks a key).

``torch.nn.MultiheadAttention`` uses the opposite boolean convention
(``True`` = blocked) for both ``attn_mask`` and ``key_padding_mask``:
pass it ``~mask`` when converting.

Both kinds, and ``is_causal``, act the same way: as a bias of ``0`` or
``-inf`` **added** to the scores. So a boolean mask and the equivalent
float mask give identical results, NaN included: a mask blocks a key's
*weight*, it does not hide a NaN. A NaN in a blocked key makes its score
``NaN + -inf = NaN``, and the query's whole row becomes NaN, exactly as in
``F.scaled_dot_product_attention`` and ``nn.MultiheadAttention``. (A NaN
in a blocked *value* spreads too, since ``0 * NaN = NaN`` in the matmul.)
Padding must therefore hold finite numbers, e.g. zeros, never NaN.

Fully masked rows: a query row that may attend to no key at all (every
score ``-inf``) gets a row of zero weights and a zero output, never NaN;
the gradient through such a row is zero. A plain softmax would compute
``0 / 0`` there. ``F.scaled_dot_product_attention`` (torch==2.13.0, the
pin) does the same, and the tests check the two agree.
"""

from __future__ import annotations

import math

import torch

from ._checks import check_int, check_tensor

__all__ = ["causal_mask", "padding_mask", "scaled_dot_product_attention"]


def causal_mask(
    t_q: int, t_k: int, device: torch.device | str | None = None
) -> torch.Tensor:
    """Boolean ``(t_q, t_k)`` mask, ``True`` where query ``i`` sees key ``j``.

    Top-left aligned (``j <= i``), like ``is_causal=True`` in
    ``F.scaled_dot_product_attention``: query ``i`` sees keys ``0 .. i``,
    also when ``t_q != t_k``.
    """
    check_int("t_q", t_q)
    check_int("t_k", t_k)
    allowed = torch.ones(t_q, t_k, dtype=torch.bool, device=device)
    return allowed.tril()  # (t_q, t_k)


def padding_mask(lengths, t_k: int) -> torch.Tensor:
    """Boolean ``(B, 1, 1, t_k)`` mask, ``True`` for real tokens.

    The two singleton axes broadcast over heads and query positions, so
    the mask drops straight into ``MultiHeadAttention(..., mask=...)``.
    A length of 0 masks a whole sequence: see the fully-masked-row rule in
    the module docstring.
    """
    check_int("t_k", t_k)
    if isinstance(lengths, torch.Tensor):
        if lengths.dtype.is_floating_point or lengths.dtype == torch.bool:
            raise TypeError(
                f"lengths must hold integers, got dtype {lengths.dtype}"
            )
        lengths_t = lengths
    else:
        values = list(lengths)
        for i, n in enumerate(values):
            check_int(f"lengths[{i}]", n, minimum=0)
        lengths_t = torch.tensor(values, dtype=torch.long)
    if lengths_t.dim() != 1:
        raise ValueError(
            f"lengths must be 1-D (one length per sequence), got shape "
            f"{tuple(lengths_t.shape)}"
        )
    bad = (lengths_t < 0) | (lengths_t > t_k)
    if bad.any():
        raise ValueError(
            f"every length must lie in 0..t_k ({t_k}), got "
            f"{lengths_t.tolist()}"
        )
    positions = torch.arange(t_k, device=lengths_t.device)  # (t_k,)
    real = positions < lengths_t[:, None]  # (B, t_k)
    return real[:, None, None, :]  # (B, 1, 1, t_k)


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    is_causal: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Return ``(output (..., T_q, d_v), weights (..., T_q, T_k))``.

    ``q`` is ``(..., T_q, d_k)``, ``k`` is ``(..., T_k, d_k)``, ``v`` is
    ``(..., T_k, d_v)``. ``mask`` follows the convention in the module
    docstring and must broadcast to ``(..., T_q, T_k)``. ``is_causal``
    adds a top-left aligned causal mask (query ``i`` sees keys ``0..i``,
    also when ``T_q != T_k``), and may be combined with ``mask``: both
    must allow a key, which a padded decoder needs.
    ``F.scaled_dot_product_attention`` documents an error for
    ``attn_mask`` with ``is_causal=True``: there the caller passes the
    two combined, ``causal & mask`` (snippets/53_causal_alignment.py
    checks the results agree); ``nn.MultiheadAttention`` takes
    ``is_causal`` only as a hint about its ``attn_mask``, which it then
    requires.
    """
    _check_qkv(q, k, v)
    if not isinstance(is_causal, bool):
        raise TypeError(
            f"is_causal must be a bool, got {type(is_causal).__name__}"
        )
    d_k = q.size(-1)
    # Dividing by sqrt(d_k) keeps the scores from growing with d_k (for
    # independent q and k components of variance 1, q . k has variance
    # d_k), so the softmax does not saturate as heads get wider.
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., T_q, T_k)
    if mask is not None:
        _check_mask(mask, scores)
        scores = scores + _as_bias(mask, scores.dtype)
    if is_causal:
        t_q, t_k = scores.shape[-2:]
        allowed = causal_mask(t_q, t_k, device=scores.device)
        scores = scores + _as_bias(allowed, scores.dtype)
    weights = _softmax_rows(scores)  # (..., T_q, T_k)
    return weights @ v, weights  # (..., T_q, d_v), (..., T_q, T_k)


def _as_bias(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The additive form of ``mask``: ``0`` where allowed, ``-inf`` where not.

    Adding (rather than ``masked_fill``) keeps a NaN score NaN, so a bool
    mask acts exactly like its float twin and like PyTorch's masks.
    """
    if mask.dtype != torch.bool:
        return mask  # already a bias
    zeros = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
    return zeros.masked_fill(~mask, float("-inf"))  # mask's shape


def _softmax_rows(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over keys that gives all-zero weights to all-``-inf`` rows.

    Such a row has no key to attend to; a plain softmax would return
    ``0 / 0 = NaN`` there and poison every later layer and gradient.
    """
    dead = torch.isneginf(scores).all(dim=-1, keepdim=True)  # (..., T_q, 1)
    weights = torch.softmax(scores.masked_fill(dead, 0.0), dim=-1)
    return weights.masked_fill(dead, 0.0)  # (..., T_q, T_k)


def _check_qkv(q: object, k: object, v: object) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_tensor(name, t)
        if t.dim() < 2:
            raise ValueError(
                f"{name} must have at least 2 dims (..., T, d), got shape "
                f"{tuple(t.shape)}"
            )
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(
            f"q, k, v must share a dtype, got {q.dtype}, {k.dtype}, {v.dtype}"
        )
    if q.size(-1) == 0:
        raise ValueError("d_k must be positive, got q with last dim 0")
    if q.size(-1) != k.size(-1):
        raise ValueError(
            f"q and k must have the same last dim d_k, got {q.size(-1)} "
            f"and {k.size(-1)}"
        )
    if k.size(-2) != v.size(-2):
        raise ValueError(
            f"k and v must have the same length T_k, got {k.size(-2)} "
            f"and {v.size(-2)}"
        )
    if not q.shape[:-2] == k.shape[:-2] == v.shape[:-2]:
        raise ValueError(
            f"q, k, v must have the same leading (batch) dims, got "
            f"{tuple(q.shape[:-2])}, {tuple(k.shape[:-2])}, "
            f"{tuple(v.shape[:-2])}"
        )


def _check_mask(mask: object, scores: torch.Tensor) -> None:
    if not isinstance(mask, torch.Tensor):
        raise TypeError(
            f"mask must be a torch.Tensor or None, got {type(mask).__name__}"
        )
    if mask.dtype != torch.bool and mask.dtype != scores.dtype:
        raise TypeError(
            f"mask must be bool (True = may attend) or float of the "
            f"scores' dtype {scores.dtype} (added to the scores), "
            f"got {mask.dtype}"
        )
    try:
        shape = torch.broadcast_shapes(mask.shape, scores.shape)
    except RuntimeError:
        shape = None
    if shape != scores.shape:
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} does not broadcast to the "
            f"scores' shape {tuple(scores.shape)} (..., T_q, T_k)"
        )
