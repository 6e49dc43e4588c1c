"""A student's first visit stays within its byte budget (the bench's
``PAGE_BUDGETS``, measured the bench's way: Chromium against a server
that counts what it sends).

Any sentence on any page grows the search index that every first visit
downloads: prose added in one session took the first visit 53 bytes
past its 550,000 unseen, as only ``make bench`` measured it.
"""

from __future__ import annotations

import pytest

from lessonbuild import bench, pageweight

pytestmark = pytest.mark.browser


def test_a_first_visit_and_the_next_slide_keep_their_budgets(
    browser, built_site
):
    visits = pageweight.measure(built_site, browser=browser)
    over = []
    for (label, budget), visit in zip(bench.PAGE_BUDGETS, visits, strict=True):
        if visit.raw > budget:
            largest = sorted(visit.sent, key=lambda s: -s.raw)[:4]
            over.append(
                f"{label}: {visit.raw:,} bytes, {visit.raw - budget:,} over "
                f"its {budget:,}; largest: "
                + ", ".join(f"{s.path} {s.raw:,}" for s in largest)
            )
    assert over == [], (
        "\n".join(over) + "\nTrim what grew, or keep chrome out of the "
        "search index (data-search-exclude: lessonbuild/searchtext.py)."
    )
