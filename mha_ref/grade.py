"""Grade a student's ``MultiHeadAttention``, one line per milestone.

Usage::

    python -m mha_ref.grade path/to/my_mha.py

The file must define ``MultiHeadAttention(d_model, num_heads)`` with four
bias-free ``nn.Linear`` layers ``W_Q, W_K, W_V, W_O`` and
``forward(query, key, value, mask=None, is_causal=False)`` returning
``(output (B, T_q, d_model), weights (B, h, T_q, T_k))``, the interface
of the project slides. Masks follow ``mha_ref``: ``True`` = may attend.

Why each milestone exists: shapes and parameter counts cannot see the
lesson's silent traps (a wrong head split keeps every shape), and at
``h = 1`` most wrong splits *are* the right one. So values are compared
at ``h > 1`` against ``torch.nn.MultiheadAttention`` holding the
student's own weights, an implementation that shares no code with the
student's. When values differ, the grader recomputes the reference with
each known bug (:data:`SUSPECTS`) and names the one that reproduces the
student's numbers.

A broken module never crashes the grader: a syntax error, an exception
or a forward that never returns is reported with the student's file and
line. The exit status is 0 only if every milestone passes.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import inspect
import math
import os
import sys
import threading
import traceback
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from .attention import causal_mask, padding_mask
from .mha import merge_heads, single_head_attention, split_heads
from .traps import split_heads_direct_view, split_heads_transpose_first

PROJECTIONS = ("W_Q", "W_K", "W_V", "W_O")
SIGNATURE = "forward(query, key, value, mask=None, is_causal=False)"
TIMEOUT_S = 20.0  # per milestone; a correct module needs well under 1 s
ATOL = 1e-5  # float32: slides/49-milestone-3-h-1-equivalence.html


class Failed(Exception):
    """A milestone's verdict: what differed, and the likely cause."""


class TimedOut(Exception):
    """The student's code did not return within the time limit."""


# --- the milestones ----------------------------------------------------


def check_skeleton(cls: type) -> str:
    """Milestone 1: four bias-free (d, d) Linears, 4·d² parameters, and a
    ``ValueError`` when h does not divide d_model."""
    d_model = 32
    module = cls(d_model, 4)
    _check_projections(module, d_model)
    count = sum(p.numel() for p in module.parameters())
    if count != 4 * d_model**2:
        raise Failed(
            f"{count:,} parameters at d_model=32, expected 4,096 = 4*32^2: "
            f"the module holds parameters besides W_Q, W_K, W_V, W_O"
        )
    try:
        cls(10, 4)
    except ValueError:
        pass
    except AssertionError:
        raise Failed(
            "MultiHeadAttention(10, 4) raised AssertionError: python -O "
            "strips asserts; raise ValueError naming d_model and num_heads"
        ) from None
    except Exception as error:
        raise Failed(
            f"MultiHeadAttention(10, 4) raised {type(error).__name__}: "
            f"{error}; raise ValueError when d_model % num_heads != 0"
        ) from None
    else:
        raise Failed(
            "MultiHeadAttention(10, 4) was accepted: 4 heads cannot share "
            "10 features; raise ValueError when d_model % num_heads != 0"
        )
    return "W_Q, W_K, W_V, W_O bias-free; 4,096 = 4*32^2; (10, 4) refused"


def check_shapes(cls: type) -> str:
    """Milestone 2: ``(B, T, d_model)`` out, ``(B, h, T, T)`` weights."""
    module = _build(cls, 8, 2)
    x = _inputs(2, 5)
    out, weights = _forward(module, x, x, x)
    _check_shapes(out, weights, (2, 5, 8), (2, 2, 5, 5))
    return "output (2, 5, 8), weights (2, 2, 5, 5)"


