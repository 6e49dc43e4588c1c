"""The bench's verdicts (``make bench``): a figure it could not measure
never counts as met."""

from __future__ import annotations

from pathlib import Path

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
