"""Tests for mha_ref.attention: the manual path agrees with PyTorch's."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from mha_ref import causal_mask, padding_mask, scaled_dot_product_attention


def _qkv(*lead, t_q=3, t_k=5, d_k=4, d_v=6, dtype=torch.float64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(*lead, t_q, d_k, generator=gen, dtype=dtype)
    k = torch.randn(*lead, t_k, d_k, generator=gen, dtype=dtype)
    v = torch.randn(*lead, t_k, d_v, generator=gen, dtype=dtype)
    return q, k, v


def _close(a, b):
    torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-12)


@settings(derandomize=True, max_examples=40, deadline=None)
@given(
    lead=st.lists(st.integers(1, 3), min_size=0, max_size=2),
    t_q=st.integers(1, 6),
    t_k=st.integers(1, 6),
    d_k=st.integers(1, 5),
    d_v=st.integers(1, 5),
    seed=st.integers(0, 2**16),
)
def test_matches_fused_sdpa(lead, t_q, t_k, d_k, d_v, seed):
    """The readable path equals F.scaled_dot_product_attention, any shape."""
    q, k, v = _qkv(*lead, t_q=t_q, t_k=t_k, d_k=d_k, d_v=d_v, seed=seed)
    out, weights = scaled_dot_product_attention(q, k, v)
    assert out.shape == (*lead, t_q, d_v)
    assert weights.shape == (*lead, t_q, t_k)
    _close(out, F.scaled_dot_product_attention(q, k, v))


@pytest.mark.parametrize(("t_q", "t_k"), [(5, 5), (3, 5), (5, 3), (1, 4)])
def test_causal_matches_fused_sdpa(t_q, t_k):
    """is_causal=True is top-left aligned, exactly like F.sdpa's."""
    q, k, v = _qkv(2, 3, t_q=t_q, t_k=t_k)
    out, weights = scaled_dot_product_attention(q, k, v, is_causal=True)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    _close(out, expected)
    above = torch.ones(t_q, t_k, dtype=torch.bool).triu(1)
    assert (weights[..., above] == 0).all()


def test_causal_mask_literal():
    """causal_mask lets query i see keys 0..i, also when t_q != t_k."""
    assert causal_mask(2, 4).tolist() == [
        [True, False, False, False],
        [True, True, False, False],
    ]
    assert causal_mask(3, 2).tolist() == [
        [True, False],
        [True, True],
        [True, True],
    ]
    assert causal_mask(3, 3).dtype == torch.bool


def test_causal_mask_equals_is_causal():
    """Passing causal_mask as mask is the same as is_causal=True."""
    q, k, v = _qkv(2, t_q=4, t_k=6)
    by_flag = scaled_dot_product_attention(q, k, v, is_causal=True)
    by_mask = scaled_dot_product_attention(q, k, v, mask=causal_mask(4, 6))
    _close(by_flag[0], by_mask[0])
    _close(by_flag[1], by_mask[1])


def test_bool_mask_matches_fused_sdpa():
    """A bool mask means True = may attend, as in F.sdpa's attn_mask."""
    q, k, v = _qkv(2, 3, t_q=4, t_k=5)
    gen = torch.Generator().manual_seed(1)
    mask = torch.rand(2, 3, 4, 5, generator=gen) > 0.4
    out, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    _close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    assert (weights[~mask] == 0).all()


def test_broadcast_mask_matches_fused_sdpa():
    """A (T_q, T_k) mask broadcasts over every leading dim, as in F.sdpa."""
    q, k, v = _qkv(2, 3, t_q=4, t_k=5)
    mask = torch.tensor(
        [
            [True, False, True, True, False],
            [False, True, True, False, True],
            [True, True, True, True, True],
            [False, False, False, True, False],
        ]
    )
    out, _ = scaled_dot_product_attention(q, k, v, mask=mask)
    _close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))


def test_float_mask_is_added():
    """A float mask is added to the scores, as in F.sdpa's attn_mask."""
    q, k, v = _qkv(2, t_q=3, t_k=4)
    gen = torch.Generator().manual_seed(2)
    bias = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    bias[0, 1] = float("-inf")
    out, weights = scaled_dot_product_attention(q, k, v, mask=bias)
    _close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=bias))
    assert (weights[:, 0, 1] == 0).all()


