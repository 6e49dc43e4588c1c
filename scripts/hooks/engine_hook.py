"""Placeholder: replaced by its issue's work."""
