"""Argument checks shared by the modules of ``mha_ref``.

Checks raise ``TypeError``/``ValueError`` rather than using ``assert``:
``python -O`` strips asserts, and a learner's mistake should be named
(which argument, which values) instead of surfacing later as an opaque
shape error deep inside a matmul.
"""

from __future__ import annotations

import torch


def check_int(name: str, value: object, minimum: int = 1) -> int:
    """Return ``value`` if it is an int of at least ``minimum``.

    ``bool`` is rejected although it subclasses ``int``: ``True`` heads is
    a bug, not a size. Under ``torch.jit.trace`` a tensor's size is a 0-dim
    integer tensor; it is accepted there, and the check runs once, on its
    value at trace time (a trace records no Python ``if``).
    """
    if _is_traced_size(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"{name} must be an int, got {type(value).__name__} ({value!r})"
        )
    if value < minimum:
        bound = "positive" if minimum == 1 else f">= {minimum}"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return value


def check_head_split(d_model: object, num_heads: object) -> int:
    """Return ``d_k`` after checking that ``num_heads`` divides ``d_model``.

    Each head gets an equal ``d_k = d_model // num_heads`` slice of the
    features; a remainder would leave features that no head owns.
    """
    check_int("d_model", d_model)
    check_int("num_heads", num_heads)
    if d_model % num_heads:
        raise ValueError(
            f"d_model ({d_model}) must be divisible by num_heads ({num_heads})"
        )
    return d_model // num_heads


def check_tensor(name: str, value: object, ndim: int | None = None) -> None:
    """Raise unless ``value`` is a floating tensor (with ``ndim`` dims)."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor, got {type(value).__name__}"
        )
    if not value.is_floating_point():
        raise TypeError(
            f"{name} must be a floating-point tensor, got {value.dtype}"
        )
    if ndim is not None and value.dim() != ndim:
        raise ValueError(
            f"{name} must have {ndim} dims, got {value.dim()} "
            f"(shape {tuple(value.shape)})"
        )


def _is_traced_size(value: object) -> bool:
    return (
        torch.jit.is_tracing()
        and isinstance(value, torch.Tensor)
        and value.dim() == 0
        and not value.is_floating_point()
        and value.dtype != torch.bool
    )
