"""read_settings with a cache file: the plugin's block, read again only
when a file it came from changed."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lessonbuild.settings import read_settings

PARENT = """\
site_name: x
plugins:
  - lesson:
      snippet_timeout: {timeout}
"""


@pytest.fixture
def site(tmp_path):
    (tmp_path / "base.yml").write_text(PARENT.format(timeout=7))
    (tmp_path / "mkdocs.yml").write_text("INHERIT: base.yml\n")
    return tmp_path


def test_an_edit_of_an_inherited_file_is_read(site):
    cache = site / "c" / "settings.json"
    assert read_settings(site, cache).snippet_timeout == 7
    assert cache.is_file()
    assert read_settings(site, cache).snippet_timeout == 7
    (site / "base.yml").write_text(PARENT.format(timeout=9))
    assert read_settings(site, cache).snippet_timeout == 9
    (site / "mkdocs.yml").write_text(PARENT.format(timeout=11))
    assert read_settings(site, cache).snippet_timeout == 11


@pytest.mark.parametrize(
    "content", ["", "[]", '{"files": {}, "block": {}}', '{"files": 3}']
)
def test_a_damaged_cache_is_a_miss(site, content):
    cache = site / "settings.json"
    cache.write_text(content)
    assert read_settings(site, cache).snippet_timeout == 7


def test_a_warm_read_parses_no_yaml(site):
    cache = site / "settings.json"
    probe = (
        "import sys\n"
        "from lessonbuild.settings import read_settings\n"
        f"s = read_settings({str(site)!r}, __import__('pathlib').Path("
        f"{str(cache)!r}))\n"
        "print('READ', s.snippet_timeout, 'yaml' in sys.modules)\n"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True
        )
        for _ in range(2)
    ]
    first, second = (r.stdout + r.stderr for r in runs)
    assert "READ 7.0 True" in first, first
    assert "READ 7.0 False" in second, second
