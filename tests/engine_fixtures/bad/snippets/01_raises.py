"""Fixture: fails halfway, like a shape bug would."""

import torch

print("before the error")
x = torch.zeros(2, 3)
x.view(4, 2)  # 6 elements cannot be viewed as 8
