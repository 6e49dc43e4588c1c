"""Heads that specialise: a tiny model whose two heads split a task.

The lesson (slides/09-what-each-head-learns.html) says different heads
learn different relationships. With random weights that is not visible
(every head attends almost uniformly), so the lesson trains one
``MultiHeadAttention`` layer on a task that needs two relationships at
once:

* **previous**: every position must name the token just before it;
* **first**: every position must also name the sequence's first token.

The layer is causal self-attention with no residual path, so the only
way information reaches position ``t`` is through attention. One head
cannot look sharply at both ``t - 1`` and ``0``: the softmax would split
its mass and the value it returns would mix the two tokens. Training
therefore gives each relationship to its own head.

**The specialisation figure.** For head ``i`` and relationship ``r``,
``mass[i, r]`` is the attention weight head ``i`` puts on the key that
``r`` names (``t - 1`` or ``0``), averaged over a held-out batch and over
the query positions ``t >= 2`` (at ``t = 1`` the two relationships name
the same key). Relationships are then assigned to distinct heads so that
the total mass is largest; a head's score is its mass on the relationship
it was assigned, and the figure is the *smallest* of those scores: "every
relationship has its own head that puts at least this much attention on
it". A head that shared both relationships could give each at most half
its mass, so the figure only exceeds 0.5 when the heads really split the
work; untrained heads attend roughly uniformly over ``t + 1`` keys and
score about 0.16.

Training takes about 0.4 s on one CPU thread and is deterministic for a
given seed. :func:`train` caches the weights under ``.cache/specialise/``
keyed by a hash of the code, so reruns (notebooks, slide figures) load
instead of training. ``python -m mha_ref.specialise`` prints the figure.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from .mha import MultiHeadAttention

__all__ = [
    "RELATIONSHIPS",
    "SPLIT_THRESHOLD",
    "SpecialisingModel",
    "Task",
    "attention_maps",
    "make_task",
    "specialisation",
    "specialisation_figure",
    "train",
]

VOCAB = 10
SEQ_LEN = 12
D_MODEL = 32
NUM_HEADS = 2
# 60 steps: the figure is 0.988-0.998 over seeds 0-11 (0.996 at 200
# steps, for three times the time); the build trains it three times.
STEPS = 60
BATCH_SIZE = 64
LEARNING_RATE = 1e-2
# Query rows scored by specialisation(): from t = 2 on, "previous" (t-1)
# and "first" (0) name different keys.
FIRST_SCORED_ROW = 2
RELATIONSHIPS = ("previous", "first")
#: Above this figure the heads have split the relationships: a head that
#: served both could give each at most half of its attention.
SPLIT_THRESHOLD = 0.5
_IGNORE = -100  # cross_entropy's ignore_index: t = 0 has no previous token

_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CACHE = _ROOT / ".cache" / "specialise"
# The trained weights depend on this file and on the module they train.
_CODE_FILES = ("specialise.py", "mha.py", "attention.py")


@dataclass(frozen=True)
class Task:
    """A batch of the two-relationship task.

    ``tokens`` is ``(B, T)``; ``targets`` is ``(B, T, 2)``: for position
    ``t``, ``targets[..., t, 0]`` is the token at ``t - 1`` (ignored at
    ``t = 0``) and ``targets[..., t, 1]`` the token at position 0.
    """

    tokens: torch.Tensor
    targets: torch.Tensor


def make_task(
    batch_size: int,
    generator: torch.Generator,
    seq_len: int = SEQ_LEN,
    vocab: int = VOCAB,
) -> Task:
    """Draw ``batch_size`` uniform random sequences and their targets."""
    tokens = torch.randint(
        vocab, (batch_size, seq_len), generator=generator
    )  # (B, T)
    previous = torch.full_like(tokens, _IGNORE)  # (B, T)
    previous[:, 1:] = tokens[:, :-1]
    first = tokens[:, :1].expand(-1, seq_len)  # (B, T)
    return Task(tokens, torch.stack([previous, first], dim=-1))  # (B, T, 2)


def relationship_keys(seq_len: int) -> torch.Tensor:
    """``(len(RELATIONSHIPS), seq_len)``: the key each query row must read.

    Row 0 (previous) holds ``t - 1`` (0 for ``t = 0``); row 1 (first)
    holds 0 everywhere.
    """
    rows = torch.arange(seq_len)  # (T,)
    previous = (rows - 1).clamp(min=0)  # (T,)
    first = torch.zeros_like(rows)  # (T,)
    return torch.stack([previous, first])  # (R, T)


class SpecialisingModel(nn.Module):
    """Embeddings, one causal ``MultiHeadAttention``, two linear readouts.

    No residual connection: a position's own embedding never reaches its
    readout, so everything it predicts must come through attention.
    """

    def __init__(
        self,
        vocab: int = VOCAB,
        seq_len: int = SEQ_LEN,
        d_model: int = D_MODEL,
        num_heads: int = NUM_HEADS,
    ) -> None:
        super().__init__()
        self.vocab = vocab
        self.token_embedding = nn.Embedding(vocab, d_model)
        self.position_embedding = nn.Embedding(seq_len, d_model)
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.readout = nn.Linear(d_model, len(RELATIONSHIPS) * vocab)

    def forward(
        self, tokens: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(B, T)`` tokens -> logits ``(B, T, 2, vocab)``, weights."""
        B, T = tokens.shape
        positions = torch.arange(T, device=tokens.device)  # (T,)
        x = self.token_embedding(tokens) + self.position_embedding(
            positions
        )  # (B, T, d_model)
        out, weights = self.attention(x, x, x, is_causal=True)
        logits = self.readout(out)  # (B, T, 2 * vocab)
        logits = logits.view(B, T, len(RELATIONSHIPS), self.vocab)
        return logits, weights  # (B, T, 2, vocab), (B, h, T, T)