def test_causal_combines_with_mask():
    """is_causal and mask together allow only keys both allow."""
    q, k, v = _qkv(2, t_q=4, t_k=4)
    keep = torch.tensor([True, True, False, True])
    out, _ = scaled_dot_product_attention(q, k, v, mask=keep, is_causal=True)
    both = torch.ones(4, 4, dtype=torch.bool).tril() & keep
    _close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=both))


def test_padding_mask_literal():
    """padding_mask is True on real tokens, shaped (B, 1, 1, t_k)."""
    mask = padding_mask([3, 1, 0], 4)
    assert mask.shape == (3, 1, 1, 4)
    assert mask[:, 0, 0].tolist() == [
        [True, True, True, False],
        [True, False, False, False],
        [False, False, False, False],
    ]
    from_tensor = padding_mask(torch.tensor([3, 1, 0]), 4)
    assert torch.equal(mask, from_tensor)


def test_padding_equals_truncation():
    """Masking the padded keys equals attending to the unpadded sequence."""
    lengths = [5, 2, 3]
    q, k, v = _qkv(3, 2, t_q=4, t_k=5)
    out, weights = scaled_dot_product_attention(
        q, k, v, mask=padding_mask(lengths, 5)
    )
    for b, n in enumerate(lengths):
        short, _ = scaled_dot_product_attention(q[b], k[b, :, :n], v[b, :, :n])
        _close(out[b], short)
        assert (weights[b, :, :, n:] == 0).all()


def test_masked_keys_and_values_do_not_matter():
    """Changing keys and values where the mask blocks leaves the output."""
    q, k, v = _qkv(2, t_q=3, t_k=5)
    mask = padding_mask([3, 4], 5)[:, 0]  # (B, 1, t_k)
    out, _ = scaled_dot_product_attention(q, k, v, mask=mask)
    blocked = ~mask[:, 0, :]  # (B, t_k)
    k2, v2 = k.clone(), v.clone()
    k2[blocked] = 1e6
    v2[blocked] = -1e6
    out2, _ = scaled_dot_product_attention(q, k2, v2, mask=mask)
    _close(out, out2)


def test_rows_sum_to_one():
    """Each query's weights over the keys it may see sum to 1."""
    q, k, v = _qkv(2, 3, t_q=4, t_k=6, dtype=torch.float32)
    _, weights = scaled_dot_product_attention(q, k, v, is_causal=True)
    sums = weights.sum(dim=-1)
    torch.testing.assert_close(sums, torch.ones_like(sums))
    assert (weights >= 0).all()


def test_fully_masked_rows_are_zero():
    """A query that may see no key gets zero weights and zero output."""
    q, k, v = _qkv(2, t_q=3, t_k=4)
    mask = torch.ones(2, 3, 4, dtype=torch.bool)
    mask[0, 1] = False  # query 1 of batch 0 sees nothing
    out, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    assert not out.isnan().any() and not weights.isnan().any()
    assert (weights[0, 1] == 0).all()
    assert (out[0, 1] == 0).all()
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    _close(out, expected)
    # The other rows are untouched by the dead one.
    _close(weights[0, 0].sum(), torch.tensor(1.0, dtype=torch.float64))


def test_fully_masked_float_rows_are_zero():
    """A float mask of all -inf in a row also gives zeros, not NaN."""
    q, k, v = _qkv(t_q=2, t_k=3)
    bias = torch.zeros(2, 3, dtype=torch.float64)
    bias[1] = float("-inf")
    out, weights = scaled_dot_product_attention(q, k, v, mask=bias)
    assert (weights[1] == 0).all() and (out[1] == 0).all()
    assert not out.isnan().any()


def test_fully_masked_row_gradient_is_finite():
    """Backward through a fully masked row gives finite (zero) gradients."""
    q, k, v = _qkv(1, t_q=3, t_k=4)
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    mask = torch.ones(1, 3, 4, dtype=torch.bool)
    mask[0, 2] = False
    out, _ = scaled_dot_product_attention(q, k, v, mask=mask)
    out.pow(2).sum().backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()
    assert (q.grad[0, 2] == 0).all()


