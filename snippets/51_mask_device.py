"""A mask must live on the scores' device (slides/51-the-full-program.html).

On a GPU, scores.masked_fill(~mask, ...) with a mask built on the CPU
raises "expected self and mask to be on the same device". The rule is
checked here without a GPU: the "meta" device is another device too, so
a module that builds its causal mask with device= runs on it (shapes
only, nothing computed), and a mask built without device= is refused
the same way. (tests/test_lesson_truth.py runs the full program of
slides/51-the-full-program.html on meta.)
"""

# --8<-- [start:show]
import torch

from mha_ref import MultiHeadAttention  # masks made on the scores' device

m = MultiHeadAttention(8, 2).to("meta")  # a device that is not the CPU
x = torch.empty(1, 4, 8, device="meta")  # (B, T, d_model)
out, w = m(x, x, x, is_causal=True)  # builds its mask on w's device
print("is_causal on meta :", w.device, tuple(w.shape))

scores = torch.empty(1, 2, 4, 4, device="meta")  # (B, h, T_q, T_k)
mask = torch.ones(4, 4, dtype=torch.bool).tril()  # no device=: CPU
try:
    scores.masked_fill(~mask, float("-inf"))
except RuntimeError as err:
    print("mask on the CPU   :", err)
# --8<-- [end:show]
