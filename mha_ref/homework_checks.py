"""The checks a student runs in the homework notebook.

Each ``check_*`` function returns a short success line, or raises
:class:`HomeworkCheckFailed` saying what was expected, what was found and
where to look. The starter notebook fails every check (its TODOs are
placeholders that run but are wrong); the solutions pass them all. The
checks compare the student's work with independent references: the
module's own parameter count, ``torch.nn.MultiheadAttention`` with a
causal mask, and :mod:`mha_ref.specialise`'s measurement.
"""

from __future__ import annotations

import sympy
import torch

from .attention import causal_mask
from .counting import count_parameters
from .mha import MultiHeadAttention, to_torch_mha
from .specialise import (
    RELATIONSHIPS,
    head_masses,
    held_out_batch,
    relationship_keys,
    specialisation_figure,
    train,
)

__all__ = [
    "SPECIALISATION_THRESHOLD",
    "HomeworkCheckFailed",
    "check_causal_self_attention",
    "check_parameter_formula",
    "check_specialisation",
]

# A head that served both relationships could give each at most half of
# its attention, so a figure above 0.5 means each relationship has a head
# of its own; 0.75 asks for a clear majority. Untrained heads score ~0.16
# (uniform over t + 1 keys), trained ones ~0.99 (see mha_ref.specialise).
SPECIALISATION_THRESHOLD = 0.75

# (d_model, h) pairs for the numeric check: h = 1, h = d_model, and some
# in between, so a formula that is right only for one h is caught.
_SIZES = ((8, 1), (8, 2), (12, 3), (6, 6), (64, 8), (512, 8))


class HomeworkCheckFailed(AssertionError):
    """A homework check found the work incomplete or wrong."""


def check_specialisation(model, attention_mass) -> str:
    """Task (a): ``attention_mass`` is right and ``model``'s heads split.

    ``attention_mass(weights, keys)`` takes weights ``(B, h, T, T)`` and
    ``keys`` ``(T,)`` (the key each query row should read) and returns the
    ``(h,)`` mean weight on those keys over the batch and rows ``t >= 2``.
    """
    batch = held_out_batch()
    untrained, _ = train(seed=0, steps=0, cache_dir=None)
    for name, candidate in (("untrained", untrained), ("your", model)):
        with torch.no_grad():
            _, weights = candidate(batch.tokens)  # (B, h, T, T)
        expected = head_masses(candidate, batch)  # (h, R)
        keys = relationship_keys(weights.size(-1))  # (R, T)
        for r, relationship in enumerate(RELATIONSHIPS):
            got = attention_mass(weights, keys[r])
            want = expected[:, r]
            if not isinstance(got, torch.Tensor) or got.shape != want.shape:
                shape = getattr(got, "shape", type(got).__name__)
                raise HomeworkCheckFailed(
                    f"attention_mass must return a tensor of shape "
                    f"{tuple(want.shape)} (one mass per head), got {shape}"
                )
            if not torch.allclose(got, want, atol=1e-5):
                raise HomeworkCheckFailed(
                    f"attention_mass on the {name} model's "
                    f"'{relationship}' keys: expected "
                    f"{[round(v, 4) for v in want.tolist()]}, got "
                    f"{[round(v, 4) for v in got.tolist()]}. Index "
                    f"weights[b, i, t, keys[t]], keep rows t >= 2, and "
                    f"average over the batch and the rows."
                )
    figure = specialisation_figure(model, batch)
    if figure < SPECIALISATION_THRESHOLD:
        raise HomeworkCheckFailed(
            f"specialisation figure {figure:.3f} is below "
            f"{SPECIALISATION_THRESHOLD}: the heads have not split the "
            f"two relationships. Train for more steps (the loss should "
            f"fall near 0)."
        )
    return (
        f"attention_mass matches; specialisation figure {figure:.3f} "
        f">= {SPECIALISATION_THRESHOLD}"
    )