def test_scale_is_inverse_sqrt_dk():
    """Scores are divided by sqrt(d_k): a hand-computed 2x2 example."""
    # d_k = 4, so scores are q.k / 2.
    q = torch.tensor([[2.0, 0, 0, 0], [0, 4.0, 0, 0]], dtype=torch.float64)
    k = torch.tensor([[1.0, 0, 0, 0], [0, 1.0, 0, 0]], dtype=torch.float64)
    v = torch.eye(2, dtype=torch.float64)
    out, weights = scaled_dot_product_attention(q, k, v)
    e = math.e
    # Row 0 scores (1, 0); row 1 scores (0, 2).
    expected = torch.tensor(
        [[e / (e + 1), 1 / (e + 1)], [1 / (1 + e**2), e**2 / (1 + e**2)]],
        dtype=torch.float64,
    )
    _close(weights, expected)
    _close(out, expected)  # v is the identity


def test_gradcheck():
    """Analytic gradients match finite differences in float64."""
    q, k, v = _qkv(2, t_q=3, t_k=4, d_k=3, d_v=2)
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    mask = torch.tensor([True, True, False, True])

    def fn(q, k, v):
        return scaled_dot_product_attention(q, k, v, mask=mask)

    assert torch.autograd.gradcheck(fn, (q, k, v))

    def causal(q, k, v):
        return scaled_dot_product_attention(q, k, v, is_causal=True)

    assert torch.autograd.gradcheck(causal, (q, k, v))


def test_works_in_float32():
    """float32 agrees with F.sdpa at PyTorch's own tolerance."""
    q, k, v = _qkv(2, 2, t_q=5, t_k=7, dtype=torch.float32)
    out, _ = scaled_dot_product_attention(q, k, v, is_causal=True)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1.3e-6)


# --- bad arguments -----------------------------------------------------


def test_rejects_non_tensor():
    """A list instead of a tensor is a TypeError naming the argument."""
    q, k, v = _qkv()
    with pytest.raises(TypeError, match="k must be a torch.Tensor"):
        scaled_dot_product_attention(q, k.tolist(), v)


def test_rejects_integer_tensor():
    """Integer inputs are refused rather than silently truncated."""
    q, k, v = _qkv()
    with pytest.raises(TypeError, match="q must be a floating-point"):
        scaled_dot_product_attention(q.long(), k, v)


def test_rejects_rank_one():
    """Inputs need at least (T, d) dims."""
    q, k, v = _qkv()
    with pytest.raises(
        ValueError, match=r"v must have at least 2 dims.*\(6,\)"
    ):
        scaled_dot_product_attention(q, k, v[0])


def test_rejects_mixed_dtypes():
    """q, k, v of different dtypes are refused with all three named."""
    q, k, v = _qkv()
    with pytest.raises(TypeError, match="must share a dtype"):
        scaled_dot_product_attention(q, k.float(), v)


def test_rejects_dk_mismatch():
    """q and k must agree on d_k."""
    q, _, v = _qkv(d_k=4)
    _, k, _ = _qkv(d_k=3)
    with pytest.raises(ValueError, match=r"same last dim d_k, got 4 and 3"):
        scaled_dot_product_attention(q, k, v)


def test_rejects_kv_length_mismatch():
    """k and v must have the same number of keys."""
    q, k, _ = _qkv(t_k=5)
    _, _, v = _qkv(t_k=4)
    with pytest.raises(ValueError, match=r"same length T_k, got 5 and 4"):
        scaled_dot_product_attention(q, k, v)


def test_rejects_batch_mismatch():
    """Leading dims must match exactly (no silent broadcasting)."""
    q, _, _ = _qkv(2)
    _, k, v = _qkv(3)
    with pytest.raises(ValueError, match=r"leading \(batch\) dims.*\(2,\)"):
        scaled_dot_product_attention(q, k, v)


def test_rejects_bad_mask_shape():
    """A mask that does not broadcast to (..., T_q, T_k) is named."""
    q, k, v = _qkv(2, t_q=3, t_k=5)
    mask = torch.ones(3, 4, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"mask of shape \(3, 4\)"):
        scaled_dot_product_attention(q, k, v, mask=mask)