def check_one_head(cls: type) -> str:
    """Milestone 3: at h=1 the module is single-head attention."""
    module = _build(cls, 8, 1)
    x = _inputs(2, 5)
    out, weights = _forward(module, x, x, x)
    _check_shapes(out, weights, (2, 5, 8), (2, 1, 5, 5))
    w = {name: getattr(module, name).weight.T for name in PROJECTIONS}
    want_out, want_weights = single_head_attention(
        x, x, w["W_Q"], w["W_K"], w["W_V"], w["W_O"]
    )  # (B, T, d_model), (B, T, T)
    want = (want_out, want_weights[:, None])  # weights (B, 1, T, T)
    _compare(
        module, (x, x, x), (out, weights), want, {}, "at h=1",
        otherwise="compute softmax(q @ k.transpose(-2, -1) / sqrt(d_k)) "
        "over dim=-1, then @ v, then W_O (nn.Linear computes x @ weight.T)",
    )  # fmt: skip
    return "equals single-head attention with the same weights"


def check_many_heads(cls: type) -> str:
    """Values at h>1 against ``nn.MultiheadAttention``: the check that
    sees a wrong head split, merge or scale."""
    for h in (2, 4):
        module = _build(cls, 8, h)
        x = _inputs(2, 5)
        out, weights = _forward(module, x, x, x)
        _check_shapes(out, weights, (2, 5, 8), (2, h, 5, 5))
        _compare(
            module, (x, x, x), (out, weights), _torch_twin(module, x, x, x),
            {}, f"at h={h}", otherwise=lambda h=h: _split_hint(cls, h),
        )  # fmt: skip
    return "outputs and per-head weights equal nn.MultiheadAttention, h=2, 4"


def check_masks(cls: type) -> str:
    """A padding mask (B, 1, 1, T_k) and a causal (T, T) mask via mask=."""
    module = _build(cls, 8, 2)
    _require_parameter(module, "mask")
    x = _inputs(2, 5)
    masks = {
        "padding mask (B, 1, 1, T_k), lengths 5 and 3": padding_mask(
            [5, 3], 5
        ),
        "causal mask (T, T)": causal_mask(5, 5),
    }
    for what, allowed in masks.items():
        got = _forward(module, x, x, x, mask=allowed)
        _check_shapes(*got, (2, 5, 8), (2, 2, 5, 5))
        _compare(
            module, (x, x, x), got, _torch_twin(module, x, x, x, allowed),
            {"allowed": allowed, "kind": "mask"}, f"with a {what}",
            otherwise="block a key where mask is False: "
            "scores.masked_fill(~mask, float('-inf')) before the softmax",
        )  # fmt: skip
    return "padding and causal masks (True = may attend) match torch"


def check_causal(cls: type) -> str:
    """``is_causal=True``: query i sees keys 0..i, no more, no fewer."""
    module = _build(cls, 8, 2)
    _require_parameter(module, "is_causal")
    x = _inputs(2, 5)
    got = _forward(module, x, x, x, is_causal=True)
    _check_shapes(*got, (2, 5, 8), (2, 2, 5, 5))
    allowed = causal_mask(5, 5)
    _compare(
        module, (x, x, x), got, _torch_twin(module, x, x, x, allowed),
        {"allowed": allowed, "kind": "causal"}, "with is_causal=True",
        otherwise="query i may see keys 0..i: "
        "torch.ones(T_q, T_k, dtype=torch.bool).tril()",
    )  # fmt: skip
    return "is_causal=True lets query i see keys 0..i"


def check_cross(cls: type) -> str:
    """Cross-attention: 3 queries attend over 7 keys."""
    module = _build(cls, 8, 2)
    q, kv = _inputs(2, 3), _inputs(2, 7, seed=1)
    try:
        out, weights = _forward(module, q, kv, kv)
    except StudentError as error:
        error.hint = (
            "with T_q=3, T_k=7; split key and value by their own length, "
            "key.size(1), not the query's T"
        )
        raise
    _check_shapes(out, weights, (2, 3, 8), (2, 2, 3, 7))
    _compare(
        module, (q, kv, kv), (out, weights), _torch_twin(module, q, kv, kv),
        {}, "with T_q=3, T_k=7",
        otherwise="split each of query, key, value by its own length",
    )  # fmt: skip
    return "T_q=3, T_k=7 matches nn.MultiheadAttention"


# name, check: in order; a check returns what passed or raises Failed.
MILESTONES: tuple[tuple[str, Callable[[type], str]], ...] = (
    ("skeleton", check_skeleton),
    ("shapes", check_shapes),
    ("h=1", check_one_head),
    ("h>1", check_many_heads),
    ("masks", check_masks),
    ("causal", check_causal),
    ("T_q!=T_k", check_cross),
)