def check_parameter_formula(total, h, d_k) -> str:
    """Task (b): ``total`` is the parameter count in symbols ``h, d_k``.

    ``d_model = h * d_k`` encodes "h divides d_model", so an identity in
    ``h`` and ``d_k`` holds for every such pair.
    """
    if not isinstance(total, sympy.Expr):
        raise HomeworkCheckFailed(
            f"total must be a sympy expression in h and d_k, got "
            f"{type(total).__name__}"
        )
    extra = total.free_symbols - {h, d_k}
    if extra:
        raise HomeworkCheckFailed(
            f"total may use only the symbols h and d_k, found "
            f"{sorted(map(str, extra))}: write d_model as h * d_k"
        )
    for d_model, heads in _SIZES:
        counted = count_parameters(MultiHeadAttention(d_model, heads))
        value = total.subs({h: heads, d_k: d_model // heads})
        if value != counted:
            raise HomeworkCheckFailed(
                f"for d_model={d_model}, h={heads} your total gives "
                f"{value} but the module holds {counted} parameters "
                f"(count_parameters). Count W_Q, W_K, W_V per head "
                f"(d_model x d_k each) and W_O (d_model x d_model)."
            )
    difference = sympy.expand(total - 4 * (h * d_k) ** 2)
    if difference != 0:
        raise HomeworkCheckFailed(
            f"total - 4*d_model**2 expands to {difference}, not 0: the "
            f"formula matches the sizes tried but is not 4*d_model**2 "
            f"for every h and d_k"
        )
    return (
        f"total = {sympy.factor(total)} = 4*d_model**2 for every h, d_k; "
        f"matches count_parameters for {len(_SIZES)} sizes"
    )


def check_causal_self_attention(cls) -> str:
    """Task (c): ``cls(d_model, h)(x)`` is causal self-attention.

    ``cls`` must subclass :class:`MultiHeadAttention`, and its
    ``forward(x)`` return ``(output, weights)`` like the parent's.
    """
    if not (isinstance(cls, type) and issubclass(cls, MultiHeadAttention)):
        raise HomeworkCheckFailed(
            f"expected a subclass of MultiHeadAttention, got {cls!r}"
        )
    generator = torch.Generator().manual_seed(0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        module = cls(16, 4)
    x = torch.randn(2, 7, 16, generator=generator)  # (B, T, d_model)
    with torch.no_grad():
        out, weights = module(x)  # (B, T, d_model), (B, h, T, T)
    future = ~causal_mask(7, 7)  # (T, T), True above the diagonal
    leak = weights[..., future].abs().max().item()
    if leak != 0.0:
        raise HomeworkCheckFailed(
            f"a query attends to a later position (largest weight above "
            f"the diagonal: {leak:.3f}); expected 0. Pass a causal mask "
            f"(mha_ref.causal_mask(T, T)) or is_causal=True to "
            f"MultiHeadAttention.forward."
        )
    changed = x.clone()
    changed[:, 4:] = torch.randn(2, 3, 16, generator=generator)
    with torch.no_grad():
        out_changed, _ = module(changed)
    if not torch.allclose(out[:, :4], out_changed[:, :4], atol=1e-6):
        raise HomeworkCheckFailed(
            "changing positions 4..6 changed the outputs at 0..3: the "
            "future leaks into the past; expected identical outputs"
        )
    reference = to_torch_mha(module)
    with torch.no_grad():
        want, _ = reference(x, x, x, attn_mask=future, need_weights=False)
    if not torch.allclose(out, want, atol=1e-5):
        raise HomeworkCheckFailed(
            "the output differs from torch.nn.MultiheadAttention with a "
            "causal mask on the same weights: use x as query, key and "
            "value, and change nothing but the mask"
        )
    return (
        "no weight above the diagonal, the past ignores the future, and "
        "the output equals torch's causal MultiheadAttention"
    )
