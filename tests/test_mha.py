"""Tests for mha_ref.mha: the module equals torch.nn.MultiheadAttention."""

import marshal
import re
from pathlib import Path

import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from torch import nn

import mha_ref
from mha_ref import (
    MultiHeadAttention,
    causal_mask,
    count_parameters,
    from_torch_mha,
    merge_heads,
    padding_mask,
    single_head_attention,
    split_heads,
    to_torch_mha,
)

# PyTorch's own float32 tolerance; float64 is checked far tighter.
TOL = {
    torch.float32: {"atol": 1e-5, "rtol": 1.3e-6},
    torch.float64: {"atol": 1e-12, "rtol": 1e-12},
}


def _module(d_model, num_heads, dtype=torch.float64, seed=0):
    torch.manual_seed(seed)
    return MultiHeadAttention(d_model, num_heads).to(dtype)


def _randn(*shape, dtype=torch.float64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=gen, dtype=dtype)


def _torch_forward(torch_mha, query, key, value, **kwargs):
    return torch_mha(
        query,
        key,
        value,
        need_weights=True,
        average_attn_weights=False,
        **kwargs,
    )


@settings(derandomize=True, max_examples=30, deadline=None)
@given(
    batch=st.integers(1, 3),
    t_q=st.integers(1, 5),
    t_k=st.integers(1, 5),
    num_heads=st.integers(1, 4),
    d_k=st.integers(1, 4),
    dtype=st.sampled_from([torch.float32, torch.float64]),
    seed=st.integers(0, 2**16),
)
# The edge cases are pinned, not left to chance: B=1 and T=1, h=d_model,
# h=1, and cross-attention with T_q > T_k and T_q < T_k.
@example(1, 1, 1, 1, 1, torch.float32, 0)
@example(2, 3, 5, 4, 1, torch.float64, 1)
@example(1, 4, 2, 1, 8, torch.float32, 2)
@example(3, 5, 1, 2, 3, torch.float64, 3)
def test_matches_torch_mha(batch, t_q, t_k, num_heads, d_k, dtype, seed):
    """Output and per-head weights equal torch's MHA with copied weights."""
    d_model = num_heads * d_k  # covers h=1 and h=d_model (d_k=1)
    module = _module(d_model, num_heads, dtype, seed)
    torch_mha = to_torch_mha(module)
    query = _randn(batch, t_q, d_model, dtype=dtype, seed=seed)
    kv = _randn(batch, t_k, d_model, dtype=dtype, seed=seed + 1)
    value = _randn(batch, t_k, d_model, dtype=dtype, seed=seed + 2)
    out, weights = module(query, kv, value)
    ref_out, ref_weights = _torch_forward(torch_mha, query, kv, value)
    assert out.shape == (batch, t_q, d_model)
    assert weights.shape == (batch, num_heads, t_q, t_k)
    torch.testing.assert_close(out, ref_out, **TOL[dtype])
    torch.testing.assert_close(weights, ref_weights, **TOL[dtype])


def test_from_torch_mha_matches_torch():
    """A module built from torch's MHA computes what torch's MHA computes."""
    torch.manual_seed(3)
    torch_mha = nn.MultiheadAttention(
        12, 3, bias=False, batch_first=True, dtype=torch.float64
    )
    module = from_torch_mha(torch_mha)
    assert module.W_Q.weight.dtype == torch.float64
    query, kv = _randn(2, 4, 12, seed=1), _randn(2, 6, 12, seed=2)
    out, weights = module(query, kv, kv)
    ref_out, ref_weights = _torch_forward(torch_mha, query, kv, kv)
    torch.testing.assert_close(out, ref_out, **TOL[torch.float64])
    torch.testing.assert_close(weights, ref_weights, **TOL[torch.float64])


def test_round_trip_from_ours():
    """ours -> torch -> ours gives back exactly the same weights."""
    module = _module(8, 2)
    back = from_torch_mha(to_torch_mha(module))
    assert (back.d_model, back.num_heads, back.d_k) == (8, 2, 4)
    for name, tensor in module.state_dict().items():
        assert torch.equal(back.state_dict()[name], tensor), name


def test_round_trip_from_torch():
    """torch -> ours -> torch gives back exactly the same weights."""
    torch.manual_seed(4)
    torch_mha = nn.MultiheadAttention(8, 4, bias=False, batch_first=True)
    back = to_torch_mha(from_torch_mha(torch_mha))
    assert back.num_heads == 4 and back.batch_first
    for name, tensor in torch_mha.state_dict().items():
        assert torch.equal(back.state_dict()[name], tensor), name


