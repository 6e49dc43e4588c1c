"""Fixture sites for the snippet-engine tests (see README.md)."""
