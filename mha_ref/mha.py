"""Multi-head attention: the module the lesson builds, and its tests' twin.

Slides include the marked sections of this file (``--8<--``), so the code
on the slide is the code the tests run. Argument checks live in helpers
outside the class to keep the projected code lesson-sized.

Weights are exchanged with ``torch.nn.MultiheadAttention`` so the tests
can check this module against PyTorch's own implementation.
"""

from __future__ import annotations

# --8<-- [start:imports]
import torch
from torch import nn

# --8<-- [end:imports]
from ._checks import check_head_split, check_tensor
from .attention import scaled_dot_product_attention

__all__ = [
    "MultiHeadAttention",
    "from_torch_mha",
    "merge_heads",
    "single_head_attention",
    "split_heads",
    "to_torch_mha",
]


# --8<-- [start:split]
def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """``(B, T, d_model) -> (B, h, T, d_k)``: each head sees every position.

    The view cuts each position's features into ``h`` slices of ``d_k``;
    the transpose then puts the head axis before the sequence axis so one
    batched matmul runs all heads at once.
    """
    _check_split_input(x, num_heads)
    B, T, d_model = x.shape
    d_k = d_model // num_heads
    x = x.view(B, T, num_heads, d_k)  # (B, T, h, d_k)
    return x.transpose(1, 2)  # (B, h, T, d_k)


# --8<-- [end:split]


# --8<-- [start:merge]
def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """``(B, h, T, d_k) -> (B, T, h*d_k)``: undo :func:`split_heads`.

    ``.contiguous()`` is needed because the transpose only swaps strides;
    ``.view`` can merge the last two axes only once they are adjacent in
    memory.
    """
    check_tensor("x", x, ndim=4)
    B, h, T, d_k = x.shape
    x = x.transpose(1, 2).contiguous()  # (B, T, h, d_k)
    return x.view(B, T, h * d_k)  # (B, T, d_model)


# --8<-- [end:merge]


# --8<-- [start:class]
class MultiHeadAttention(nn.Module):
    """``h`` heads of scaled dot-product attention, run as one batch."""

    # --8<-- [start:init]
    def __init__(self, d_model: int, num_heads: int) -> None:
        super().__init__()
        check_head_split(d_model, num_heads)  # h must divide d_model
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.W_Q = nn.Linear(d_model, d_model, bias=False)
        self.W_K = nn.Linear(d_model, d_model, bias=False)
        self.W_V = nn.Linear(d_model, d_model, bias=False)
        self.W_O = nn.Linear(d_model, d_model, bias=False)

    # --8<-- [end:init]

    # --8<-- [start:forward]
    def forward(self, query, key, value, mask=None, is_causal=False):
        _check_inputs(self, query, key, value, mask)
        h = self.num_heads
        # Each tensor is split by its own length: T_q may differ from T_k.
        q = split_heads(self.W_Q(query), h)  # (B, h, T_q, d_k)
        k = split_heads(self.W_K(key), h)  # (B, h, T_k, d_k)
        v = split_heads(self.W_V(value), h)  # (B, h, T_k, d_k)
        ctx, weights = scaled_dot_product_attention(
            q, k, v, mask=mask, is_causal=is_causal
        )  # ctx (B, h, T_q, d_k), weights (B, h, T_q, T_k)
        output = self.W_O(merge_heads(ctx))  # (B, T_q, d_model)
        return output, weights

    # --8<-- [end:forward]


# --8<-- [end:class]