def test_in_proj_weight_stacks_q_k_v_rows():
    """torch's in_proj_weight is [W_Q; W_K; W_V] stacked as rows."""
    module = _module(6, 2)
    stacked = to_torch_mha(module).in_proj_weight
    assert torch.equal(stacked[0:6], module.W_Q.weight)
    assert torch.equal(stacked[6:12], module.W_K.weight)
    assert torch.equal(stacked[12:18], module.W_V.weight)


@pytest.mark.parametrize("t", [1, 4, 7])
def test_causal_matches_torch_attn_mask(t):
    """Causal self-attention equals torch's MHA given True-means-blocked."""
    module = _module(8, 2)
    torch_mha = to_torch_mha(module)
    x = _randn(2, t, 8, seed=t)
    by_flag = module(x, x, x, is_causal=True)
    by_mask = module(x, x, x, mask=causal_mask(t, t))
    blocked = torch.ones(t, t, dtype=torch.bool).triu(1)  # torch: True=block
    ref = _torch_forward(torch_mha, x, x, x, attn_mask=blocked)
    additive = nn.Transformer.generate_square_subsequent_mask(
        t, dtype=torch.float64
    )
    ref_float = _torch_forward(torch_mha, x, x, x, attn_mask=additive)
    for ours in (by_flag, by_mask):
        for theirs in (ref, ref_float):
            torch.testing.assert_close(ours[0], theirs[0], atol=1e-12, rtol=0)
            torch.testing.assert_close(ours[1], theirs[1], atol=1e-12, rtol=0)


def test_key_padding_matches_torch():
    """padding_mask equals torch's key_padding_mask, with True inverted."""
    module = _module(8, 4)
    torch_mha = to_torch_mha(module)
    query, kv = _randn(3, 2, 8, seed=1), _randn(3, 5, 8, seed=2)
    mask = padding_mask([5, 1, 3], 5)
    out, weights = module(query, kv, kv, mask=mask)
    pad = ~mask[:, 0, 0, :]  # (B, T_k), torch: True = padding
    ref_out, ref_w = _torch_forward(
        torch_mha, query, kv, kv, key_padding_mask=pad
    )
    torch.testing.assert_close(out, ref_out, **TOL[torch.float64])
    torch.testing.assert_close(weights, ref_w, **TOL[torch.float64])


def test_per_head_mask_matches_torch():
    """A (B, h, T_q, T_k) mask lines up with torch's (B*h, T_q, T_k) one."""
    module = _module(8, 2)
    torch_mha = to_torch_mha(module)
    query, kv = _randn(3, 4, 8, seed=5), _randn(3, 6, 8, seed=6)
    gen = torch.Generator().manual_seed(7)
    mask = torch.rand(3, 2, 4, 6, generator=gen) > 0.5
    mask[..., 0] = True  # every query sees a key: torch would give NaN
    out, weights = module(query, kv, kv, mask=mask)
    blocked = (~mask).reshape(3 * 2, 4, 6)
    ref_out, ref_w = _torch_forward(
        torch_mha, query, kv, kv, attn_mask=blocked
    )
    torch.testing.assert_close(out, ref_out, **TOL[torch.float64])
    torch.testing.assert_close(weights, ref_w, **TOL[torch.float64])


def test_one_head_is_single_head_attention():
    """With h=1 the module is plain attention with x @ W matrices."""
    module = _module(6, 1)
    query, kv = _randn(2, 3, 6, seed=1), _randn(2, 5, 6, seed=2)
    out, weights = module(query, kv, kv)
    ref_out, ref_weights = single_head_attention(
        query,
        kv,
        module.W_Q.weight.T,
        module.W_K.weight.T,
        module.W_V.weight.T,
        module.W_O.weight.T,
    )
    torch.testing.assert_close(out, ref_out, **TOL[torch.float64])
    torch.testing.assert_close(
        weights[:, 0], ref_weights, **TOL[torch.float64]
    )


def test_single_head_attention_mask():
    """single_head_attention applies a mask like the module does."""
    module = _module(4, 1)
    x = _randn(1, 3, 4)
    out, _ = module(x, x, x, is_causal=True)
    mats = [getattr(module, n).weight.T for n in ("W_Q", "W_K", "W_V", "W_O")]
    ref, _ = single_head_attention(x, x, *mats, mask=causal_mask(3, 3))
    torch.testing.assert_close(out, ref, **TOL[torch.float64])


