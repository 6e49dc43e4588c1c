"""Bench: softmax turns each row of scores into weights."""

import torch

torch.manual_seed(1)
scores = torch.randn(3, 5)
weights = torch.softmax(scores, dim=-1)
print("row sums:", weights.sum(-1).round(decimals=4).tolist())
print("argmax  :", weights.argmax(-1).tolist())
