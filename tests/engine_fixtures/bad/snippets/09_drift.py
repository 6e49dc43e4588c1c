"""Fixture: its slide shows an out-of-date output."""

d_model, h = 8, 4
print("params:", 4 * d_model**2)
print("heads :", h)