@pytest.mark.parametrize("d_model", [8, 12, 32])
def test_parameter_count_is_independent_of_heads(d_model):
    """Every divisor h of d_model gives 4 * d_model**2 parameters."""
    divisors = [h for h in range(1, d_model + 1) if d_model % h == 0]
    for h in divisors:
        module = MultiHeadAttention(d_model, h)
        assert count_parameters(module) == 4 * d_model**2
        assert module.d_k * h == d_model


def test_parameter_count_d_model_512():
    """The lesson's d_model=512 module has exactly 1,048,576 parameters."""
    for h in (1, 8, 64):
        assert count_parameters(MultiHeadAttention(512, h)) == 1_048_576


def test_layers_are_bias_free_linears():
    """The four projections are bias-free d_model x d_model nn.Linear."""
    module = MultiHeadAttention(8, 2)
    for name in ("W_Q", "W_K", "W_V", "W_O"):
        layer = getattr(module, name)
        assert isinstance(layer, nn.Linear)
        assert layer.bias is None
        assert layer.weight.shape == (8, 8)


def test_gradcheck_inputs_and_weights():
    """Gradients w.r.t. inputs and all four weights match finite diffs."""
    module = _module(4, 2)
    names = ("W_Q.weight", "W_K.weight", "W_V.weight", "W_O.weight")
    weights = [module.get_parameter(n).detach().clone() for n in names]
    query = _randn(2, 3, 4, seed=1)
    kv = _randn(2, 2, 4, seed=2)

    def fn(query, kv, *ws):
        params = dict(zip(names, ws, strict=True))
        return torch.func.functional_call(
            module, params, (query, kv, kv), {"is_causal": True}
        )

    inputs = [t.requires_grad_() for t in (query, kv, *weights)]
    assert torch.autograd.gradcheck(fn, inputs)


def test_cross_attention_shapes():
    """T_q != T_k works: output follows the query, weights are T_q x T_k."""
    module = MultiHeadAttention(8, 4)
    out, weights = module(
        torch.randn(2, 3, 8), torch.randn(2, 7, 8), torch.randn(2, 7, 8)
    )
    assert out.shape == (2, 3, 8)
    assert weights.shape == (2, 4, 3, 7)


def test_one_dim_mask_broadcasts():
    """A (T_k,) mask blocks the same keys for every query and head."""
    module = _module(4, 2)
    query, kv = _randn(2, 3, 4, seed=1), _randn(2, 5, 4, seed=2)
    keep = torch.tensor([True, False, True, True, False])
    out, weights = module(query, kv, kv, mask=keep)
    ref, _ = module(query, kv, kv, mask=keep.view(1, 1, 1, 5))
    torch.testing.assert_close(out, ref, atol=0, rtol=0)
    assert (weights[..., ~keep] == 0).all()


# --- split / merge ------------------------------------------------------


def test_split_heads_gives_each_head_its_feature_slice():
    """Head i at position t holds features i*d_k:(i+1)*d_k of position t."""
    x = _randn(2, 5, 12)
    heads = split_heads(x, 3)
    assert heads.shape == (2, 3, 5, 4)
    for i in range(3):
        assert torch.equal(heads[:, i], x[:, :, 4 * i : 4 * (i + 1)])
    assert heads.data_ptr() == x.data_ptr()  # a view: no copy


def test_merge_heads_undoes_split_heads():
    """merge_heads(split_heads(x)) is x, for every divisor h."""
    x = _randn(2, 3, 12)
    for h in (1, 2, 3, 4, 6, 12):
        assert torch.equal(merge_heads(split_heads(x, h)), x)


# --- bad arguments ------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (
            (10, 3),
            ValueError,
            r"d_model \(10\) must be divisible by num_heads \(3\)",
        ),
        ((0, 1), ValueError, "d_model must be positive, got 0"),
        ((8, 0), ValueError, "num_heads must be positive, got 0"),
        ((8, -2), ValueError, "num_heads must be positive, got -2"),
        ((8.0, 2), TypeError, r"d_model must be an int, got float \(8.0\)"),
        ((8, "2"), TypeError, "num_heads must be an int, got str"),
        ((8, True), TypeError, "num_heads must be an int, got bool"),
    ],
)
def test_constructor_rejects(args, error, message):
    """Bad sizes raise with the problem and the values in the message."""
    with pytest.raises(error, match=message):
        MultiHeadAttention(*args)


