"""Bench: scaled dot-product scores for one head."""

import math

import torch

torch.manual_seed(0)
T, d_k = 4, 4
q, k = torch.randn(T, d_k), torch.randn(T, d_k)
scores = q @ k.T / math.sqrt(d_k)  # (T, T)
print("scores:", tuple(scores.shape))
print(scores.round(decimals=3))
