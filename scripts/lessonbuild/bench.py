"""``python -m lessonbuild.engine bench``: how fast is the engine, in one run.

Measures, on the same machine in one go: ``python -c "import torch"``
(the reference), a cold check (empty cache), a warm check (nothing
changed), each the median of three, and the baseline of running every
snippet as ``python snippets/X.py`` in a fresh interpreter, one after
another. Checks run as separate processes, the way a contributor runs
them, with a temporary cache so the project's cache is left alone. Uses
the root's snippets, or the fixture set when the root has none.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import engine
from .deck import read_deck
from .engine.cache import find_package
from .settings import CACHE_ENV

FIXTURE = Path(__file__).resolve().parents[2] / "tests/engine_fixtures/bench"
# Run a check in a fresh interpreter and report whether it imported torch.
_CHECK = (
    "import sys\n"
    "from lessonbuild.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "print('torch imported:', 'torch' in sys.modules, file=sys.stderr)\n"
    "sys.exit(code)\n"
)
RUNS = 3  # cold and warm checks each; the median is reported
TARGET_COLD = 2.0  # x one `python -c "import torch"`
TARGET_WARM = 0.3  # seconds
TARGET_SPEEDUP = 10.0  # x faster than the baseline


def _timed(cmd, cwd, env=None) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    return time.perf_counter() - start, proc


def _median(runs):
    """The median (seconds, process) of an odd number of timed runs."""
    return sorted(runs, key=lambda run: run[0])[len(runs) // 2]


def bench(
    root: Path, jobs: int | None = None, timeout: float | None = None
) -> int:
    root = Path(root).resolve()
    if not any((root / "snippets").glob("*.py")):
        print(f"{root}/snippets has no snippets: using {FIXTURE}")
        root = FIXTURE
    python = sys.executable
    options = []
    if jobs:
        options += ["--jobs", str(jobs)]
    if timeout:
        options += ["--timeout", str(timeout)]
    env = dict(os.environ)
    env.pop(CACHE_ENV, None)

    torch_dir = find_package("torch", root / "snippets")
    version = "?"
    if torch_dir is not None:
        for line in (torch_dir / "version.py").read_text().splitlines():
            if line.startswith("__version__"):
                version = line.split("=", 1)[1].strip().strip("'\"")
    cores = len(os.sched_getaffinity(0))
    print(
        f"Snippet engine benchmark: {root} ({cores} cores, Python "
        f"{sys.version.split()[0]}, torch {version})"
    )
    # Other work on the machine skews every figure: say how busy it was.
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())

    imports = [
        _timed([python, "-c", "import torch"], root)[0] for _ in range(RUNS)
    ]
    t_import = statistics.median(imports)

    colds, warms = [], []
    for _ in range(RUNS):
        cache = Path(tempfile.mkdtemp(prefix="engine-bench-"))
        try:
            check = [python, "-c", _CHECK, "check", "--root", str(root)]
            check += ["--cache-dir", str(cache), *options]
            colds.append(_timed(check, root, env))
            warms.append(_timed(check, root, env))
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    t_cold, cold = _median(colds)
    t_warm, warm = _median(warms)

    snippets = engine.used_snippets(read_deck(root))
    t_base = 0.0
    failed = []
    for rel in snippets:
        seconds, proc = _timed([python, rel], root)
        t_base += seconds
        if proc.returncode:
            failed.append(rel)

    def line(label, seconds, note=""):
        print(f"  {label:<46} {seconds:7.2f} s  {note}".rstrip())

    n = len(snippets)
    print(f"{n} snippets, each run twice by a check (nondeterminism test)")
    line(f'python -c "import torch" (median of {RUNS})', t_import)
    line(
        f"cold check, cache cleared (median of {RUNS})",
        t_cold,
        f"= {t_cold / t_import:.2f} x import torch "
        f"(target <= {TARGET_COLD:g} x)",
    )
    line(
        f"warm check, nothing changed (median of {RUNS})",
        t_warm,
        f"(target <= {TARGET_WARM} s)",
    )
    line(f"baseline: python snippets/X.py x {n}, in turn", t_base)
    print(
        f"  load average (1/5/15 min) before: {load}, after: "
        + "/".join(f"{x:.1f}" for x in os.getloadavg())
    )
    print(
        f"  cold is {t_base / t_cold:.1f} x faster than the baseline "
        f"(target >= {TARGET_SPEEDUP:g} x); warm is "
        f"{t_base / t_warm:.0f} x faster"
    )
    for label, proc in (("cold", cold), ("warm", warm)):
        out = (proc.stdout + proc.stderr).splitlines()
        summary = [s for s in out if s.startswith("snippet engine:")]
        torch = [s for s in out if s.startswith("torch imported:")]
        print(f"  {label}: {(summary or ['?'])[-1]}; {(torch or ['?'])[-1]}")
    if failed:
        print("  failing snippets (baseline): " + ", ".join(failed))
    return 0