def _bad_forward_cases():
    x = torch.randn(2, 3, 8)
    kv = torch.randn(2, 5, 8)
    return [
        ((x[0], x, x), ValueError, r"query must have 3 dims.*\(3, 8\)"),
        ((x, kv[None], kv), ValueError, r"key must have 3 dims"),
        ((x, kv, kv[:1]), ValueError, r"same batch size B, got 2, 2 and 1"),
        ((x[:1], kv, kv), ValueError, r"same batch size B, got 1, 2 and 2"),
        (
            (torch.randn(2, 3, 6), kv, kv),
            ValueError,
            r"query must have feature size d_model \(8\), got 6",
        ),
        ((x, kv, kv[:, :4]), ValueError, r"same length T_k, got 5 and 4"),
        ((x.tolist(), kv, kv), TypeError, "query must be a torch.Tensor"),
        ((x, kv.long(), kv), TypeError, "key must be a floating-point"),
    ]


@pytest.mark.parametrize(("args", "error", "message"), _bad_forward_cases())
def test_forward_rejects(args, error, message):
    """Bad inputs raise naming which tensor is wrong and how."""
    module = MultiHeadAttention(8, 2)
    with pytest.raises(error, match=message):
        module(*args)


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ((2, 3, 5), r"mask must have 1 dim.*got shape \(2, 3, 5\)"),
        ((2, 1, 3, 4), r"mask of shape \(2, 1, 3, 4\) does not broadcast"),
        ((3, 1, 3, 5), r"mask of shape \(3, 1, 3, 5\) does not broadcast"),
        ((1, 2, 1, 1, 5), r"mask must have 1 dim.*\(1, 2, 1, 1, 5\)"),
    ],
)
def test_forward_rejects_bad_mask(shape, message):
    """A mask of the wrong shape is refused, with its shape in the message."""
    module = MultiHeadAttention(8, 2)
    x, kv = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
    with pytest.raises(ValueError, match=message):
        module(x, kv, kv, mask=torch.ones(shape, dtype=torch.bool))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"bias": True}, r"has biases"),
        ({"bias": False, "add_bias_kv": True}, r"has biases"),
        ({"bias": False, "kdim": 4}, r"kdim \(4\) and vdim \(8\) must equal"),
        ({"bias": False, "vdim": 6}, r"kdim \(8\) and vdim \(6\) must equal"),
        ({"bias": False, "add_zero_attn": True}, r"add_zero_attn=True"),
    ],
)
def test_from_torch_mha_rejects(kwargs, message):
    """Only a torch MHA that computes what ours computes is accepted."""
    torch_mha = nn.MultiheadAttention(8, 2, batch_first=True, **kwargs)
    with pytest.raises(ValueError, match=message):
        from_torch_mha(torch_mha)


def test_conversions_reject_wrong_types():
    """Converting something that is not the right module is a TypeError."""
    with pytest.raises(
        TypeError, match="must be a torch.nn.MultiheadAttention"
    ):
        from_torch_mha(nn.Linear(2, 2))
    with pytest.raises(TypeError, match="must be a MultiHeadAttention"):
        to_torch_mha(nn.MultiheadAttention(4, 2))


def test_split_heads_rejects():
    """split_heads names an indivisible head count or a wrong rank."""
    with pytest.raises(ValueError, match=r"d_model \(6\) must be divisible"):
        split_heads(torch.randn(1, 2, 6), 4)
    with pytest.raises(ValueError, match=r"x must have 3 dims, got 2"):
        split_heads(torch.randn(2, 6), 2)
    with pytest.raises(ValueError, match=r"x must have 4 dims, got 3"):
        merge_heads(torch.randn(2, 3, 4))


def test_single_head_attention_rejects_wrong_matrix():
    """single_head_attention names a matrix of the wrong shape."""
    x = torch.randn(1, 3, 4)
    eye, wide = torch.eye(4), torch.randn(4, 5)
    with pytest.raises(ValueError, match=r"W_V must have shape \(4, 4\)"):
        single_head_attention(x, x, eye, eye, wide, eye)
    with pytest.raises(ValueError, match=r"x_kv must have feature size"):
        single_head_attention(x, torch.randn(1, 3, 5), eye, eye, eye, eye)


def test_python_O_runs_the_same_code():
    """python -O compiles every mha_ref module to identical bytecode.

    -O removes only ``assert`` statements and ``if __debug__`` blocks, so
    identical bytecode means every check still raises under -O. (This is
    exact and instant; a ``python -O`` subprocess would have to recompile
    all of torch when bytecode writing is disabled.)
    """
    sources = sorted(Path(mha_ref.__file__).parent.glob("*.py"))
    assert len(sources) >= 5
    for path in sources:
        text = path.read_text(encoding="utf-8")
        plain = compile(text, str(path), "exec", optimize=0)
        optimized = compile(text, str(path), "exec", optimize=1)
        assert marshal.dumps(plain) == marshal.dumps(optimized), path.name


