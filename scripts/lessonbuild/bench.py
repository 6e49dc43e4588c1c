"""``python -m lessonbuild bench`` (``make bench``): the lesson's speed,
each figure against its target.

Every row is one function in ``ROWS``: it times something on a copy of
the site (``Bench``, with its own caches, so the project's cache and
site/ are left alone) and returns ``Figure``s. To add a row, write a
function ``row(bench) -> list[Figure]`` and append it to ``ROWS``.

What is timed, on the lesson itself:

- the snippet engine cold (empty cache) beside its floor
  (``benchfloor.py``: bare interpreters that import what the snippets
  use and fork two runs of each, as the engine does, and nothing else)
  and beside one Jupyter kernel running the same snippets, the peer;
  timed side by side, alternating, because this machine's speed drifts
  by more than 2x within minutes;
- the engine warm (nothing changed);
- a clean ``mkdocs build`` (empty caches), as a multiple of ``import
  torch`` timed just before it;
- under ``mkdocs serve --dirty`` (``make serve``: one process, the
  plugins kept): a rebuild after an edit of a slide and after an edit of
  a snippet the slide shows, each counted only if the page shows it;
- the bytes of a first visit to slide 15 and of the next slide, in
  Chromium (``pageweight.py``).

Timings are the median of ``RUNS``; the load average is printed, since
other work on the machine skews every figure.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .deck import read_deck
from .engine.check import used_snippets
from .engine.preload import preload_plan
from .engine.runner import HASH_SEEDS, SERVER
from .settings import CACHE_ENV

RUNS = 3
FLOOR = Path(__file__).with_name("benchfloor.py")
#: A clean build's ceiling, in ``import torch``s timed beside it (the
#: ratio stays put where the machine's speed drifts).
BUILD_CEILING = 4.0
#: What the serve rows time, as ``make serve`` runs it; argv: the site
#: folder, the slide's src_uri, the snippet, the src_uri of a slide that
#: shows the snippet.
_SERVE = """\
import sys, time
from pathlib import Path
from mkdocs.commands.build import build
from mkdocs.config import load_config

site, slide, snippet, showing = sys.argv[1:]
first = load_config("mkdocs.yml", site_dir=site)
first.plugins.on_startup(command="serve", dirty=True)

def rebuild(uri, text):
    config = load_config("mkdocs.yml", site_dir=site)
    start = time.perf_counter()
    build(config, serve_url="", dirty=True)
    seconds = time.perf_counter() - start
    page = Path(site, uri.removesuffix(".md") + ".html").read_text()
    if text not in page:  # a rebuild counts only if the page shows it
        raise SystemExit(f"{uri} does not show the edit {text!r}")
    return seconds

try:
    build(first, serve_url="", dirty=True)
    path = Path(first.docs_dir, slide)
    path.write_text(path.read_text() + "\\nOne more line.\\n")
    print("slide", rebuild(slide, "One more line."))
    code = Path(snippet).read_text()
    mark = "[start:show]\\n"  # a line the slide shows
    at = code.find(mark) + len(mark) if mark in code else len(code)
    Path(snippet).write_text(code[:at] + "# edited\\n" + code[at:])
    print("snippet", rebuild(showing, "# edited"))
finally:
    first.plugins.on_shutdown()
