"""Tests for mha_ref.traps: what the wrong splits really hand each head.

Inputs are built so each value names its origin: ``x[b, t, f] = 100 * t
+ f``. Decoding a row's values then says which position and features it
holds, independently of the helpers under test.
"""

import pytest
import torch

from mha_ref import (
    MultiHeadAttention,
    attend_flat,
    attend_with_split,
    direct_view_origins,
    flat_row_origins,
    split_heads,
    split_heads_direct_view,
    split_heads_flat,
    split_heads_transpose_first,
)


def _labelled(seq_len, d_model, batch=1):
    """x[b, t, f] = 100 * t + f (the same in every batch)."""
    t = torch.arange(seq_len, dtype=torch.float64)[:, None]
    f = torch.arange(d_model, dtype=torch.float64)[None, :]
    return (100 * t + f).expand(batch, seq_len, d_model).contiguous()


def _decode(row):
    """(position, feature_start, feature_stop) of a row of labels."""
    positions = (row // 100).long()
    features = (row % 100).long()
    assert (positions == positions[0]).all(), "row spans positions"
    assert (features.diff() == 1).all(), "row features not consecutive"
    return int(positions[0]), int(features[0]), int(features[-1]) + 1


def _module_and_input(d_model=8, num_heads=2, seq_len=4, batch=2):
    torch.manual_seed(0)
    module = MultiHeadAttention(d_model, num_heads).double()
    x = torch.randn(batch, seq_len, d_model, dtype=torch.float64)
    return module, x


@pytest.mark.parametrize(("seq_len", "h", "d_model"), [(4, 2, 8), (3, 4, 8)])
def test_flat_row_is_position_r_div_h_head_r_mod_h(seq_len, h, d_model):
    """Row r of view(B, T*h, d_k) is position r // h, head r % h."""
    x = _labelled(seq_len, d_model)
    d_k = d_model // h
    flat = split_heads_flat(x, h)
    assert flat.shape == (1, seq_len * h, d_k)
    for r in range(seq_len * h):
        pos, head = r // h, r % h
        expected = x[0, pos, head * d_k : (head + 1) * d_k]
        assert torch.equal(flat[0, r], expected), r


@pytest.mark.parametrize(("seq_len", "h", "d_model"), [(4, 2, 8), (5, 3, 6)])
def test_flat_row_origins_match_data(seq_len, h, d_model):
    """flat_row_origins agrees with the decoded contents of each row."""
    d_k = d_model // h
    flat = split_heads_flat(_labelled(seq_len, d_model), h)
    decoded = []
    for row in flat[0]:
        pos, start, _ = _decode(row)
        decoded.append((pos, start // d_k))
    assert flat_row_origins(seq_len, h) == decoded


def test_flat_head_zero_is_not_every_hth_token():
    """The slide's "head 0 gets tokens 0, h, 2h, ..." is not what happens."""
    seq_len, h, d_model = 4, 2, 8
    flat = split_heads_flat(_labelled(seq_len, d_model), h)
    # Reading the first T rows as "head 0", as the slide does:
    first = [_decode(row)[0] for row in flat[0, :seq_len]]
    assert first == [0, 0, 1, 1]
    assert first != list(range(0, seq_len * h, h))[:seq_len]


@pytest.mark.parametrize(
    ("seq_len", "h", "d_model"), [(4, 2, 8), (6, 3, 6), (8, 4, 8), (3, 2, 4)]
)
def test_direct_view_origins_match_data(seq_len, h, d_model):
    """direct_view_origins agrees with the decoded rows of view(B,h,T,d_k)."""
    view = split_heads_direct_view(_labelled(seq_len, d_model), h)
    assert view.shape == (1, h, seq_len, d_model // h)
    decoded = [[_decode(row) for row in head] for head in view[0]]
    assert direct_view_origins(seq_len, h, d_model) == decoded


@pytest.mark.parametrize(
    ("seq_len", "h", "d_model"), [(4, 2, 8), (6, 3, 6), (8, 4, 8), (4, 4, 8)]
)
def test_direct_view_head_gets_a_block_of_positions(seq_len, h, d_model):
    """When h | T, head i holds positions i*T/h..(i+1)*T/h-1, each h times."""
    view = split_heads_direct_view(_labelled(seq_len, d_model), h)
    per_head = seq_len // h
    for i in range(h):
        positions = [_decode(row)[0] for row in view[0, i]]
        block = range(i * per_head, (i + 1) * per_head)
        assert sorted(set(positions)) == list(block)
        assert all(positions.count(p) == h for p in block)


def test_transpose_first_rows_mix_positions():
    """Option D's rows are read along the sequence: one row, many positions."""
    x = _labelled(4, 8)
    scrambled = split_heads_transpose_first(x, 2)
    assert scrambled.shape == (1, 2, 4, 4)
    row = scrambled[0, 0, 0]
    assert len(set((row // 100).long().tolist())) > 1


def test_transpose_first_view_raises_for_most_sizes():
    """The slide's .view on the transposed tensor raises (why we reshape)."""
    x = torch.randn(1, 3, 8)  # T=3, d_k=4: sizes do not line up
    with pytest.raises(RuntimeError, match="view"):
        x.transpose(1, 2).view(1, 2, 3, 4)


def test_transpose_first_equals_view_when_view_works():
    """At the lesson's sizes (T == d_k) .view works and reshape agrees."""
    x = torch.randn(1, 4, 8)  # d_model=8, h=2, d_k=4, T=4
    by_view = x.transpose(1, 2).view(1, 2, 4, 4)
    assert torch.equal(split_heads_transpose_first(x, 2), by_view)


@pytest.mark.parametrize(
    "split",
    [split_heads_flat, split_heads_direct_view, split_heads_transpose_first],
)
def test_wrong_splits_silently_change_the_output(split):
    """Each wrong split keeps the output's shape but changes its values."""
    module, x = _module_and_input()
    correct, _ = module(x, x, x)
    wrong, _ = attend_with_split(module, x, split)
    assert wrong.shape == correct.shape
    assert (wrong - correct).abs().max() > 1e-3


def test_attend_with_correct_split_equals_module():
    """The harness is faithful: the right split gives the module's output."""
    module, x = _module_and_input()
    out, weights = attend_with_split(module, x, split_heads)
    ref_out, ref_weights = module(x, x, x)
    torch.testing.assert_close(out, ref_out, atol=1e-12, rtol=0)
    torch.testing.assert_close(weights, ref_weights, atol=1e-12, rtol=0)


def test_attend_flat_mixes_heads_and_positions():
    """The flat split attends over T*h rows, across heads and positions."""
    module, x = _module_and_input(d_model=8, num_heads=2, seq_len=4)
    out, weights = attend_flat(module, x)
    assert out.shape == (2, 4, 8)
    assert weights.shape == (2, 8, 8)
    # Row 0 (position 0, head 0) gives weight to row 1 (position 0, head 1).
    assert (weights[:, 0, 1] > 0).all()
    correct, _ = module(x, x, x)
    assert (out - correct).abs().max() > 1e-3
    same, _ = attend_with_split(module, x, split_heads_flat)
    assert torch.equal(out, same)


@pytest.mark.parametrize(
    ("split", "seq_len", "h"),
    [
        (split_heads_direct_view, 4, 1),
        (split_heads_direct_view, 1, 2),
        (split_heads_transpose_first, 1, 4),
        (split_heads_flat, 4, 1),
    ],
)
def test_wrong_splits_are_harmless_in_degenerate_cases(split, seq_len, h):
    """With one head or one position some wrong splits happen to work."""
    module, x = _module_and_input(num_heads=h, seq_len=seq_len)
    correct, _ = module(x, x, x)
    wrong, _ = attend_with_split(module, x, split)
    torch.testing.assert_close(wrong, correct, atol=1e-12, rtol=0)


def test_traps_reject_bad_arguments():
    """The trap helpers name bad sizes and inputs like the real module."""
    module, x = _module_and_input()
    with pytest.raises(ValueError, match=r"d_model \(8\) must be divisible"):
        split_heads_flat(x, 3)
    with pytest.raises(ValueError, match=r"d_model \(6\) must be divisible"):
        direct_view_origins(4, 4, 6)
    with pytest.raises(ValueError, match="seq_len must be positive"):
        flat_row_origins(0, 2)
    with pytest.raises(TypeError, match="split must be callable"):
        attend_with_split(module, x, "flat")
    with pytest.raises(TypeError, match="module must be a MultiHeadAttention"):
        attend_flat(torch.nn.Linear(8, 8), x)
    with pytest.raises(ValueError, match=r"feature size d_model \(8\)"):
        attend_flat(module, torch.randn(1, 3, 6, dtype=torch.float64))
