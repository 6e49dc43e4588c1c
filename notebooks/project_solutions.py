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
# # Lesson 81 project: one solution
#
# One way to write each milestone of the project notebook, graded by
# the same cells. Try the project first: the grader's messages teach more
# than this page does.

# %%
from mha_ref.grade import check

# %% [markdown]
# ## Milestone 1: the skeleton

# %%
# %%writefile my_mha.py
import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(
                f"num_heads ({num_heads}) must divide d_model ({d_model})"
            )
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.W_Q = nn.Linear(d_model, d_model, bias=False)
        self.W_K = nn.Linear(d_model, d_model, bias=False)
        self.W_V = nn.Linear(d_model, d_model, bias=False)
        self.W_O = nn.Linear(d_model, d_model, bias=False)

# %%
check("my_mha.py", upto="skeleton")

# %% [markdown]
# ## Milestones 2 and 3: the forward pass, its shapes, then h = 1

# %%
# %%writefile -a my_mha.py

    def split(self, x):
        B, T, d_model = x.shape
        x = x.view(B, T, self.num_heads, self.d_k)  # (B, T, h, d_k)
        return x.transpose(1, 2)  # (B, h, T, d_k)

    def forward(self, query, key, value, mask=None, is_causal=False):
        q = self.split(self.W_Q(query))  # (B, h, T_q, d_k)
        k = self.split(self.W_K(key))  # (B, h, T_k, d_k)
        v = self.split(self.W_V(value))  # (B, h, T_k, d_k)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None or is_causal:
            scores = self.mask_scores(scores, mask, is_causal)
        weights = torch.softmax(scores, dim=-1)  # (B, h, T_q, T_k)
        ctx = (weights @ v).transpose(1, 2).contiguous()  # (B, T_q, h, d_k)
        merged = ctx.view(query.size(0), query.size(1), -1)  # (B, T_q, d)
        return self.W_O(merged), weights

# %%
check("my_mha.py", upto="h>1")

# %% [markdown]
# ## After the milestones: masks

# %%
# %%writefile -a my_mha.py

    def mask_scores(self, scores, mask, is_causal):
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        if is_causal:
            T_q, T_k = scores.shape[-2:]
            allowed = torch.ones(
                T_q, T_k, dtype=torch.bool, device=scores.device
            ).tril()
            scores = scores.masked_fill(~allowed, float("-inf"))
        return scores

# %%
check("my_mha.py")