"""


@dataclass
class Figure:
    label: str
    seconds: float | None = None
    value: str = ""
    target: str = ""
    ratio: float | None = None
    met: bool | None = None


def within(label: str, seconds: float, limit: float) -> Figure:
    """A time against its ceiling in seconds."""
    return Figure(
        label,
        seconds,
        target=f"<= {limit:g} s",
        ratio=seconds / limit,
        met=seconds <= limit,
    )


def at_most(label: str, seconds: float, of: float, times: float, what: str):
    """A time against ``times`` x another (``of``, named ``what``)."""
    return Figure(
        label,
        seconds,
        target=f"<= {times:g} x {what}",
        ratio=seconds / of,
        met=seconds <= times * of,
    )


@dataclass
class Bench:
    """A copy of the site in ``tmp``, and what the rows share."""

    root: Path
    tmp: Path
    site: Path = field(init=False)
    snippets: list[str] = field(init=False)
    built: Path | None = None  # the last clean build (page weight)

    def __post_init__(self):
        self.site = copy_site(self.root, self.tmp)
        self.snippets = used_snippets(read_deck(self.site))

    def run(self, cmd, env=None) -> tuple[float, subprocess.CompletedProcess]:
        """``cmd`` in the copy; (seconds, the finished process)."""
        env = dict(os.environ, NO_MKDOCS_2_WARNING="1", **(env or {}))
        start = time.perf_counter()
        proc = subprocess.run(
            cmd, cwd=self.site, env=env, capture_output=True, text=True
        )
        return time.perf_counter() - start, proc

    def check(self, cache: Path) -> float:
        """One ``python -m lessonbuild check``. Its fork servers exit
        after it does: the next figure is timed only once they have."""
        cmd = [sys.executable, "-m", "lessonbuild", "check", "--root", "."]
        seconds, proc = self.run([*cmd, "--cache-dir", str(cache)])
        _wait_until_gone(str(SERVER), str(self.site))
        # Exit 1: the deck has problems (a drifted block), but the
        # engine did all its work, so the time counts.
        if proc.returncode not in (0, 1):
            raise RuntimeError(f"check failed:\n{proc.stderr[-2000:]}")
        return seconds

    def import_torch(self) -> float:
        return self.run([sys.executable, "-c", "import torch"])[0]


# --- the rows ----------------------------------------------------------------


def engine_rows(bench: Bench) -> list[Figure]:
    colds, floors, kernels, warms = [], [], [], []
    for i in range(RUNS):
        cache = bench.tmp / f"cache-{i}"
        floors.append(floor_seconds(bench.site, bench.snippets))
        colds.append(bench.check(cache))
        warms.append(bench.check(cache))
        kernels.append(kernel_seconds(bench.site, bench.snippets))
    cold, floor, kernel = map(statistics.median, (colds, floors, kernels))
    n = len(bench.snippets)
    return [
        Figure(f"the floor: {n} snippets, bare interpreters", floor),
        at_most(f"engine cold, {n} snippets", cold, floor, 1.10, "floor"),
        Figure(
            f"one Jupyter kernel, {n} cells (the peer)",
            kernel,
            target="engine cold ahead",
            ratio=kernel / cold,
            met=cold < kernel,
        ),
        within("engine warm", statistics.median(warms), 0.3),
    ]


def build_rows(bench: Bench) -> list[Figure]:
    """Clean builds, each with empty caches and its own folder."""
    builds, imports = [], []
    for i in range(RUNS):
        imports.append(bench.import_torch())
        shutil.rmtree(bench.site / ".cache", ignore_errors=True)
        bench.built = bench.tmp / f"built-{i}"
        cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "-q"]
        env = {CACHE_ENV: str(bench.tmp / f"build-{i}")}
        seconds, proc = bench.run([*cmd, "-d", str(bench.built)], env)
        if proc.returncode:
            raise RuntimeError(f"build failed:\n{proc.stderr[-3000:]}")
        builds.append(seconds)
    torch = statistics.median(imports)
    return [
        Figure("one `import torch`, before each build", torch),
        at_most(
            "clean mkdocs build, empty caches",
            statistics.median(builds),
            torch,
            BUILD_CEILING,
            "import torch",
        ),
    ]


def serve_rows(bench: Bench) -> list[Figure]:
    """An edit of a slide, then of a snippet a slide shows, under
    ``mkdocs serve --dirty`` (the run cache of the last clean build)."""
    deck = read_deck(bench.site)
    snippet = bench.snippets[0]
    showing = next(
        p for p in deck.slides if any(i.path == snippet for i in p.includes)
    )
    args = [str(bench.tmp / "served"), deck.docs_rel(deck.slides[0])]
    args += [snippet, deck.docs_rel(showing)]
    env = {CACHE_ENV: str(bench.tmp / f"build-{RUNS - 1}")}
    _, proc = bench.run([sys.executable, "-c", _SERVE, *args], env)
    times = dict(line.split() for line in proc.stdout.splitlines())
    if proc.returncode or len(times) != 2:
        print((proc.stderr or proc.stdout)[-2000:], file=sys.stderr)
        return [Figure("edits under serve", value="FAILED", met=False)]
    return [
        within("a slide edit shows (serve)", float(times["slide"]), 0.5),
        within("a snippet edit shows (serve)", float(times["snippet"]), 1.0),
    ]


#: What a student's browser downloads, against its budget in bytes.
PAGE_BUDGETS = (
    ("first visit to slide 15 (Chromium)", 550_000),
    ("then the next slide", 35_000),
)


def page_weight_rows(bench: Bench) -> list[Figure]:
    try:
        from .pageweight import measure

        weight = measure(bench.built)
    except Exception as exc:  # no browser here: say so, measure the rest
        # A figure that could not be measured is not met: the bench's
        # verdict never looks better for a missing browser.
        print(f"page weight not measured: {exc}", file=sys.stderr)
        return [
            Figure(label, value="not measured", met=False)
            for label, _ in PAGE_BUDGETS
        ]
    return [
        Figure(
            label,
            value=f"{got.raw / 1000:.0f} KB",
            target=f"<= {budget // 1000} KB ({got.gzip / 1000:.0f} KB gzip)",
            ratio=got.raw / budget,
            met=got.raw <= budget,
        )
        for (label, budget), got in zip(
            PAGE_BUDGETS, (weight.first, weight.next), strict=True
        )
    ]


#: First paint of the deck at slide 17 (issue 27), beside a reading page's.
DECK_PAINT = ("present.html#/17", 1.0)
READING_PAINT = "slides/17-scaling-keeps-computation-constant.html"


def first_paint_rows(bench: Bench, runs: int = RUNS) -> list[Figure]:
    """Seconds from navigation to the first paint with slide 17 on screen
    (the deck: reveal.js ready, then a frame; the reading page: its first
    contentful paint), each the median of ``runs`` fresh browser
    contexts, from disk."""
    from playwright.sync_api import sync_playwright

    from .pageweight import CHROMIUM, CHROMIUM_ARGS

    deck_js = """() => new Promise((done) => {
      const seen = () => requestAnimationFrame(() => done(performance.now()));
      if (document.documentElement.hasAttribute('data-deck-ready')) seen();
      else new MutationObserver((_, o) => {
        if (document.documentElement.hasAttribute('data-deck-ready')) {
          o.disconnect(); seen(); }
      }).observe(document.documentElement, {attributes: true});
    })"""
    page_js = """() => new Promise((done) => new PerformanceObserver((l) =>
      done(l.getEntries()[0].startTime)).observe(
        {type: 'paint', buffered: true}))"""
    site = bench.built
    times: dict[str, list[float]] = {DECK_PAINT[0]: [], READING_PAINT: []}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=CHROMIUM, args=CHROMIUM_ARGS
            )
            for _ in range(runs):
                for url, js in (
                    (DECK_PAINT[0], deck_js),
                    (READING_PAINT, page_js),
                ):
                    context = browser.new_context(
                        viewport={"width": 1280, "height": 720}
                    )
                    page = context.new_page()
                    page.goto(
                        (site / url.split("#")[0]).as_uri()
                        + ("#" + url.split("#")[1] if "#" in url else "")
                    )
                    times[url].append(page.evaluate(js) / 1000)
                    context.close()
            browser.close()
    except Exception as exc:  # no browser here: say so, measure the rest
        print(f"first paint not measured: {exc}", file=sys.stderr)
        return [
            Figure(
                "first paint of present.html#/17",
                value="not measured",
                target=f"<= {DECK_PAINT[1]:g} s",
                met=False,
            )
        ]
    return [
        within(
            f"first paint of {DECK_PAINT[0]} (median of {runs})",
            statistics.median(times[DECK_PAINT[0]]),
            DECK_PAINT[1],
        ),
        Figure(
            f"  beside: the reading page of slide 17 (median of {runs})",
            statistics.median(times[READING_PAINT]),
        ),
    ]


def live_rows(bench: Bench) -> list[Figure]:
    """Live code (issue 32, liveserve.py): Run to output for a one-line
    change of slide 15's snippet, median, beside the engine's figures."""
    from .liveserve import TARGET_SECONDS, run_to_output

    label = "live code: Run to output, slide 15 (median)"
    try:
        times = run_to_output(bench.site)
    except Exception as exc:
        print(f"live code not measured: {exc}", file=sys.stderr)
        return [Figure(label, value="FAILED", met=False)]
    return [within(label, statistics.median(times), TARGET_SECONDS)]


#: The bench, row by row, in order (a row may use what one above left).
ROWS = [
    engine_rows,
    build_rows,
    serve_rows,
    page_weight_rows,
    first_paint_rows,
    live_rows,
]


def bench(root: Path) -> int:
    root = Path(root).resolve()
    load = os.getloadavg()
    cores = len(os.sched_getaffinity(0))
    print(f"lessonbuild bench: {root} ({cores} cores)")
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="lessonbuild-bench-") as tmp:
        state = Bench(root, Path(tmp))
        for row in ROWS:
            try:
                figures += row(state)
            except Exception as exc:
                print(f"{row.__name__}: {exc}", file=sys.stderr)
                figures.append(Figure(row.__name__, value="FAILED", met=False))
    width = max(len(f.label) for f in figures)
    for f in figures:
        seconds = f"{f.seconds:8.2f} s" if f.seconds is not None else " " * 10
        ratio = f"{f.ratio:6.2f} x" if f.ratio is not None else ""
        verdict = {True: "met", False: "MISSED", None: ""}[f.met]
        print(
            f"  {f.label:<{width}} {seconds} {f.value:>12}  {f.target:<34} "
            f"{ratio:>9} {verdict}".rstrip()
        )
    after = os.getloadavg()
    print(
        "  load average (1/5/15 min) before: "
        + "/".join(f"{x:.1f}" for x in load)
        + ", after: "
        + "/".join(f"{x:.1f}" for x in after)
    )
    return 1 if any(f.met is False for f in figures) else 0


# --- helpers -----------------------------------------------------------------


def copy_site(root: Path, dest: Path) -> Path:
    """docs/, snippets/, mha_ref/, notebooks/ copied; config, theme, code
    linked (without notebooks/, the build has no homework to link to)."""
    site = dest / "site-copy"
    site.mkdir()
    ignore = shutil.ignore_patterns("__pycache__")
    for name in ("docs", "snippets", "mha_ref", "notebooks"):
        if (root / name).is_dir():
            shutil.copytree(root / name, site / name, ignore=ignore)
    for name in ("overrides", "scripts"):
        if (root / name).exists():
            (site / name).symlink_to(root / name)
    (site / "mkdocs.yml").write_text(f"INHERIT: {root / 'mkdocs.yml'}\n")
    return site


def _wait_until_gone(*words: str, within: float = 30.0) -> None:
    """Wait (bounded) until no process's command line holds all of
    ``words``."""
    needles = [w.encode() for w in words]
    end = time.monotonic() + within
    while time.monotonic() < end:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmdline = f.read()
            except OSError:
                continue
            if all(n in cmdline for n in needles):
                break
        else:
            return
        time.sleep(0.02)


def floor_seconds(site: Path, snippets: list[str]) -> float:
    """The least work a cold check can do (benchfloor.py): one bare
    interpreter per hash seed, side by side, each importing torch and
    the engine's preload, then forking one run of every snippet."""
    preload = ",".join(
        preload_plan([(site / rel).read_text() for rel in snippets])
    )
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as folder:
        # stderr to files: a pipe read after the other interpreter ends
        # could stall a chatty one and time the stall.
        logs = [Path(folder, f"stderr-{seed}") for seed in HASH_SEEDS]
        start = time.perf_counter()
        procs = []
        for seed, log in zip(HASH_SEEDS, logs, strict=True):
            tables = os.path.join(folder, f"tables-{seed}")
            with open(log, "w") as stderr:
                procs.append(
                    subprocess.Popen(
                        [sys.executable, FLOOR, site, tables, preload, "1"]
                        + snippets,
                        cwd=site,
                        env=dict(os.environ, PYTHONHASHSEED=str(seed)),
                        stdout=subprocess.DEVNULL,
                        stderr=stderr,
                    )
                )
        for proc in procs:
            proc.wait()
        seconds = time.perf_counter() - start
        failed = [
            log.read_text(errors="replace")[-2000:]
            for proc, log in zip(procs, logs, strict=True)
            if proc.returncode
        ]
    if failed:
        raise RuntimeError("the floor's runs failed:\n" + "\n".join(failed))
    return seconds


def kernel_seconds(site: Path, snippets: list[str]) -> float:
    """One Jupyter kernel (nbclient) runs every snippet as a cell, over
    ipc sockets in a temporary folder, as the build's kernels do."""
    import nbformat
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell((site / rel).read_text()) for rel in snippets
    ]
    with tempfile.TemporaryDirectory(prefix="bench-kernel-") as folder:
        km = KernelManager(
            kernel_name="python3", transport="ipc", ip=f"{folder}/ipc"
        )
        start = time.perf_counter()
        resources = {"metadata": {"path": str(site)}}
        NotebookClient(nb, km=km, timeout=600, resources=resources).execute()
        # A client given its kernel leaves it running: stopping it is
        # part of the time, as it is when the client owns the kernel.
        km.shutdown_kernel()
        return time.perf_counter() - start
