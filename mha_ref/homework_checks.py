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

import traceback
from pathlib import Path

import sympy
import torch
from torch import nn

from .attention import causal_mask
from .counting import count_parameters
from .mha import MultiHeadAttention
from .specialise import (
    RELATIONSHIPS,
    SPLIT_THRESHOLD,
    SpecialisingModel,
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
    "report",
]

# specialise.SPLIT_THRESHOLD (0.5) is where the heads have split at all;
# the homework asks for a clear majority, 0.75. Untrained heads score
# ~0.16 (uniform over t + 1 keys), trained ones ~0.99.
SPECIALISATION_THRESHOLD = 0.75

# (d_model, h) pairs for the numeric check: h = 1, h = d_model, and some
# in between, so a formula that is right only for one h is caught.
_SIZES = ((8, 1), (8, 2), (12, 3), (6, 6), (64, 8), (512, 8))


def report(task: int, check, *args) -> None:
    """Run one check and print ``PASS task N: ...`` or ``FAIL task N:
    ...``: a notebook cell shows what is still wrong, not a traceback,
    also when the student's code raises (the project's unfinished
    ``my_mha.py`` beside the homework is task 3's base class)."""
    try:
        print(f"PASS task {task}: {check(*args)}")
    except HomeworkCheckFailed as failed:
        print(f"FAIL task {task}: {failed}")
    except Exception as error:  # noqa: BLE001 - the student's code raised
        ours = (Path(__file__).parent, Path(torch.__file__).parent)
        frames = traceback.extract_tb(error.__traceback__)
        theirs = [
            f
            for f in frames
            if not Path(f.filename).is_relative_to(ours[0])
            and not Path(f.filename).is_relative_to(ours[1])
        ]
        where = (
            f" ({Path(theirs[-1].filename).name}:{theirs[-1].lineno} in "
            f"{theirs[-1].name})"
            if theirs
            else ""
        )
        print(
            f"FAIL task {task}: your code raised "
            f"{type(error).__name__}: {error}{where}"
        )


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
    model = _trusted_copy(model)
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
            if not torch.allclose(got.to(want.dtype), want, atol=1e-5):
                raise HomeworkCheckFailed(
                    f"attention_mass on the {name} model's "
                    f"'{relationship}' keys: expected "
                    f"{[round(v, 4) for v in want.tolist()]}, got "
                    f"{[round(v, 4) for v in got.tolist()]}. Index "
                    f"weights[b, i, t, keys[t]], keep rows t >= 2, and "
                    f"average over the batch and the rows."
                )
    figure = specialisation_figure(model, batch)
    if figure <= SPLIT_THRESHOLD:
        raise HomeworkCheckFailed(
            f"specialisation figure {figure:.3f}, not above "
            f"{SPLIT_THRESHOLD}: the heads have not split the two "
            f"relationships yet. Train for more steps (the loss should "
            f"fall near 0)."
        )
    if figure < SPECIALISATION_THRESHOLD:
        raise HomeworkCheckFailed(
            f"specialisation figure {figure:.3f}: above {SPLIT_THRESHOLD}, "
            f"so the heads have split the relationships, but not yet "
            f"clearly (the task asks for {SPECIALISATION_THRESHOLD}). "
            f"Train for more steps."
        )
    return (
        f"attention_mass matches; specialisation figure {figure:.3f} "
        f">= {SPECIALISATION_THRESHOLD}"
    )


def _trusted_copy(model) -> SpecialisingModel:
    """A ``SpecialisingModel`` holding ``model``'s trained weights: the
    figure is measured with this module's own code, not whatever
    ``model`` computes (a wrapper that returned one-hot "maps" from an
    untrained model passed: a student-cheat audit)."""
    state = getattr(model, "state_dict", None)
    trusted = SpecialisingModel()
    try:
        trusted.load_state_dict(state())
    except (TypeError, RuntimeError) as error:
        raise HomeworkCheckFailed(
            "model must be the SpecialisingModel that train() returned "
            f"(its weights did not load into one: {str(error)[:200]})"
        ) from None
    return trusted.eval()


