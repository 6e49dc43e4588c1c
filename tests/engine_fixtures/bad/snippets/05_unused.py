"""Fixture: no slide includes this snippet."""

print("nobody sees this")