# --- the bugs the lesson warns about -------------------------------------


def _merge_by_view(ctx: torch.Tensor) -> torch.Tensor:
    """The inverse of the direct view: ``(B, h, T, d_k) -> (B, T, d)``."""
    B, h, T, d_k = ctx.shape
    return ctx.contiguous().view(B, T, h * d_k)  # (B, T, d_model), scrambled


# kind, hint, changes to the reference: each a bug that keeps every shape.
# "values" suspects are tried in every milestone, the others only in the
# milestone of that kind.
SUSPECTS: tuple[tuple[str, str, dict], ...] = (
    (
        "values",
        "your split is view(B, h, T, d_k), the direct view ("
        "slides/40-rule-out-three-check-yourself-reshape-order.html"
        "#ex-split-heads-direct-view): view to (B, T, h, d_k) first, then "
        "transpose(1, 2)",
        {"split": split_heads_direct_view},
    ),
    (
        "values",
        "your split is view(B, h, T, d_k), the direct view ("
        "slides/40-rule-out-three-check-yourself-reshape-order.html"
        "#ex-split-heads-direct-view): view to (B, T, h, d_k) first, then "
        "transpose(1, 2)",
        {"split": split_heads_direct_view, "merge": _merge_by_view},
    ),
    (
        "values",
        "your split transposes to (B, d_model, T) before reshaping ("
        "slides/40-rule-out-three-check-yourself-reshape-order.html"
        "#ex-split-heads-transpose-first): view to (B, T, h, d_k) first, "
        "then transpose(1, 2)",
        {"split": split_heads_transpose_first},
    ),
    (
        "values",
        "your merge skips the transpose back: transpose(1, 2).contiguous() "
        "before view(B, T, d_model)",
        {"merge": _merge_by_view},
    ),
    (
        "values",
        "you divide the scores by sqrt(d_model); divide by sqrt(d_k) = "
        "sqrt(d_model / h) (the two agree only at h=1)",
        {"scale": "d_model"},
    ),
    (
        "values",
        "your softmax runs over the queries; run it over the keys, dim=-1",
        {"softmax_dim": -2},
    ),
    (
        "values",
        "you never apply W_O: return self.W_O(merged heads)",
        {"w_o": False},
    ),
    ("mask", "your forward ignores mask", {"allowed": None}),
    (
        "mask",
        "you read mask True as blocked (nn.MultiheadAttention's convention);"
        " here True = may attend: scores.masked_fill(~mask, float('-inf'))",
        {"invert": True},
    ),
    ("causal", "your forward ignores is_causal", {"allowed": None}),
    (
        "causal",
        "your causal mask is off by one and blocks the diagonal: query i "
        "must see key i, so keep torch.tril(..., diagonal=0)",
        {"allowed": torch.ones(5, 5, dtype=torch.bool).tril(-1)},
    ),
    (
        "causal",
        "your causal mask is off by one and lets query i see key i+1: "
        "use torch.tril(..., diagonal=0)",
        {"allowed": torch.ones(5, 5, dtype=torch.bool).tril(1)},
    ),
    (
        "causal",
        "your causal mask keeps the future and blocks the past: keep the "
        "lower triangle (tril), not triu",
        {"allowed": torch.ones(5, 5, dtype=torch.bool).triu()},
    ),
)


