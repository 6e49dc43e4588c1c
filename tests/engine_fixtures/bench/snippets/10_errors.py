"""Bench: a head count that does not divide d_model is refused."""

from mha_ref import MultiHeadAttention

for d_model, h in ((8, 2), (8, 3)):
    try:
        MultiHeadAttention(d_model, h)
        print(f"d_model={d_model}, h={h}: ok")
    except ValueError as exc:
        print(f"d_model={d_model}, h={h}: ValueError: {exc}")
