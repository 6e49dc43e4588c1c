"""The bench's verdicts (``make bench``): a figure it could not measure
never counts as met."""

from __future__ import annotations

import pytest

from lessonbuild import bench, pageweight


def test_page_weight_without_a_browser_is_missed(
    monkeypatch, tmp_path, capsys
):
    def no_browser(site):
        raise RuntimeError("chromium missing at /usr/bin/chromium")

    monkeypatch.setattr(pageweight, "measure", no_browser)

    figures = bench.page_weight_rows(tmp_path / "site", tmp_path)
    assert [f.label for f in figures] == [
        "first visit to slide 15 (Chromium)",
        "then the next slide",
    ]
    assert all(f.met is False and f.value == "not measured" for f in figures)
    assert "chromium missing" in capsys.readouterr().err


def test_a_row_that_fails_is_missed_and_the_others_still_run(
    monkeypatch, tmp_path, capsys
):
    """One broken row (a build that fails) costs its own verdict only."""

    def broken(site, tmp):
        raise RuntimeError("build failed: boom")

    def fine(site, tmp):
        return [bench.within("fine", 0.1, 1.0)]

    monkeypatch.setattr(bench, "ROWS", [broken, fine])
    monkeypatch.setattr(bench, "copy_site", lambda root, tmp: tmp)
    assert bench.bench(tmp_path) == 1
    out = capsys.readouterr()
    assert "boom" in out.err
    assert "FAILED" in out.out and "fine" in out.out


def test_a_time_over_its_ceiling_is_missed():
    assert bench.within("x", 1.2, 1.0).met is False
    assert bench.within("x", 0.8, 1.0).met is True
    assert bench.at_most("x", 2.3, 2.0, 1.1, "floor").met is False
    assert bench.at_most("x", 2.1, 2.0, 1.1, "floor").met is True


_RECORDER = """\
import os
with open(os.environ["FLOOR_RECORD"], "a") as f:
    tables = os.environ["MHA_REF_TABLES_FILE"]  # where figures publish
    f.write(f"{__file__} {hash('abc')} {tables}\\n")
"""


def _floor_site(tmp_path, bodies):
    site = tmp_path / "site"
    (site / "snippets").mkdir(parents=True)
    rels = []
    for i, body in enumerate(bodies):
        rel = f"snippets/s{i}.py"
        (site / rel).write_text(body)
        rels.append(rel)
    return site, rels


def test_the_floor_runs_each_snippet_twice_as_the_engine_does(
    monkeypatch, tmp_path
):
    """One interpreter per hash seed, each runs every snippet once, its
    figures published into a file of its own (as the engine's do)."""
    site, rels = _floor_site(tmp_path, [_RECORDER, _RECORDER])
    record = tmp_path / "record"
    monkeypatch.setenv("FLOOR_RECORD", str(record))
    assert bench.floor_seconds(site, rels) > 0
    lines = [line.split() for line in record.read_text().splitlines()]
    for rel in rels:
        runs = [h for path, h, _ in lines if path.endswith(rel)]
        assert len(runs) == 2
        assert len(set(runs)) == 2  # two hash seeds
    assert len({tables for *_, tables in lines}) == 2  # a file a seed


def test_a_floor_whose_snippet_fails_is_an_error(tmp_path):
    site, rels = _floor_site(
        tmp_path, ["print('fine')\n", "raise SystemExit(3)\n"]
    )
    with pytest.raises(RuntimeError, match="floor's runs failed"):
        bench.floor_seconds(site, rels)
