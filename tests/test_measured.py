"""Slide 17's measured table (``snippets/measured/heads_timing.md``) is
written by ``make measure-heads`` from the record beside it; the build
does not check it, so a hand edit would pass. It is what the script
writes from that record, byte for byte: re-measure, never retype."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEASURED = ROOT / "snippets" / "measured"


def _measure_heads():
    path = ROOT / "scripts" / "measure_heads.py"
    spec = importlib.util.spec_from_file_location("measure_heads", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_measured_table_is_what_measure_heads_writes_from_its_record():
    record = json.loads((MEASURED / "heads_timing.json").read_text())
    shown = (MEASURED / "heads_timing.md").read_text(encoding="utf-8")
    written = _measure_heads().markdown(record)
    assert shown == written, (
        "snippets/measured/heads_timing.md differs from what "
        "scripts/measure_heads.py writes from heads_timing.json: it is "
        "generated, so run `make measure-heads` (both files) instead of "
        "editing it by hand, or restore it with `git checkout -- "
        "snippets/measured/heads_timing.md`"
    )