def train(
    seed: int = 0,
    steps: int = STEPS,
    num_heads: int = NUM_HEADS,
    cache_dir: Path | None = DEFAULT_CACHE,
) -> tuple[SpecialisingModel, dict]:
    """Train (or load) the model; return it and its history.

    The history holds ``loss`` (one float per step), ``seconds`` (training
    time, 0.0 when loaded) and ``cached`` (whether it was loaded). Runs on
    one CPU thread with its own RNG state, so
    the same arguments give bit-identical weights and the caller's RNG and
    thread settings are left as they were. ``cache_dir=None`` always
    trains and writes nothing.
    """
    path = None
    if cache_dir is not None:
        path = Path(cache_dir) / f"{_cache_key(seed, steps, num_heads)}.pt"
        if path.is_file():
            saved = torch.load(path, weights_only=True)
            model = SpecialisingModel(num_heads=num_heads)
            model.load_state_dict(saved["state"])
            model.eval()
            history = {"loss": saved["loss"], "seconds": 0.0, "cached": True}
            return model, history
    with _deterministic(seed):
        start = time.perf_counter()
        model = SpecialisingModel(num_heads=num_heads)
        generator = torch.Generator().manual_seed(seed)
        optimiser = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
        losses = []
        for _ in range(steps):
            task = make_task(BATCH_SIZE, generator)
            loss = _loss(model, task)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            losses.append(loss.item())
        seconds = time.perf_counter() - start
    model.eval()
    if path is not None:
        _save(path, {"state": model.state_dict(), "loss": losses})
    return model, {"loss": losses, "seconds": seconds, "cached": False}


def _save(path: Path, data: dict) -> None:
    """Cache ``data`` at ``path``, atomically; a cache that cannot be
    written (a read-only checkout, as the site build runs its notebooks)
    only means training again next time."""
    tmp = path.with_suffix(f".{os.getpid()}.tmp")  # one per process
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Opened here, not by torch.save: a read-only folder is then an
        # OSError, not torch's RuntimeError.
        with open(tmp, "wb") as f:
            torch.save(data, f)
        tmp.replace(path)  # atomic: a concurrent reader never sees half
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def held_out_batch(batch_size: int = 256, seed: int = 12345) -> Task:
    """A batch from a generator that training never uses."""
    return make_task(batch_size, torch.Generator().manual_seed(seed))


