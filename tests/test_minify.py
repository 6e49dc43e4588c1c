"""lesson-minify: the minify plugin's output, each page minified once."""

from __future__ import annotations

import htmlmin
from mkdocs_minify_plugin.plugin import MinifyPlugin

from lessonbuild.minify import KeptMinifyPlugin

PAGES = [
    '<html>\n  <body>\n    <p  class="a">one</p>\n  <!-- c -->\n'
    "  <pre>  kept\n   as is</pre>\n  </body>\n</html>\n",
    "<html>\n  <body>\n    <p>two</p>\n  </body>\n</html>\n",
]
OPTIONS = {
    "minify_html": True,
    "htmlmin_opts": {
        "remove_comments": True,
        "remove_optional_attribute_quotes": False,
    },
}


def _plugin(cls):
    plugin = cls()
    plugin.load_config(OPTIONS)
    return plugin


def test_same_output_as_the_minify_plugin_each_page_minified_once(
    monkeypatch,
):
    plain = _plugin(MinifyPlugin)
    expected = [plain._minify_html_page(page) for page in PAGES]
    assert expected[0] != PAGES[0]  # it did minify
    changed = PAGES[1].replace("two", "three")
    expected_changed = plain._minify_html_page(changed)

    calls = []
    real = htmlmin.minify

    def counting(text, **options):
        calls.append(text)
        return real(text, **options)

    monkeypatch.setattr(htmlmin, "minify", counting)
    kept = _plugin(KeptMinifyPlugin)
    for _ in range(3):  # three builds of the same site
        kept.on_pre_build(config={"extra_javascript": [], "extra_css": []})
        assert [kept._minify_html_page(p) for p in PAGES] == expected
    assert len(calls) == len(PAGES)

    # A changed page is minified again; the others are not.
    kept.on_pre_build(config={"extra_javascript": [], "extra_css": []})
    assert kept._minify_html_page(changed) == expected_changed
    assert kept._minify_html_page(PAGES[0]) == expected[0]
    assert len(calls) == len(PAGES) + 1
