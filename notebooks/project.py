# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Lesson 81 project: write MultiHeadAttention
#
# You write the module the lesson built, one milestone at a time. Each
# step's code cell writes part of a file, `my_mha.py`, beside this
# notebook (`%%writefile` starts it, `%%writefile -a` adds to it); the
# grading cell after it runs the same checks, with the same messages, as
# `python -m mha_ref.grade my_mha.py`, up to that milestone.
#
# The grader prints one line per check: `skeleton` is milestone 1 of the
# slides, `shapes` milestone 2 and `h=1` milestone 3; `h>1` (the check a
# wrong head split cannot pass), `masks`, `causal` and `T_q!=T_k` come
# after the three milestones.
#
# Replace every `TODO`. Changed an earlier cell? Run the cells again
# from milestone 1 down: each `-a` cell appends to the file.

# %%
from mha_ref.grade import check

# %% [markdown]
# ## Milestone 1: the skeleton
#
# `MultiHeadAttention(d_model, num_heads)` holds four bias-free
# `nn.Linear(d_model, d_model)` projections named `W_Q`, `W_K`, `W_V`,
# `W_O` — $4\,d_{model}^2$ parameters, whatever $h$ — and refuses, with
# a `ValueError` whose message names both numbers, a `num_heads` that
# does not divide `d_model`.

# %%
# %%writefile my_mha.py
import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        # TODO (milestone 1): raise ValueError, naming both numbers,
        # unless num_heads divides d_model; keep num_heads and
        # d_k = d_model // num_heads; make the four projections W_Q, W_K,
        # W_V, W_O.

# %%
check("my_mha.py", upto="skeleton")

# %% [markdown]
# ## Milestones 2 and 3: the forward pass, its shapes, then h = 1
#
# `forward(query, key, value, mask=None, is_causal=False)` returns
# `(output, weights)`: output `(B, T_q, d_model)`, per-head weights
# `(B, h, T_q, T_k)`. Project, split each tensor into heads by **its
# own** length, scale the scores by $1/\sqrt{d_k}$, softmax over the
# keys, weigh the values, merge the heads back, apply `W_O`. No
# dropout: train mode computes what eval mode does. Return the very
# weights that multiply the values, in the graph (not detached), as
# `nn.MultiheadAttention` does, in eval mode too (`model.eval()` leaves
# gradients on). Each call depends on its own arguments and the
# weights alone: nothing kept on `self` from an earlier call, no
# random draw or reseeding. The grader
# checks the shapes (milestone 2), compares your numbers with
# single-head attention at $h = 1$ (milestone 3), then with
# `torch.nn.MultiheadAttention` at $h > 1$ (the check a wrong split
# cannot pass), and runs one backward pass through both.

# %%
# %%writefile -a my_mha.py

    def forward(self, query, key, value, mask=None, is_causal=False):
        # TODO (milestone 2): q, k, v = the projections, split to
        # (B, h, T, d_k); scores (B, h, T_q, T_k); then
        #     if mask is not None or is_causal:
        #         scores = self.mask_scores(scores, mask, is_causal)
        # softmax, weights @ v, merge to (B, T_q, d_model), W_O.
        raise NotImplementedError("TODO: milestone 2, forward")

# %%
check("my_mha.py", upto="h>1")

# %% [markdown]
# ## After the milestones: masks
#
# `mask` is boolean, `True` = may attend, and broadcasts over the
# scores `(B, h, T_q, T_k)`: a padding mask `(B, 1, 1, T_k)` (also for
# one sequence, `B = 1`), a `(T_q, T_k)` mask shared by the batch,
# one per sequence, `(B, 1, T_q, T_k)`, or one per head,
# `(B, h, T_q, T_k)`. `is_causal=True`
# lets query $i$ see keys $0..i$ — also when $T_q \ne T_k$ — and
# combines with `mask`: a key must be allowed by both.

# %%
# %%writefile -a my_mha.py

    def mask_scores(self, scores, mask, is_causal):
        # TODO (masks): set the scores of blocked keys to -inf.
        return scores

# %%
check("my_mha.py")