def single_head_attention(
    x_q: torch.Tensor,
    x_kv: torch.Tensor,
    W_Q: torch.Tensor,
    W_K: torch.Tensor,
    W_V: torch.Tensor,
    W_O: torch.Tensor,
    mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One head from explicit ``(d_model, d_model)`` matrices.

    Matrices act as ``x @ W`` (the lesson's formulas), which is the
    transpose of ``nn.Linear``'s storage: pass ``linear.weight.T``. With
    ``num_heads=1`` the module must reduce to exactly this.
    """
    check_tensor("x_q", x_q)
    check_tensor("x_kv", x_kv)
    d_model = x_q.size(-1)
    if x_kv.size(-1) != d_model:
        raise ValueError(
            f"x_kv must have feature size d_model ({d_model}), "
            f"got {x_kv.size(-1)}"
        )
    for name, w in (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V), ("W_O", W_O)):
        check_tensor(name, w, ndim=2)
        if tuple(w.shape) != (d_model, d_model):
            raise ValueError(
                f"{name} must have shape ({d_model}, {d_model}), "
                f"got {tuple(w.shape)}"
            )
    q = x_q @ W_Q  # (..., T_q, d_model)
    k = x_kv @ W_K  # (..., T_k, d_model)
    v = x_kv @ W_V  # (..., T_k, d_model)
    ctx, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    return ctx @ W_O, weights  # (..., T_q, d_model), (..., T_q, T_k)


def to_torch_mha(module: MultiHeadAttention) -> nn.MultiheadAttention:
    """Copy ``module`` into an equivalent ``torch.nn.MultiheadAttention``.

    PyTorch keeps the three input projections stacked as rows of one
    ``in_proj_weight`` (``[W_Q; W_K; W_V]``, each in ``nn.Linear``'s
    ``(out, in)`` layout) and ``W_O`` as ``out_proj``. Remember its
    boolean masks mean ``True`` = blocked, the opposite of ours.
    """
    if not isinstance(module, MultiHeadAttention):
        raise TypeError(
            f"module must be a MultiHeadAttention, got {type(module).__name__}"
        )
    ref = module.W_Q.weight
    torch_mha = nn.MultiheadAttention(
        module.d_model,
        module.num_heads,
        bias=False,
        batch_first=True,
        device=ref.device,
        dtype=ref.dtype,
    )
    with torch.no_grad():
        stacked = torch.cat(
            [module.W_Q.weight, module.W_K.weight, module.W_V.weight]
        )  # (3 * d_model, d_model)
        torch_mha.in_proj_weight.copy_(stacked)
        torch_mha.out_proj.weight.copy_(module.W_O.weight)
    return torch_mha


def from_torch_mha(torch_mha: nn.MultiheadAttention) -> MultiHeadAttention:
    """Copy a bias-free ``torch.nn.MultiheadAttention`` into our module.

    Only modules that compute what ours computes are accepted: no biases
    (including ``add_bias_kv``), no ``add_zero_attn``, and one embedding
    size for query, key and value. Its ``batch_first`` and dropout do not
    change the weights, so they are not checked (ours is batch-first and
    has no dropout).
    """
    if not isinstance(torch_mha, nn.MultiheadAttention):
        raise TypeError(
            f"torch_mha must be a torch.nn.MultiheadAttention, "
            f"got {type(torch_mha).__name__}"
        )
    d_model = torch_mha.embed_dim
    if torch_mha.kdim != d_model or torch_mha.vdim != d_model:
        raise ValueError(
            f"kdim ({torch_mha.kdim}) and vdim ({torch_mha.vdim}) must "
            f"equal embed_dim ({d_model}): MultiHeadAttention projects "
            f"query, key and value from the same d_model"
        )
    has_bias = (
        torch_mha.in_proj_bias is not None
        or torch_mha.out_proj.bias is not None
        or torch_mha.bias_k is not None
    )
    if has_bias:
        raise ValueError(
            "torch_mha has biases (bias=True or add_bias_kv=True); "
            "MultiHeadAttention is bias-free, create it with bias=False"
        )
    if torch_mha.add_zero_attn:
        raise ValueError(
            "torch_mha has add_zero_attn=True, which MultiHeadAttention "
            "does not compute"
        )
    ref = torch_mha.in_proj_weight
    module = MultiHeadAttention(d_model, torch_mha.num_heads)
    module = module.to(device=ref.device, dtype=ref.dtype)
    w_q, w_k, w_v = ref.chunk(3)  # each (d_model, d_model)
    with torch.no_grad():
        module.W_Q.weight.copy_(w_q)
        module.W_K.weight.copy_(w_k)
        module.W_V.weight.copy_(w_v)
        module.W_O.weight.copy_(torch_mha.out_proj.weight)
    return module


def _check_split_input(x: object, num_heads: object) -> None:
    check_tensor("x", x, ndim=3)
    check_head_split(x.size(-1), num_heads)


def _check_inputs(module, query, key, value, mask) -> None:
    """Name the mistake before it becomes a shape error inside a matmul.

    The sizes are compared with ``==``, never collected in a ``set``:
    under ``torch.jit.trace`` a size is a traced value hashed by identity,
    and under ``torch.export`` a dynamic size is a symbol that cannot be
    hashed at all.
    """
    d_model = module.d_model
    dtype = module.W_Q.weight.dtype
    for name, t in (("query", query), ("key", key), ("value", value)):
        check_tensor(name, t)
        if t.dim() != 3:
            raise ValueError(
                f"{name} must have 3 dims (B, T, d_model), got shape "
                f"{tuple(t.shape)}"
            )
        if t.size(-1) != d_model:
            raise ValueError(
                f"{name} must have feature size d_model ({d_model}), "
                f"got {t.size(-1)} (shape {tuple(t.shape)})"
            )
        if t.dtype != dtype:
            raise TypeError(
                f"{name} has dtype {t.dtype} but the module's weights are "
                f"{dtype}: convert one, e.g. {name}.to({dtype})"
            )
    if not query.size(0) == key.size(0) == value.size(0):
        raise ValueError(
            "query, key and value must have the same batch size B, got "
            f"{query.size(0)}, {key.size(0)} and {value.size(0)}"
        )
    if key.size(1) != value.size(1):
        raise ValueError(
            f"key and value must have the same length T_k, got "
            f"{key.size(1)} and {value.size(1)}"
        )
    if isinstance(mask, torch.Tensor) and mask.dim() not in (1, 2, 4):
        # A 3-D mask would broadcast its first axis against the heads, not
        # the batch (and torch's MHA reads 3-D as (B*h, T_q, T_k)).
        raise ValueError(
            f"mask must have 1 dim (T_k,), 2 dims (T_q, T_k) or 4 dims "
            f"(B or 1, h or 1, T_q, T_k), got shape {tuple(mask.shape)}"
        )
