"""The bench's verdicts (``make bench``): a figure it could not measure
never counts as met."""

from __future__ import annotations

from pathlib import Path

import pytest

from lessonbuild import bench, pageweight


def test_page_weight_without_a_browser_is_missed(
    monkeypatch, tmp_path, capsys
):
    def no_browser(site):
        raise RuntimeError("chromium missing at /usr/bin/chromium")

    monkeypatch.setattr(pageweight, "measure", no_browser)
    figures = bench._page_weight(Path(tmp_path))
    assert [f.label for f in figures] == [
        "first visit to slide 15 (Chromium)",
        "then the next slide",
    ]
    assert all(f.met is False and f.value == "not measured" for f in figures)
    assert "chromium missing" in capsys.readouterr().err


def test_a_time_over_its_ceiling_is_missed():
    assert bench.within("x", 1.2, 1.0).met is False
    assert bench.within("x", 0.8, 1.0).met is True


_RECORDER = """\
import os
with open(os.environ["FLOOR_RECORD"], "a") as f:
    f.write(f"{__file__} {hash('abc')}\\n")
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
    """Two seeds: one interpreter per hash seed, each runs every snippet
    once; one seed: one interpreter runs both runs."""
    site, rels = _floor_site(tmp_path, [_RECORDER, _RECORDER])
    for seeds, hashes in ((2, 2), (1, 1)):
        record = tmp_path / f"record-{seeds}"
        monkeypatch.setenv("FLOOR_RECORD", str(record))
        assert bench.floor_seconds(site, rels, seeds) > 0
        lines = [line.split() for line in record.read_text().splitlines()]
        for rel in rels:
            runs = [h for path, h in lines if path.endswith(rel)]
            assert len(runs) == 2
            assert len(set(runs)) == hashes


def test_a_floor_whose_snippet_fails_is_an_error(tmp_path):
    site, rels = _floor_site(
        tmp_path, ["print('fine')\n", "raise SystemExit(3)\n"]
    )
    with pytest.raises(RuntimeError, match="floor's runs failed"):
        bench.floor_seconds(site, rels, 2)