def check_parameter_formula(per_head, w_o, total, h, d_k) -> str:
    """Task (b): the proof's terms and its sum, in symbols ``h, d_k``.

    ``per_head``: one head's slices of ``W_Q, W_K, W_V``; ``w_o``: the
    output projection; ``total``: the sum over heads plus ``w_o``.
    ``d_model = h * d_k`` encodes "h divides d_model", so an identity in
    ``h`` and ``d_k`` holds for every such pair. Each term is compared
    with the parameters of real modules, so a total right by luck (or
    typed as the answer) with wrong terms fails.
    """
    terms = {"per_head": per_head, "w_o": w_o, "total": total}
    ours = {"h": h, "d_k": d_k}
    for name, term in terms.items():
        if not isinstance(term, sympy.Expr):
            raise HomeworkCheckFailed(
                f"{name} must be a sympy expression in h and d_k, got "
                f"{type(term).__name__}"
            )
        # Symbols named h and d_k are these (sympify("3*h*d_k**2") makes
        # its own, without the notebook's assumptions); 3.0 is 3; a Sum
        # is its value (each was refused, or told to write d_model).
        term = term.doit().xreplace(
            {x: ours[x.name] for x in term.free_symbols if x.name in ours}
        )
        terms[name] = term = sympy.nsimplify(term)
        extra = term.free_symbols - {h, d_k}
        if extra:
            hint = (
                ": write d_model as h * d_k"
                if "d_model" in map(str, extra)
                else ""
            )
            raise HomeworkCheckFailed(
                f"{name} may use only the symbols h and d_k, found "
                f"{sorted(map(str, extra))}{hint}"
            )
    per_head, w_o, total = terms.values()
    for d_model, heads in _SIZES:
        module = MultiHeadAttention(d_model, heads)
        size = {h: heads, d_k: d_model // heads}
        d = d_model // heads
        counted = {
            # rows head 0 owns in each of W_Q, W_K, W_V (nn.Linear is out x in)
            "per_head": sum(
                getattr(module, name).weight[:d].numel()
                for name in ("W_Q", "W_K", "W_V")
            ),
            "w_o": module.W_O.weight.numel(),
            "total": count_parameters(module),
        }
        for name, term in terms.items():
            value = term.subs(size)
            if value != counted[name]:
                raise HomeworkCheckFailed(
                    f"for d_model={d_model}, h={heads} your {name} gives "
                    f"{value}, but the module holds {counted[name]} "
                    f"({_WHAT[name]})"
                )
    # Right at every size tried, and still not the count: terms made to
    # agree there only (3*d_model*d_k + P, d_model**2 - h*P with P zero
    # at those h) passed.
    for name, want in (
        ("per_head", 3 * h * d_k**2),
        ("w_o", (h * d_k) ** 2),
    ):
        off = sympy.expand(terms[name] - want)
        if off != 0:
            raise HomeworkCheckFailed(
                f"{name} matches the sizes tried, but not every h and d_k "
                f"(it is off by {off}): count {_WHAT[name]} in h and d_k"
            )
    if sympy.expand(total - (h * per_head + w_o)) != 0:
        raise HomeworkCheckFailed(
            "total is not the sum of the terms: h heads' slices plus W_O"
        )
    difference = sympy.expand(total - 4 * (h * d_k) ** 2)
    if difference != 0:
        raise HomeworkCheckFailed(
            f"total - 4*d_model**2 expands to {difference}, not 0: the "
            f"formula matches the sizes tried but is not 4*d_model**2 "
            f"for every h and d_k"
        )
    return (
        f"per_head = {sympy.factor(per_head)}, W_O = {sympy.factor(w_o)}; "
        f"total = {sympy.factor(total)} = 4*d_model**2 for every h, d_k; "
        f"each term matches real modules at {len(_SIZES)} sizes"
    )


_WHAT = {
    "per_head": "one head's slices of W_Q, W_K and W_V together",
    "w_o": "W_O",
    "total": "count_parameters",
}


#: (B, T) of task 3's calls: the first also has its future changed; the
#: rest catch a mask made for one length (T = 7 typed in, a fixed-size
#: mask that leaks past T = 8, a 16 x 16 one sliced: each passed).
_CAUSAL_SIZES = ((2, 7), (1, 1), (1, 3), (3, 12), (2, 20))
_D_MODEL, _H = 16, 4


def _torch_layer(module) -> nn.MultiheadAttention:
    """``nn.MultiheadAttention`` holding ``module``'s W_Q..W_O."""
    layer = nn.MultiheadAttention(_D_MODEL, _H, bias=False, batch_first=True)
    with torch.no_grad():
        stacked = [module.W_Q.weight, module.W_K.weight, module.W_V.weight]
        layer.in_proj_weight.copy_(torch.cat(stacked))  # (3d, d)
        layer.out_proj.weight.copy_(module.W_O.weight)
    return layer


def _torch_causal(module, x, grads=False):
    """Torch's layer with a causal mask on ``module``'s weights: (output,
    weights); with ``grads``, {name: gradient} of W_Q..W_O after a
    backward pass of output.sum() + weights.sum()."""
    layer, T = _torch_layer(module), x.size(1)
    out, weights = layer(
        x, x, x, attn_mask=~causal_mask(T, T), average_attn_weights=False
    )  # (B, T, d_model), (B, h, T, T)
    if not grads:
        return out.detach(), weights.detach()
    (out.sum() + weights.sum()).backward()
    q, k, v = layer.in_proj_weight.grad.chunk(3)  # each (d, d)
    return {"W_Q": q, "W_K": k, "W_V": v, "W_O": layer.out_proj.weight.grad}


def _base_problem(module, base, x, causal_out) -> str:
    """Why ``base`` itself (the student's project module) cannot give
    causal attention, or "": its forward without a mask, then with
    ``is_causal``, against torch (``causal_out``: torch's causal output
    on ``x``). A wrong base was blamed on the
    subclass's mask (bias=True, no 1/sqrt(d_k), mask_scores left as the
    TODO, the reshape trap)."""
    T = x.size(1)
    with torch.no_grad():
        plain, _ = base.forward(module, x, x, x)
        try:
            masked, _ = base.forward(module, x, x, x, is_causal=True)
        except TypeError:  # a forward without is_causal: its mask then
            masked, _ = base.forward(module, x, x, x, mask=causal_mask(T, T))
        want, _ = _torch_layer(module)(x, x, x)
    if not torch.allclose(plain, want, atol=1e-5):
        return (
            f"your {base.__name__} itself differs from "
            "torch.nn.MultiheadAttention without any mask: fix the "
            "project's module first (python -m mha_ref.grade my_mha.py "
            "names the milestone)"
        )
    if not torch.allclose(masked, causal_out, atol=1e-5):
        return (
            f"your {base.__name__} itself ignores or misapplies "
            "is_causal=True (or a causal mask): finish its mask_scores "
            "first (python -m mha_ref.grade my_mha.py, milestone causal)"
        )
    return ""


def check_causal_self_attention(cls, base=MultiHeadAttention) -> str:
    """Task (c): ``cls(d_model, h)(x)`` is causal self-attention built on
    ``base`` (the student's own module from the project, when there is
    one): no weight on a later key, the past unchanged by the future,
    outputs, per-head weights and gradients equal to
    ``nn.MultiheadAttention`` with a causal mask on the same weights, at
    every length, and ``base.forward`` does the work.

    ``cls.forward(x)`` returns ``(output, weights)`` like ``base``'s.
    """
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise HomeworkCheckFailed(
            f"expected a subclass of {base.__module__}.{base.__name__}, "
            f"got {cls!r}"
        )
    generator = torch.Generator().manual_seed(0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        module = cls(_D_MODEL, _H)
    # Built on the module: its forward runs (torch's own layer, or the
    # attention written out again from W_Q..W_O, passed).
    calls = []
    own = "forward" in vars(base)
    forward = base.forward

    def counted(self, *args, **kwargs):
        calls.append(1)
        return forward(self, *args, **kwargs)

    base.forward = counted
    try:
        return _check_causal(module, base, generator, calls)
    finally:
        if own:
            base.forward = forward
        else:
            del base.forward


def _check_causal(module, base, generator, calls) -> str:
    for B, T in _CAUSAL_SIZES:
        x = torch.randn(B, T, _D_MODEL, generator=generator)  # (B, T, d)
        where = f"at B={B}, T={T}"
        with torch.no_grad():
            out, weights = module(x)  # (B, T, d_model), (B, h, T, T)
        if not calls:
            raise HomeworkCheckFailed(
                f"forward never runs your {base.__name__}'s forward: build "
                "on it (super().forward(x, x, x, ...)), not on another "
                "layer or a copy of its computation"
            )
        if tuple(weights.shape) != (B, _H, T, T):
            raise HomeworkCheckFailed(
                f"weights are {tuple(weights.shape)} {where}, expected "
                f"{(B, _H, T, T)} = (B, h, T, T): return the per-head "
                "weights"
            )
        want, want_weights = _torch_causal(module, x)
        if torch.allclose(weights, want_weights, atol=1e-5) and torch.allclose(
            out, want, atol=1e-5
        ):
            continue
        if problem := _base_problem(module, base, x, want):
            raise HomeworkCheckFailed(problem)
        if weights.isnan().any():
            raise HomeworkCheckFailed(
                f"the weights hold NaN {where}: a row with every key "
                "blocked; position t may see positions 0..t, itself "
                "included (causal_mask(T, T) keeps the diagonal)"
            )
        future = ~causal_mask(T, T)  # (T, T), True above the diagonal
        leak = weights[..., future].abs().max().item() if T > 1 else 0.0
        if leak != 0.0:
            raise HomeworkCheckFailed(
                f"a query attends to a later position {where} (largest "
                f"weight above the diagonal: {leak:.3f}); expected 0: "
                "position t may see positions 0..t only (a mask is True "
                "where a query may attend, and boolean: causal_mask(T, T) "
                "is True on and below the diagonal; a float mask is added "
                "to the scores)"
            )
        # The output can leak where the weights returned do not.
        cut = (T + 1) // 2  # positions cut.. changed, 0..cut-1 compared
        changed = x.clone()
        changed[:, cut:] = torch.randn(
            B, T - cut, _D_MODEL, generator=generator
        )
        with torch.no_grad():
            out_changed, _ = module(changed)
        if not torch.allclose(out[:, :cut], out_changed[:, :cut], atol=1e-6):
            raise HomeworkCheckFailed(
                f"changing positions {cut}..{T - 1} changed the outputs at "
                f"0..{cut - 1} {where}: the future leaks into the past; "
                "expected identical outputs"
            )
        if not torch.allclose(weights, want_weights, atol=1e-5):
            raise HomeworkCheckFailed(
                "the weights differ from torch.nn.MultiheadAttention's "
                f"with a causal mask on the same weights {where}: block "
                "exactly the later positions, and change nothing else"
            )
        raise HomeworkCheckFailed(
            "the output differs from torch.nn.MultiheadAttention with a "
            f"causal mask on the same weights {where}: use x as query, "
            "key and value, and change nothing but the mask"
        )
    # Trained as a decoder layer: its output carries the gradients (a
    # forward under torch.no_grad(), or detached, passed).
    x = torch.randn(2, 7, _D_MODEL, generator=generator)
    for p in module.parameters():
        p.grad = None
    out, weights = module(x)
    if not (out.requires_grad and weights.requires_grad):
        raise HomeworkCheckFailed(
            "the output or weights carry no gradient: a causal "
            "self-attention layer is trained; no torch.no_grad() or "
            ".detach() in forward"
        )
    (out.sum() + weights.sum()).backward()
    want = _torch_causal(module, x, grads=True)
    for name, grad in want.items():
        got = getattr(module, name).weight.grad
        if got is None or not torch.allclose(got, grad, atol=1e-4):
            raise HomeworkCheckFailed(
                f"after a backward pass the gradient of {name} differs "
                "from torch.nn.MultiheadAttention's with a causal mask: "
                "the graph is cut or changed in forward"
            )
    theirs = (
        ""
        if not base.__module__.startswith("mha_ref")
        else " (on mha_ref's module, not yours: save the project's "
        "my_mha.py beside this notebook and run task 3 again to check "
        "it on your own)"
    )
    sizes = ", ".join(f"T={T}" for _, T in _CAUSAL_SIZES)
    return (
        f"{base.__name__} from {base.__module__}: no weight above the "
        f"diagonal, the past ignores the future, and outputs, weights and "
        f"gradients equal torch's causal MultiheadAttention at {sizes}"
        f"{theirs}"
    )