def _reference(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    h: int,
    allowed: torch.Tensor | None = None,
    *,
    split: Callable = split_heads,
    merge: Callable = merge_heads,
    scale: str = "d_k",
    softmax_dim: int = -1,
    w_o: bool = True,
    invert: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Multi-head attention from ``module``'s weights, with one bug in.

    Only used to name a bug; the expected values come from
    :func:`_torch_twin`.
    """
    q = split(module.W_Q(query), h)  # (B, h, T_q, d_k)
    k = split(module.W_K(key), h)  # (B, h, T_k, d_k)
    v = split(module.W_V(value), h)  # (B, h, T_k, d_k)
    d = q.size(-1) if scale == "d_k" else query.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # (B, h, T_q, T_k)
    if allowed is not None:
        blocked = allowed if invert else ~allowed
        scores = scores.masked_fill(blocked, float("-inf"))
    weights = torch.softmax(scores, dim=softmax_dim)  # (B, h, T_q, T_k)
    merged = merge(weights @ v)  # (B, T_q, d_model)
    return (module.W_O(merged) if w_o else merged), weights


def _likely_cause(module, inputs, got, context: dict) -> str | None:
    """The first suspect whose numbers are the student's, or None."""
    h = got[1].size(1)  # weights (B, h, T_q, T_k)
    context = dict(context)
    kind = context.pop("kind", "values")
    for suspect_kind, hint, change in SUSPECTS:
        if suspect_kind not in ("values", kind):
            continue
        try:
            want = _reference(module, *inputs, h, **{**context, **change})
        except RuntimeError:  # e.g. transpose-first's view on these sizes
            continue
        if all(_close(a, b) for a, b in zip(got, want, strict=True)):
            return hint
    return None


def _split_hint(cls: type, h: int) -> str:
    """The fallback hint at h>1, sharpened by whether h=1 agrees."""
    try:
        check_one_head(cls)
    except Exception:  # Failed, or the student's code raised
        return "the values differ at h=1 too: fix milestone h=1 first"
    return (
        f"values differ at h={h} but match at h=1: check the order of view "
        f"and transpose when splitting heads, the merge, and the scale "
        f"1/sqrt(d_k)"
    )


# --- running the student's code --------------------------------------------


class StudentError(Exception):
    """An exception raised inside the student's forward; its ``__cause__``
    is the original, whose traceback says where."""

    hint = ""


def _torch_twin(module, query, key, value, allowed=None):
    """``nn.MultiheadAttention`` holding ``module``'s weights, run once.

    Its boolean masks mean True = blocked, so ``allowed`` is inverted.
    """
    d_model = module.W_Q.weight.size(1)
    h = module.grade_num_heads
    twin = nn.MultiheadAttention(d_model, h, bias=False, batch_first=True)
    with torch.no_grad():
        twin.in_proj_weight.copy_(
            torch.cat(
                [module.W_Q.weight, module.W_K.weight, module.W_V.weight]
            )
        )  # (3 * d_model, d_model)
        twin.out_proj.weight.copy_(module.W_O.weight)
        kwargs = {}
        if allowed is not None and allowed.dim() == 4:  # (B, 1, 1, T_k)
            kwargs["key_padding_mask"] = ~allowed[:, 0, 0, :]  # (B, T_k)
        elif allowed is not None:  # (T_q, T_k)
            kwargs["attn_mask"] = ~allowed
        return twin(
            query, key, value, average_attn_weights=False, **kwargs
        )  # (B, T_q, d_model), (B, h, T_q, T_k)


def _build(cls: type, d_model: int, h: int) -> nn.Module:
    """The student's module with fixed random weights (seeded)."""
    module = cls(d_model, h)
    try:
        _check_projections(module, d_model)
    except Failed as failed:
        raise Failed(
            f"not graded until milestone skeleton passes: {failed}"
        ) from None
    gen = torch.Generator().manual_seed(81 * d_model + h)
    with torch.no_grad():
        for name in PROJECTIONS:
            weight = getattr(module, name).weight
            # std 2/sqrt(d) gives scores of a few units: wrong scales and
            # masks then move the softmax far beyond the tolerance.
            new = torch.randn(weight.shape, generator=gen) * 2 / d_model**0.5
            weight.copy_(new)
    module.grade_num_heads = h  # students may name theirs h or num_heads
    return module.eval()


def _check_projections(module: nn.Module, d_model: int) -> None:
    for name in PROJECTIONS:
        layer = getattr(module, name, None)
        if layer is None:
            raise Failed(
                f"no attribute {name}: name the four projections "
                f"W_Q, W_K, W_V, W_O"
            )
        if not isinstance(layer, nn.Linear):
            raise Failed(
                f"{name} is a {type(layer).__name__}, expected nn.Linear"
            )
        if layer.bias is not None:
            raise Failed(
                f"{name} has a bias: use nn.Linear(d_model, d_model, "
                f"bias=False)"
            )
        if tuple(layer.weight.shape) != (d_model, d_model):
            raise Failed(
                f"{name}.weight is {tuple(layer.weight.shape)}, expected "
                f"({d_model}, {d_model}): each projection maps all d_model "
                f"features to d_model features; the heads share it"
            )


def _inputs(batch: int, length: int, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(batch, length, 8, generator=gen)  # (B, T, d_model)


def _require_parameter(module: nn.Module, name: str) -> None:
    if name not in inspect.signature(module.forward).parameters:
        raise Failed(
            f"forward has no {name} parameter; the lesson's signature is "
            f"{SIGNATURE}"
        )


def _forward(module, *args, **kwargs) -> tuple[torch.Tensor, torch.Tensor]:
    """Call the student's forward; check it returns (output, weights)."""
    try:
        with torch.no_grad():
            result = module(*args, **kwargs)
    except Exception as error:
        raise StudentError(
            f"forward raised {type(error).__name__}: {error}"
        ) from error
    ok = (
        isinstance(result, tuple | list)
        and len(result) == 2
        and all(isinstance(t, torch.Tensor) for t in result)
    )
    if not ok:
        raise Failed(
            f"forward returned {_describe(result)}; it must return the "
            f"tuple (output, weights)"
        )
    return tuple(result)


def _describe(value: object) -> str:
    if isinstance(value, torch.Tensor):
        return f"one tensor of shape {tuple(value.shape)}"
    if isinstance(value, tuple | list):
        return f"a {type(value).__name__} of {len(value)} items"
    return f"a {type(value).__name__}"


def _check_shapes(out, weights, out_shape, weights_shape) -> None:
    """Weights first: a wrong split shows there, and breaks the merge."""
    if tuple(weights.shape) != weights_shape:
        B, h, T_q, T_k = weights_shape
        causes = {
            (B, T_q * h, T_k * h): "the flat split view(B, T*h, d_k) ("
            "slides/31-trap-wrong-reshape-order-for-head-splitting.html) "
            "mixes heads and positions; use "
            "view(B, T, h, d_k).transpose(1, 2)",
            (B, T_q, h, h): "the heads attended to each other: "
            "transpose(1, 2) after view(B, T, h, d_k) puts the head axis "
            "before T",
            (B, T_q, T_k): "the head axis is gone: return the per-head "
            "weights, not their average",
        }
        cause = causes.get(tuple(weights.shape), "expected (B, h, T_q, T_k)")
        raise Failed(
            f"weights are {tuple(weights.shape)}, expected {weights_shape}: "
            f"{cause}"
        )
    if tuple(out.shape) != out_shape:
        raise Failed(
            f"output is {tuple(out.shape)}, expected {out_shape} = "
            f"(B, T_q, d_model): merge the heads back with transpose(1, 2) "
            f"and view(B, T_q, d_model)"
        )


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal within float32 tolerance; NaN and 0 count as the same, since
    a fully masked row is NaN in a plain softmax and 0 in ``mha_ref``."""
    if a.shape != b.shape:
        return False
    a, b = a.nan_to_num(0.0), b.nan_to_num(0.0)
    return torch.allclose(a, b, atol=ATOL, rtol=ATOL)


def _compare(module, inputs, got, want, context, where, otherwise) -> None:
    """Raise Failed naming what differs and its likely cause.

    ``otherwise`` is the hint (or a function computing it) when no
    suspect reproduces the student's numbers.
    """
    differ = [
        _difference(name, a, b)
        for name, a, b in zip(("output", "weights"), got, want, strict=True)
        if not _close(a, b)
    ]
    if not differ:
        return
    cause = _likely_cause(module, inputs, got, context)
    if cause is None:
        cause = otherwise() if callable(otherwise) else otherwise
    raise Failed(f"{' and '.join(differ)} {where}: {cause}")


def _difference(name: str, a: torch.Tensor, b: torch.Tensor) -> str:
    verb = "differs" if name == "output" else "differ"
    if a.isnan().any() and not b.isnan().any():
        return f"{name} {verb}: yours holds NaN"
    diff = (a.nan_to_num(0.0) - b.nan_to_num(0.0)).abs().max().item()
    return f"{name} {verb} by up to {diff:.3g}"


def _location(error: BaseException, path: Path) -> str:
    """``file:line in function`` of the student's innermost frame."""
    if isinstance(error, SyntaxError) and error.filename:
        return f"{Path(error.filename).name}:{error.lineno}"
    frames = traceback.extract_tb(error.__traceback__)
    return _in_student_file(frames, path)


def _in_student_file(frames, path: Path) -> str:
    mine = [f for f in frames if Path(f.filename).resolve() == path]
    if not mine:
        return "no line of your file on the stack"
    frame = mine[-1]
    return f"{path.name}:{frame.lineno} in {frame.name}"


def _bounded(fn: Callable, arg, path: Path, timeout: float):
    """Run ``fn(arg)`` in a thread; a stuck student forward cannot hang us.

    Returns ``fn``'s value, or raises Failed, StudentError or TimedOut.
    """
    box: dict = {}

    def target() -> None:
        try:
            box["value"] = fn(arg)
        except Failed as verdict:
            box["error"] = verdict
        except StudentError as error:  # from forward: locate its cause
            where = _location(error.__cause__, path)
            hint = f": {error.hint}" if error.hint else ""
            box["error"] = StudentError(f"{error} ({where}){hint}")
        except BaseException as error:  # the student's __init__ or import
            where = _location(error, path)
            box["error"] = StudentError(
                f"raised {type(error).__name__}: {error} ({where})"
            )

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        frame = sys._current_frames().get(worker.ident)
        stack = traceback.extract_stack(frame) if frame else []
        raise TimedOut(
            f"no result after {timeout:g} s, still running at "
            f"{_in_student_file(stack, path)}: look for a loop that never "
            f"ends"
        )
    if "error" in box:
        raise box["error"]
    return box["value"]


def _load(path: Path) -> type:
    """Import the student's file and return its MultiHeadAttention."""
    sys.path.insert(0, str(path.parent))  # as `python my_mha.py` would
    spec = importlib.util.spec_from_file_location("student_mha", path)
    student = importlib.util.module_from_spec(spec)
    sys.modules["student_mha"] = student
    spec.loader.exec_module(student)
    cls = getattr(student, "MultiHeadAttention", None)
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise Failed(
            f"{path.name} defines no class MultiHeadAttention(nn.Module)"
        )
    return cls


def grade(path: str | Path, timeout: float = TIMEOUT_S) -> int:
    """Print one line per milestone; return the number that failed."""
    path = Path(path).resolve()
    width = max(len(name) for name, _ in MILESTONES)
    out = sys.stdout

    def report(status: str, name: str, detail: str) -> None:
        out.write(f"{status} {name:<{width}}  {detail}\n")
        out.flush()

    try:
        with contextlib.redirect_stdout(sys.stderr):  # the student's prints
            cls = _bounded(_load, path, path, timeout)
    except (Failed, StudentError, TimedOut) as error:
        report("FAIL", "load", str(error))
        return len(MILESTONES) + 1
    failed = 0
    for number, (name, check) in enumerate(MILESTONES):
        try:
            with contextlib.redirect_stdout(sys.stderr):
                detail = _bounded(check, cls, path, timeout)
        except (Failed, StudentError) as error:
            failed += 1
            report("FAIL", name, str(error))
            continue
        except TimedOut as error:
            report("FAIL", name, str(error))
            for skipped, _ in MILESTONES[number + 1 :]:
                report("SKIP", skipped, "not run: an earlier check hung")
            return failed + len(MILESTONES) - number
        report("PASS", name, detail)
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mha_ref.grade",
        description="Check your MultiHeadAttention, milestone by milestone.",
    )
    parser.add_argument("path", help="your .py file")
    parser.add_argument(
        "--timeout",
        type=float,
        default=TIMEOUT_S,
        help="seconds each milestone may run (default %(default)s)",
    )
    args = parser.parse_args(argv)
    if not Path(args.path).is_file():
        parser.error(f"no such file: {args.path}")
    failed = grade(args.path, args.timeout)
    total = len(MILESTONES)
    passed = max(total - failed, 0)
    print(f"{passed} of {total} milestones pass")
    return 1 if failed else 0


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    # A forward that never returns leaves a thread running; do not wait.
    os._exit(status)
