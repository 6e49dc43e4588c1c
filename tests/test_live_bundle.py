"""The live-code editor's bundle (docs/assets/vendor/codemirror) is the
build of the versions package-lock.json pins (issue 32): its banner, which
scripts/build_codemirror.mjs writes from the lockfile, names each bundled
package at its locked version, and nothing else."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / "docs/assets/vendor/codemirror/codemirror.js"


def test_the_bundle_names_the_locked_versions():
    lock = json.loads((ROOT / "package-lock.json").read_text("utf-8"))
    locked = {
        path.split("node_modules/")[-1]: info["version"]
        for path, info in lock["packages"].items()
        if path.startswith("node_modules/")
    }
    banner = BUNDLE.read_text("utf-8").split("\n", 3)[2]
    assert banner.startswith("// Bundled: ")
    named = dict(
        re.fullmatch(r"(@?[^@]+)@(.+)", item).groups()
        for item in banner.removeprefix("// Bundled: ").split()
    )
    assert named, "the banner names no package"
    for package, version in named.items():
        assert locked.get(package) == version, (package, version)
    # What live.js builds on is pinned exactly in package.json.
    pins = json.loads((ROOT / "package.json").read_text("utf-8"))
    for package in ("@codemirror/view", "@codemirror/lang-python", "esbuild"):
        assert pins["devDependencies"][package] == locked[package]
        assert package == "esbuild" or package in named


def test_only_served_pages_load_the_bundle():
    """No page of the static build names live.js or the bundle: live.js
    is injected by liveserve.py and imports the bundle itself."""
    for path in (ROOT / "docs").rglob("*.md"):
        text = path.read_text("utf-8")
        assert "live.js" not in text and "codemirror" not in text, path
    config = (ROOT / "mkdocs.yml").read_text("utf-8")
    assert "live.js" not in config and "live.css" not in config
    live_js = (ROOT / "docs/assets/live.js").read_text("utf-8")
    assert 'vendor/codemirror/codemirror.js"' in live_js
