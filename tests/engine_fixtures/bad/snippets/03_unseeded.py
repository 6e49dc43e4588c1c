"""Fixture: random numbers without torch.manual_seed."""

import torch

print(torch.randn(3))
