"""Tests for mha_ref.specialise: trained heads really split the task.

Threshold (mha_ref.homework_checks.SPECIALISATION_THRESHOLD = 0.75): the
figure is the smallest mass a relationship's own head puts on it. A head
that served both relationships could give each at most 0.5, and uniform
attention over the t + 1 visible keys gives about 0.16 on rows t >= 2, so
a figure above 0.75 means each relationship has a head that spends most
of its attention on it. Trained heads reach ~0.99.
"""

import pytest
import torch

from mha_ref import specialise
from mha_ref.homework_checks import SPECIALISATION_THRESHOLD


@pytest.fixture(scope="module")
def trained():
    """The default model (loaded from .cache/specialise/ when present)."""
    model, _ = specialise.train(seed=0)
    return model


@pytest.fixture(scope="module")
def batch():
    return specialise.held_out_batch()


def test_make_task_targets_name_the_previous_and_first_tokens():
    task = specialise.make_task(3, torch.Generator().manual_seed(1))
    tokens, targets = task.tokens, task.targets
    assert tokens.shape == (3, specialise.SEQ_LEN)
    assert targets.shape == (3, specialise.SEQ_LEN, 2)
    for b in range(3):
        assert targets[b, 0, 0] == -100  # no token before position 0
        for t in range(1, specialise.SEQ_LEN):
            assert targets[b, t, 0] == tokens[b, t - 1]
        for t in range(specialise.SEQ_LEN):
            assert targets[b, t, 1] == tokens[b, 0]


def test_trained_heads_specialise_and_untrained_do_not(trained, batch):
    """Trained figure above the threshold; same seed untrained below."""
    untrained, _ = specialise.train(seed=0, steps=0, cache_dir=None)
    figure = specialise.specialisation_figure(trained, batch)
    before = specialise.specialisation_figure(untrained, batch)
    assert figure > SPECIALISATION_THRESHOLD, (
        f"trained specialisation figure {figure:.3f} <= "
        f"{SPECIALISATION_THRESHOLD}: training no longer splits the "
        f"relationships between heads (check STEPS and LEARNING_RATE)"
    )
    assert before < SPECIALISATION_THRESHOLD, (
        f"untrained figure {before:.3f} >= {SPECIALISATION_THRESHOLD}: "
        f"the figure cannot tell trained heads from random ones"
    )


def test_each_head_ignores_the_other_relationship(trained, batch):
    """Distinct heads, each with little mass on the other's key."""
    result = specialise.specialisation(trained, batch)
    heads = result["heads"]
    assert sorted(heads.values()) == [0, 1]
    masses = result["masses"]  # (h, R)
    assert masses[heads["previous"], 1] < 0.1
    assert masses[heads["first"], 0] < 0.1


def test_trained_model_solves_the_task(trained, batch):
    """The attention pattern is what answers: accuracy ~1 on both."""
    with torch.no_grad():
        logits, _ = trained(batch.tokens)  # (B, T, 2, vocab)
    predicted = logits.argmax(-1)  # (B, T, 2)
    previous_ok = predicted[:, 1:, 0] == batch.targets[:, 1:, 0]
    first_ok = predicted[..., 1] == batch.targets[..., 1]
    assert previous_ok.float().mean() > 0.99
    assert first_ok.float().mean() > 0.99


def test_head_masses_match_a_loop_over_queries(trained):
    """The vectorised mass equals a plain loop over (b, head, t)."""
    small = specialise.make_task(4, torch.Generator().manual_seed(7))
    with torch.no_grad():
        _, weights = trained(small.tokens)  # (B, h, T, T)
    B, h, T, _ = weights.shape
    expected = torch.zeros(h, 2)
    for i in range(h):
        for b in range(B):
            for t in range(2, T):
                expected[i, 0] += weights[b, i, t, t - 1]
                expected[i, 1] += weights[b, i, t, 0]
    expected /= B * (T - 2)
    got = specialise.head_masses(trained, small)
    torch.testing.assert_close(got, expected)


def test_training_is_deterministic_and_leaves_global_state_alone():
    torch.manual_seed(99)
    rng_before = torch.get_rng_state()
    threads = 3  # not the one thread training uses (nor conftest's)
    torch.set_num_threads(threads)
    a, history_a = specialise.train(seed=3, steps=20, cache_dir=None)
    assert torch.equal(torch.get_rng_state(), rng_before)
    assert torch.get_num_threads() == threads
    torch.set_num_threads(1)
    b, history_b = specialise.train(seed=3, steps=20, cache_dir=None)
    assert history_a["loss"] == history_b["loss"]
    for name, value in a.state_dict().items():
        assert torch.equal(value, b.state_dict()[name]), name
    c, _ = specialise.train(seed=4, steps=20, cache_dir=None)
    assert not torch.equal(a.attention.W_Q.weight, c.attention.W_Q.weight), (
        "a different seed must give different weights"
    )


def test_cache_returns_the_trained_weights(tmp_path):
    fresh, history = specialise.train(seed=1, steps=10, cache_dir=tmp_path)
    assert history["cached"] is False
    assert len(list(tmp_path.glob("*.pt"))) == 1
    loaded, again = specialise.train(seed=1, steps=10, cache_dir=tmp_path)
    assert again["cached"] is True
    assert again["loss"] == history["loss"]
    for name, value in fresh.state_dict().items():
        assert torch.equal(value, loaded.state_dict()[name]), name
    specialise.train(seed=1, steps=11, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.pt"))) == 2, "steps must key the cache"


def test_a_cache_that_cannot_be_written_only_means_training(tmp_path):
    """As in the build's sandbox, where the checkout is read-only."""
    (tmp_path / "file").write_text("not a folder")
    cache = tmp_path / "file" / "cache"  # mkdir there fails
    model, history = specialise.train(seed=1, steps=10, cache_dir=cache)
    again, _ = specialise.train(seed=1, steps=10, cache_dir=None)
    assert history["cached"] is False
    for name, value in model.state_dict().items():
        assert torch.equal(value, again.state_dict()[name]), name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_a_cache_file_that_cannot_be_written_only_means_training(tmp_path):
    """The folder exists, the file cannot be made (the build's sandbox
    mounts the checkout read-only: torch.save's own open then raised a
    RuntimeError, not an OSError)."""
    import os

    key = specialise._cache_key(1, 5, specialise.NUM_HEADS)
    blocked = (tmp_path / f"{key}.pt").with_suffix(f".{os.getpid()}.tmp")
    blocked.mkdir()  # a folder where the temporary file would go
    _, history = specialise.train(seed=1, steps=5, cache_dir=tmp_path)
    assert history["cached"] is False
    assert not (tmp_path / f"{key}.pt").exists()


def test_attention_maps_are_causal_rows_of_one_sequence(trained, batch):
    maps = specialise.attention_maps(trained, batch.tokens[0])
    T = specialise.SEQ_LEN
    assert maps.shape == (specialise.NUM_HEADS, T, T)
    torch.testing.assert_close(maps.sum(-1), torch.ones(2, T))
    assert torch.all(maps.triu(diagonal=1) == 0)


def test_main_prints_the_figure(capsys):
    specialise.main()
    out = capsys.readouterr().out
    assert "specialisation figure: " in out
    figure = float(out.rsplit("specialisation figure: ", 1)[1].split()[0])
    assert figure > SPECIALISATION_THRESHOLD
