"""lessonbuild.atomic.write_atomic: the one way the build replaces a file."""

from __future__ import annotations

import os

import pytest

from lessonbuild.atomic import write_atomic


def test_a_replaced_file_keeps_its_mode_and_a_new_one_gets_opens(tmp_path):
    kept = tmp_path / "slide.md"
    kept.write_text("old")
    kept.chmod(0o640)
    write_atomic(kept, "new ✓")
    assert kept.read_text(encoding="utf-8") == "new ✓"
    assert kept.stat().st_mode & 0o777 == 0o640

    plain = tmp_path / "plain"
    plain.write_bytes(b"")  # what open() makes here
    fresh = tmp_path / "cache.pickle"
    write_atomic(fresh, b"\0bytes")
    assert fresh.read_bytes() == b"\0bytes"
    assert fresh.stat().st_mode & 0o777 == plain.stat().st_mode & 0o777
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "cache.pickle",
        "plain",
        "slide.md",
    ]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(
    tmp_path, monkeypatch
):
    target = tmp_path / "record.json"
    target.write_text("old")

    def full(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError):
        write_atomic(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["record.json"]


def test_a_write_reaches_the_disk_before_its_rename(tmp_path, monkeypatch):
    """fsync before the rename: a crash cannot leave an empty file."""
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real(fd))
    write_atomic(tmp_path / "kept.txt", "kept")
    assert len(synced) == 1
    assert (tmp_path / "kept.txt").read_text() == "kept"


def test_a_site_is_moved_into_place_in_one_step(tmp_path):
    """SiteSwap: pages go to a fresh folder beside site/; publish swaps it
    in (the old site gone), discard leaves site/ as it was."""
    from lessonbuild.atomic import SiteSwap

    site = tmp_path / "site"
    site.mkdir()
    (site / "old.html").write_text("old")
    swap = SiteSwap(site)
    assert swap.building.parent == tmp_path and swap.building != site
    (swap.building / "index.html").write_text("new")
    assert sorted(p.name for p in site.iterdir()) == ["old.html"]
    swap.publish()
    assert sorted(p.name for p in site.iterdir()) == ["index.html"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]

    failed = SiteSwap(site)
    (failed.building / "half.html").write_text("half")
    failed.discard()
    assert sorted(p.name for p in site.iterdir()) == ["index.html"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


def test_what_a_killed_build_left_is_removed_by_the_next(tmp_path):
    from lessonbuild.atomic import SiteSwap, building_prefix

    child = os.fork()
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)  # a pid that is gone
    left = tmp_path / f"{building_prefix(tmp_path / 'site')}{child}-abc"
    left.mkdir()
    (left / "index.html").write_text("half")
    mine = SiteSwap(tmp_path / "site")
    assert not left.exists() and mine.building.exists()
    mine.discard()


def test_a_second_lock_waits_for_the_first(tmp_path):
    """BuildLock: a second holder says who holds it and waits."""
    import subprocess
    import sys

    from lessonbuild.atomic import BuildLock

    path = tmp_path / "build.lock"
    first = BuildLock(path)
    code = (
        "import sys\n"
        "from lessonbuild.atomic import BuildLock\n"
        "BuildLock(sys.argv[1], say=lambda m: print(m, flush=True))\n"
        "print('got it', flush=True)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()
    assert f"another build of this site is running (pid {os.getpid()}" in line
    assert proc.poll() is None
    first.release()
    assert proc.stdout.readline() == "got it\n"
    assert proc.wait() == 0


def test_a_site_folder_named_like_an_asset_type_builds(tmp_path):
    """The minify plugin names ``x.min.css`` by replacing ".css" anywhere
    in the file's path: ``mkdocs build -d css-site`` failed while the
    build wrote into ``.css-site.building-…``. The lesson builds there,
    its styles and scripts minified."""
    from tests.lesson_site import REPO, build

    site = tmp_path / "css-site"
    result = build(REPO, "-q", "-d", str(site))
    assert result.returncode == 0, result.stderr[-2000:]
    assert (site / "assets" / "lesson.min.css").is_file()
    assert (site / "assets" / "present.min.js").is_file()