def test_rejects_mask_that_would_grow_the_output():
    """A mask with more leading dims than the scores is refused."""
    q, k, v = _qkv(t_q=3, t_k=5)
    mask = torch.ones(2, 3, 5, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"does not broadcast"):
        scaled_dot_product_attention(q, k, v, mask=mask)


def test_rejects_integer_mask():
    """An int mask is ambiguous (bool or additive?) and refused."""
    q, k, v = _qkv(t_q=3, t_k=5)
    with pytest.raises(TypeError, match="mask must be bool"):
        scaled_dot_product_attention(q, k, v, mask=torch.ones(3, 5).long())


def test_rejects_non_bool_is_causal():
    """is_causal must be a bool, not a mask passed in the wrong slot."""
    q, k, v = _qkv(t_q=3, t_k=5)
    with pytest.raises(TypeError, match="is_causal must be a bool"):
        scaled_dot_product_attention(q, k, v, None, causal_mask(3, 5))


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((0, 3), ValueError, "t_q must be positive, got 0"),
        ((3, -1), ValueError, "t_k must be positive, got -1"),
        ((2.0, 3), TypeError, "t_q must be an int, got float"),
    ],
)
def test_causal_mask_rejects(args, error, message):
    """causal_mask names the bad size."""
    with pytest.raises(error, match=message):
        causal_mask(*args)


@pytest.mark.parametrize(
    ("lengths", "error", "message"),
    [
        ([3, 5], ValueError, r"0..t_k \(4\), got \[3, 5\]"),
        ([-1], ValueError, r"lengths\[0\] must be >= 0, got -1"),
        ([1.5], TypeError, r"lengths\[0\] must be an int"),
        (torch.tensor([1.0]), TypeError, "lengths must hold integers"),
        (torch.tensor([[1]]), ValueError, r"lengths must be 1-D"),
    ],
)
def test_padding_mask_rejects(lengths, error, message):
    """padding_mask names the bad length."""
    with pytest.raises(error, match=message):
        padding_mask(lengths, 4)


# --- NaN behind a mask: bool, float and is_causal agree with PyTorch -----


def _nan_in_blocked_key():
    """q, k, v with a NaN in key 4, and a bool mask that blocks key 4."""
    q, k, v = _qkv(2, t_q=3, t_k=5)
    k[:, 4, 0] = float("nan")
    allowed = torch.ones(5, dtype=torch.bool)
    allowed[4] = False
    return q, k, v, allowed


def _same_nans(a, b):
    torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-12, equal_nan=True)


def test_nan_behind_bool_mask_acts_as_float_mask():
    """A mask blocks a key's weight, not its NaN: bool == float == torch.

    masked_fill would have replaced the NaN score by -inf and hidden it;
    PyTorch adds the mask, NaN + -inf = NaN, so the row turns NaN.
    """
    q, k, v, allowed = _nan_in_blocked_key()
    bias = torch.zeros(5, dtype=torch.float64)
    bias[~allowed] = float("-inf")
    by_bool, w_bool = scaled_dot_product_attention(q, k, v, mask=allowed)
    by_float, w_float = scaled_dot_product_attention(q, k, v, mask=bias)
    torch_out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    assert by_bool.isnan().all() and w_bool.isnan().all()
    _same_nans(by_bool, by_float)
    _same_nans(w_bool, w_float)
    _same_nans(by_bool, torch_out)


def test_nan_behind_causal_mask_matches_torch():
    """is_causal adds its mask too: a NaN in a future key stays, as in F.sdpa.

    Query 0 never sees key 4, yet its score for key 4 is NaN + -inf.
    """
    q, k, v = _qkv(2, t_q=5, t_k=5)
    k[:, 4, 0] = float("nan")
    out, _ = scaled_dot_product_attention(q, k, v, is_causal=True)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert out.isnan().all()
    _same_nans(out, expected)


def test_finite_blocked_keys_still_do_not_matter_with_float_mask():
    """The additive form changes nothing for finite keys: huge ones vanish."""
    q, k, v, allowed = _nan_in_blocked_key()
    k[:, 4, 0] = 1e6
    out, _ = scaled_dot_product_attention(q, k, v, mask=allowed)
    short, _ = scaled_dot_product_attention(q, k[:, :4], v[:, :4])
    _close(out, short)
