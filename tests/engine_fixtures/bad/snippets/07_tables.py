"""Fixture: publishes one table and prints nothing."""

from mha_ref.tables import publish_table

publish_table("shapes", ["tensor", "shape"], [["x", "(1, 4, 8)"]])
