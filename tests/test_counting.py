"""Tests for mha_ref.counting: FLOPs and parameters match closed forms."""

import dataclasses

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from mha_ref import (
    FlopCount,
    MultiHeadAttention,
    count_parameters,
    forward_flops,
    to_torch_mha,
)


def test_count_parameters_counts_biases_too():
    """count_parameters counts every parameter: 3*5 weights + 5 biases."""
    assert count_parameters(nn.Linear(3, 5)) == 20


def test_count_parameters_agrees_with_torch_mha():
    """Our module and its torch twin hold the same number of scalars."""
    module = MultiHeadAttention(16, 4)
    assert count_parameters(module) == 4 * 16**2
    assert count_parameters(to_torch_mha(module)) == 4 * 16**2


@pytest.mark.parametrize(
    ("d_model", "seq_len", "batch"), [(8, 4, 1), (12, 5, 2), (64, 16, 3)]
)
def test_flops_match_closed_forms_for_every_h(d_model, seq_len, batch):
    """Projections 2*4*B*T*d^2 and attention 2*2*B*T^2*d, for every h."""
    projections = 2 * 4 * batch * seq_len * d_model**2
    attention = 2 * 2 * batch * seq_len**2 * d_model
    for h in [h for h in range(1, d_model + 1) if d_model % h == 0]:
        count = forward_flops(d_model, h, seq_len, batch_size=batch)
        assert count == FlopCount(
            projections, attention, projections + attention
        ), h


def test_attention_cost_grows_with_t_squared():
    """Doubling T quadruples the attention FLOPs and doubles projections.

    The lesson's per-head cost d_model^2 / h has no T in it, so it cannot
    be the attention cost (ARCHITECTURE.md, lesson-source error 1).
    """
    short = forward_flops(64, 8, 10)
    long = forward_flops(64, 8, 20)
    assert long.attention == 4 * short.attention
    assert long.projections == 2 * short.projections


def test_lesson_sizes_do_not_allocate():
    """d_model=512, T=2048 is cheap: the meta device computes nothing."""
    count = forward_flops(512, 8, 2048, batch_size=4)
    assert count.projections == 2 * 4 * 4 * 2048 * 512**2
    assert count.attention == 2 * 2 * 4 * 2048**2 * 512


def test_meta_count_equals_real_count():
    """Counting on real CPU tensors gives the same total as forward_flops."""
    torch.manual_seed(0)
    module = MultiHeadAttention(12, 3)
    x = torch.randn(2, 5, 12)
    counter = FlopCounterMode(display=False)
    with counter:
        module(x, x, x)
    assert counter.get_total_flops() == forward_flops(12, 3, 5, 2).total


def test_flop_count_is_frozen():
    """A FlopCount cannot be edited after the fact."""
    count = forward_flops(8, 2, 4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        count.total = 0


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((10, 3, 4), ValueError, r"d_model \(10\) must be divisible"),
        ((8, 2, 0), ValueError, "seq_len must be positive, got 0"),
        ((8, 2, 4, -1), ValueError, "batch_size must be positive, got -1"),
        ((8, 2, 4.0), TypeError, "seq_len must be an int, got float"),
    ],
)
def test_forward_flops_rejects(args, error, message):
    """Bad sizes raise with the problem named."""
    with pytest.raises(error, match=message):
        forward_flops(*args)


def test_count_parameters_rejects_non_module():
    """Counting something that is not a module is a TypeError."""
    with pytest.raises(TypeError, match="must be a torch.nn.Module"):
        count_parameters([torch.zeros(3)])