@torch.no_grad()
def head_masses(model: SpecialisingModel, batch: Task) -> torch.Tensor:
    """``(h, R)``: each head's mean attention mass on each relationship."""
    _, weights = model(batch.tokens)  # (B, h, T, T)
    T = weights.size(-1)
    keys = relationship_keys(T)  # (R, T)
    rows = torch.arange(T)  # (T,)
    # on_key[b, i, r, t] = weight head i puts on relationship r's key at t
    on_key = weights[:, :, rows[None, :], keys]  # (B, h, R, T)
    scored = on_key[..., FIRST_SCORED_ROW:]  # (B, h, R, T - 2)
    return scored.mean(dim=(0, 3))  # (h, R)


def specialisation(model: SpecialisingModel, batch: Task) -> dict:
    """Per-head scores under the best assignment of relationships to heads.

    Returns ``{"masses": (h, R) tensor, "heads": {relationship: head},
    "scores": {relationship: mass of its head}}``. See the module
    docstring for the definition.
    """
    masses = head_masses(model, batch)  # (h, R)
    h, r = masses.shape
    if h < r:
        raise ValueError(f"need at least {r} heads, the model has {h}")
    best = max(
        itertools.permutations(range(h), r),
        key=lambda heads: sum(
            masses[i, j].item() for j, i in enumerate(heads)
        ),
    )
    heads = dict(zip(RELATIONSHIPS, best, strict=True))
    scores = {
        name: masses[i, j].item() for j, (name, i) in enumerate(heads.items())
    }
    return {"masses": masses, "heads": heads, "scores": scores}


def specialisation_figure(model: SpecialisingModel, batch: Task) -> float:
    """The smallest assigned score: every relationship gets at least this."""
    return min(specialisation(model, batch)["scores"].values())


@torch.no_grad()
def attention_maps(
    model: SpecialisingModel, example: torch.Tensor
) -> torch.Tensor:
    """``(h, T, T)`` attention weights of every head on one ``(T,)`` input."""
    _, weights = model(example[None, :])  # (1, h, T, T)
    return weights[0]  # (h, T, T)


def _loss(model: SpecialisingModel, task: Task) -> torch.Tensor:
    logits, _ = model(task.tokens)  # (B, T, 2, vocab)
    return nn.functional.cross_entropy(
        logits.reshape(-1, model.vocab),  # (B * T * 2, vocab)
        task.targets.reshape(-1),  # (B * T * 2,)
        ignore_index=_IGNORE,
    )


def _cache_key(seed: int, steps: int, num_heads: int) -> str:
    digest = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for name in _CODE_FILES:
        digest.update((here / name).read_bytes())
    digest.update(f"{seed}:{steps}:{num_heads}:{torch.__version__}".encode())
    return digest.hexdigest()[:16]


@contextlib.contextmanager
def _deterministic(seed: int):
    """One CPU thread and a private RNG; restore both on exit.

    Single-threaded CPU kernels reduce in a fixed order, so this makes
    training bit-reproducible (tests/test_specialise.py checks it).
    ``torch.use_deterministic_algorithms`` is not set: it guards against
    nondeterministic GPU kernels, which this CPU-only training never runs,
    and turning it on imports ``torch._inductor`` (seconds per process).
    """
    threads = torch.get_num_threads()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(threads)


def main() -> None:
    model, history = train()
    result = specialisation(model, held_out_batch())
    how = (
        "loaded from cache"
        if history["cached"]
        else (f"trained in {history['seconds']:.1f} s")
    )
    print(f"{how}; final loss {history['loss'][-1]:.2g}")
    for name, head in result["heads"].items():
        print(
            f"head {head} -> {name}: {result['scores'][name]:.3f} "
            f"of its attention"
        )
    print(f"specialisation figure: {min(result['scores'].values()):.3f}")


if __name__ == "__main__":
    main()
