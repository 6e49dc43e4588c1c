"""Fixture: every softmax row sums to one."""

import torch

scores = torch.tensor([[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]])
weights = torch.softmax(scores, dim=-1)
print(weights)
print("row sums:", [round(s, 4) for s in weights.sum(-1).tolist()])