def test_bytecode_check_catches_assert():
    """The bytecode comparison above does notice an assert."""
    text = "def f(x):\n    assert x > 0\n    return x\n"
    plain = compile(text, "f.py", "exec", optimize=0)
    optimized = compile(text, "f.py", "exec", optimize=1)
    assert marshal.dumps(plain) != marshal.dumps(optimized)


def _sections(path):
    """{name: [lines]} for the --8<-- sections of a source file."""
    marker = re.compile(r"# --8<-- \[(start|end):(\w+)\]")
    open_sections, sections = {}, {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        found = marker.search(line)
        if found is None:
            for name in open_sections:
                sections[name].append(line)
            continue
        kind, name = found.groups()
        if kind == "start":
            assert name not in sections, f"{name} opened twice"
            open_sections[name] = number
            sections[name] = []
        else:
            assert open_sections.pop(name, None), f"{name} closed unopened"
    assert not open_sections, f"unclosed sections: {open_sections}"
    return sections


def test_slide_sections_are_balanced_and_loop_free():
    """The sections slides include exist, nest properly, loop over no heads."""
    sections = _sections(Path(mha_ref.__file__).parent / "mha.py")
    assert {"class", "init", "forward", "split", "merge"} <= set(sections)
    assert sections["class"][0].startswith("class MultiHeadAttention(")
    assert sections["init"][0].strip().startswith("def __init__(")
    assert sections["forward"][0].strip().startswith("def forward(")
    for name in ("forward", "split", "merge"):
        code = "\n".join(sections[name])
        assert not re.search(r"\bfor\b|\bwhile\b", code), name
    assert len(sections["class"]) <= 35  # fits on a projected slide


# --- dtypes, tracing and export ------------------------------------------


@pytest.mark.parametrize("name", ["query", "key", "value"])
def test_forward_rejects_other_dtype(name):
    """An input of another dtype is a TypeError naming it and both dtypes.

    Unchecked, F.linear fails with "expected m1 and m2 to have the same
    dtype", which names neither the argument nor the module.
    """
    module = MultiHeadAttention(8, 2)  # float32 weights
    inputs = {n: torch.randn(2, 3, 8) for n in ("query", "key", "value")}
    inputs[name] = inputs[name].double()
    message = (
        rf"{name} has dtype torch\.float64 but the module's weights are "
        r"torch\.float32"
    )
    with pytest.raises(TypeError, match=message):
        module(**inputs)


@pytest.mark.filterwarnings("ignore:`torch.jit.trace:DeprecationWarning")
def test_jit_trace_runs_at_another_batch_size():
    """A trace taken at B=2 gives the eager values at B=3.

    The batch check once put the sizes in a set; traced sizes are tensors
    hashed by identity, so three equal 2s made a set of three and the
    trace raised "got 2, 2 and 2".
    """
    module = _module(8, 2, dtype=torch.float32)
    f32 = torch.float32
    x, kv = _randn(2, 3, 8, dtype=f32), _randn(2, 5, 8, dtype=f32, seed=1)
    with pytest.warns(torch.jit.TracerWarning):
        traced = torch.jit.trace(module, (x, kv, kv))
    x3 = _randn(3, 3, 8, dtype=f32, seed=2)
    kv3 = _randn(3, 5, 8, dtype=f32, seed=3)
    traced_out, eager_out = traced(x3, kv3, kv3), module(x3, kv3, kv3)
    for got, want in zip(traced_out, eager_out, strict=True):
        torch.testing.assert_close(got, want, **TOL[torch.float32])


def test_export_with_dynamic_batch_and_length():
    """torch.export with symbolic B and T_k gives the eager values.

    A symbolic size cannot be hashed, so the old set-based batch check
    raised "unhashable type: non-nested SymInt".
    """
    module = _module(8, 2, dtype=torch.float32)
    batch, t_k = torch.export.Dim("B"), torch.export.Dim("T_k")
    x, kv = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
    program = torch.export.export(
        module,
        (x, kv, kv),
        dynamic_shapes=({0: batch}, {0: batch, 1: t_k}, {0: batch, 1: t_k}),
    )
    x4 = _randn(4, 3, 8, dtype=torch.float32)
    kv4 = _randn(4, 7, 8, dtype=torch.float32, seed=1)
    got = program.module()(x4, kv4, kv4)
    for got_t, want in zip(got, module(x4, kv4, kv4), strict=True):
        assert got_t.shape == want.shape
        torch.testing.assert_close(got_t, want, **TOL[torch.float32])
