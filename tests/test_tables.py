"""Tests for mha_ref.tables: rows reach the build only when it listens."""

import json

import pytest
import torch

from mha_ref import TABLES_ENV, publish_table, shape_str


def test_shape_str_matches_the_lesson():
    """Shapes print as the lesson writes them, tuples and torch.Size alike."""
    assert shape_str((1, 4, 8)) == "(1, 4, 8)"
    assert shape_str(torch.Size([2, 2, 5, 5])) == "(2, 2, 5, 5)"
    assert shape_str((5,)) == "(5,)"
    assert shape_str(()) == "()"


def test_publish_without_listener_writes_nothing(tmp_path, monkeypatch):
    """With the env var unset, publishing is a silent no-op."""
    monkeypatch.delenv(TABLES_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    publish_table("shapes", ["tensor", "shape"], [["x", "(1, 4, 8)"]])
    assert list(tmp_path.iterdir()) == []


def test_publish_appends_json_lines(tmp_path, monkeypatch):
    """With the env var set, each call appends one JSON record as strings."""
    sink = tmp_path / "tables.jsonl"
    monkeypatch.setenv(TABLES_ENV, str(sink))
    publish_table("shapes", ["tensor", "shape"], [["x", (1, 4, 8)]])
    publish_table("params", ["h", "params"], [[1, "1,048,576"], [8, 4096]])
    lines = sink.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == [
        {
            "name": "shapes",
            "columns": ["tensor", "shape"],
            "rows": [["x", "(1, 4, 8)"]],
        },
        {
            "name": "params",
            "columns": ["h", "params"],
            "rows": [["1", "1,048,576"], ["8", "4096"]],
        },
    ]


def test_publish_keeps_unicode(tmp_path, monkeypatch):
    """Non-ASCII cells such as d_model² are written as themselves."""
    sink = tmp_path / "tables.jsonl"
    monkeypatch.setenv(TABLES_ENV, str(sink))
    publish_table("t", ["formula"], [["4·d_model²"]])
    assert "4·d_model²" in sink.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("name", "columns", "rows", "message"),
    [
        ("two words", ["a"], [], r"table name must be a Python identifier"),
        (3, ["a"], [], r"table name must be a Python identifier, got 3"),
        ("t", [], [], r"table 't' has no columns"),
        ("t", ["a", "b"], [["1"]], r"row 0 has 1 cells, expected 2 \(a, b\)"),
    ],
)
def test_publish_rejects_bad_tables(
    tmp_path, monkeypatch, name, columns, rows, message
):
    """Bad tables raise even when no build listens, and write nothing."""
    sink = tmp_path / "tables.jsonl"
    monkeypatch.setenv(TABLES_ENV, str(sink))
    with pytest.raises(ValueError, match=message):
        publish_table(name, columns, rows)
    assert not sink.exists()
    monkeypatch.delenv(TABLES_ENV)
    with pytest.raises(ValueError, match=message):
        publish_table(name, columns, rows)
