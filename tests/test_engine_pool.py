"""Fork servers kept across runs (mkdocs serve), preload plan, threads.

The engine's speed (issue 15) without giving up its isolation: each run
still forks from a server of its own hash seed, the servers stay up
between runs only while their preload is current, and each run gets the
cores shared among the runs going on at once.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lessonbuild.engine import runner
from lessonbuild.engine.preload import preload_plan
from lessonbuild.engine.runner import Pool
from tests.engine_fixtures.sites import make_site, run_batches

#: Prints the hash of a fixed string (per seed) and its threads; which
#: server forked it is ``Run.server`` (a run cannot see its server: it
#: is PID 1 of a namespace of its own).
WHO = "import torch\nprint(0, hash('alpha'), torch.get_num_threads())\n"


def _snippet(root: Path, name: str, text: str) -> Path:
    path = root / "snippets" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _parents(batches) -> list[str]:
    """The forking server's pid of each run, in order."""
    out = []
    for runs in batches:
        for run in runs:
            assert run.exit == 0, run.failure or run.stderr
            out.append(str(run.server))
    return out


def _gone(pid: int, within: float = 20.0) -> bool:
    """True once ``pid`` has exited and been reaped (or is a zombie)."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True  # (ESRCH: it was reaped between open and read)
        if state in ("Z", "X"):
            return True
        time.sleep(0.1)
    return False


def _check(root: Path, cache: Path, pool: Pool, **options):
    """The engine's check of the fixture deck at ``root`` on ``pool``."""
    from lessonbuild import engine
    from lessonbuild.deck import read_deck

    return engine.check(
        read_deck(root, parts=["Fixture"]),
        timeout=60,
        jobs=2,
        cache_dir=cache,
        pool=pool,
        **options,
    )


# --- the kept servers --------------------------------------------------------


def test_pool_reuses_its_servers_until_the_key_changes(tmp_path):
    """Two runs, same key: the same two servers (two hash seeds) fork
    both; a new key (mha_ref edited) replaces them; close stops them."""
    path = _snippet(tmp_path, "who.py", WHO)
    pool = Pool(tmp_path)
    try:
        first = pool.run([[path], [path]], timeout=60, concurrency=1, key="a")
        again = pool.run([[path], [path]], timeout=60, concurrency=1, key="a")
        assert _parents(again) == _parents(first), (
            "expected the second run to fork from the servers of the first"
        )
        seed0, seed1 = (runs[0].stdout.split()[1] for runs in first)
        assert seed0 != seed1, "expected two servers with distinct seeds"
        changed = pool.run(
            [[path], [path]], timeout=60, concurrency=1, key="b"
        )
        assert not set(_parents(changed)) & set(_parents(first)), (
            "expected new servers after the key changed (stale preload)"
        )
        old = [int(p) for p in _parents(first)]
        assert all(_gone(pid) for pid in old), "old servers still running"
    finally:
        pool.close()
    assert all(_gone(int(p)) for p in _parents(changed)), (
        "expected Pool.close() to stop its servers"
    )


def test_warm_servers_take_the_next_run(tmp_path):
    """warm() starts the servers without waiting; the next run uses
    them (no second start) and still gets every result."""
    path = _snippet(tmp_path, "who.py", WHO)
    pool = Pool(tmp_path)
    try:
        pool.warm(["torch"], key="k")
        warmed = sorted(str(s.proc.pid) for s in pool.servers.values())
        assert len(warmed) == 2, "expected one server per hash seed"
        runs = pool.run([[path], [path]], timeout=60, concurrency=1, key="k")
        assert sorted(_parents(runs)) == warmed
    finally:
        pool.close()


def test_started_jobs_run_in_the_background_on_their_server(tmp_path):
    """start() returns at once; a run that needs the same server waits
    for the started jobs, then forks from that same server; wait()
    gives each started job's Run, in order."""
    path = _snippet(tmp_path, "who.py", WHO)
    gate = tmp_path / "open"  # the first job waits until the test opens it
    waits = _snippet(
        tmp_path,
        "waits.py",
        f"import os, time\nwhile not os.path.exists({str(gate)!r}):\n"
        "    time.sleep(0.01)\nprint('released')\n",
    )
    pool = Pool(tmp_path)
    try:
        started = pool.start([waits, path], timeout=60, key="k")
        gate.touch()  # reached only if start() did not wait for its jobs
        (after,) = pool.run([[path]], timeout=60, concurrency=1, key="k")
        released, who = started.wait()
        assert released.exit == 0 and released.stdout == "released\n"
        assert _parents([[who]]) == _parents([after]), (
            "expected the run after the started jobs to fork from the "
            "same server"
        )
    finally:
        pool.close()


def test_closing_the_pool_cancels_what_was_started(tmp_path):
    """A build that stops (close) kills the started jobs; their Runs say
    so instead of hanging or raising."""
    hang = _snippet(tmp_path, "hang.py", "import time\ntime.sleep(600)\n")
    pool = Pool(tmp_path)
    started = pool.start([hang], timeout=600, key="k")
    server = pool.servers[0].proc.pid
    pool.close()
    (run,) = started.wait()
    assert run.failure == "cancelled"
    assert _gone(server), "expected close() to stop the server"


def test_a_snippet_cannot_signal_its_server(tmp_path):
    """A run sees no process but its own (PID namespace): its parent's
    pid is 0, kill(-1) reaches nothing, and its server's pid names no
    process it can see; the server goes on serving."""
    pool = Pool(tmp_path)
    try:
        [[run]] = pool.run(
            [[_snippet(tmp_path, "who.py", WHO)]], timeout=60, concurrency=1
        )
        server = run.server
        killer = _snippet(
            tmp_path,
            "killer.py",
            "import os, signal\n"
            "print(os.getpid(), os.getppid())\n"
            f"for target in (-1, {server}):\n"
            "    try:\n"
            "        os.kill(target, signal.SIGKILL)\n"
            "        print(target, 'killed')\n"
            "    except ProcessLookupError:\n"
            "        print(target, 'no such process')\n",
        )
        [[attack]] = pool.run([[killer]], timeout=60, concurrency=1)
        assert attack.stdout.splitlines() == [
            "2 1",
            "-1 no such process",
            f"{server} no such process",
        ], attack.stderr + attack.failure
        assert attack.server == server and pool.servers[0].proc.poll() is None
    finally:
        pool.close()


def test_a_server_that_died_is_replaced(tmp_path):
    """A server that died between runs (killed from outside, a crash) is
    replaced by the next run instead of a dead pipe."""
    who = _snippet(tmp_path, "who.py", WHO)
    pool = Pool(tmp_path)
    try:
        [[first]] = pool.run([[who]], timeout=60, concurrency=1)
        pool.servers[0].proc.kill()
        pool.servers[0].proc.wait()
        [[run]] = pool.run([[who]], timeout=60, concurrency=1)
        assert run.exit == 0, run.failure or run.stderr
        assert run.server != first.server
    finally:
        pool.close()


# --- threads per run ---------------------------------------------------------


def _default_threads() -> int:
    out = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout)


@pytest.mark.parametrize("concurrency", [1, 2])
def test_runs_share_the_cores(tmp_path, concurrency):
    """Two servers, each running ``concurrency`` children: each child
    gets cores // (2 * concurrency) threads (at least 1, at most torch's
    default), so runs do not fight over the cores."""
    path = _snippet(tmp_path, "who.py", WHO)
    cores = len(os.sched_getaffinity(0))
    expected = max(1, min(_default_threads(), cores // (2 * concurrency)))
    batches = run_batches(
        tmp_path, [[path], [path]], timeout=60, concurrency=concurrency
    )
    for runs in batches:
        threads = int(runs[0].stdout.split()[2])
        assert threads == expected, (
            f"expected {expected} threads per run on {cores} cores, "
            f"got {threads} (runner.py Pool.run: threads)"
        )


def test_a_run_sees_a_fixed_minimal_environment(tmp_path, monkeypatch):
    """The caller's environment never reaches a run (it would be an
    input the cache cannot see): a snippet, and what it starts, see the
    same few variables on every machine (server.run_environment)."""
    monkeypatch.setenv("SECRET_TOKEN", "hunter2")
    monkeypatch.setenv("PYTHONMALLOC", "pymalloc")
    path = _snippet(
        tmp_path,
        "env.py",
        "import os, subprocess, sys\n"
        "print(sorted(os.environ))\n"
        "print(os.environ['HOME'] == os.environ['TMPDIR'])\n"
        "print(subprocess.run([sys.executable, '-c', 'import os; "
        "print(sorted(os.environ))'],"
        " capture_output=True, text=True).stdout.strip())\n",
    )
    ((run,),) = run_batches(tmp_path, [[path]], timeout=60, concurrency=1)
    names = str(
        ["HOME", "LANG", "MHA_REF_TABLES_FILE", "MPLBACKEND", "PATH"]
        + ["PYTHONHASHSEED", "TMPDIR", "TZ"]
    )
    assert run.stdout.splitlines() == [names, "True", names], run.stderr
    # Having started a program, the run is not cached: what it read
    # is not seen by the audit hook.
    assert run.uncached == "started a program"


def _server_environ(root: Path) -> dict[str, str]:
    """The environment the seed-0 server of ``root`` was run with, read
    once it has answered a batch: until its exec is complete, /proc
    shows an empty environment (or its parent's)."""
    pool = Pool(root)
    try:
        first = sorted((root / "snippets").rglob("*.py"))[0]
        ((run,),) = pool.run([[first]], timeout=60, concurrency=1)
        assert run.exit == 0, run.stderr + run.failure
        pid = pool.servers[0].proc.pid
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    finally:
        pool.close()
    return dict(
        item.split("=", 1) for item in raw.decode().split("\0") if "=" in item
    )


@pytest.mark.skipif(
    not Path("/proc/self/environ").exists(), reason="needs Linux /proc"
)
def test_servers_run_the_default_allocators(tmp_path, monkeypatch):
    """A server allocates as a plain interpreter does: Python's own
    allocator (issue 33: the switch to glibc malloc at 128 snippets is
    gone) and glibc's heap on ordinary pages, whatever the caller set.
    Huge pages made forks cheaper but had every run zero a 2 MiB page
    each time its heap grew: engine cold 7.0 -> 5.6 s without them."""
    monkeypatch.setenv("PYTHONMALLOC", "malloc")
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1")
    root = tmp_path / "deck"
    for i in range(2):
        _snippet(root, f"s{i}.py", "print(1)\n")
    env = _server_environ(root)
    assert "PYTHONMALLOC" not in env
    assert "GLIBC_TUNABLES" not in env


def _alive_with(token: str) -> list[int]:
    """Processes of this machine whose command line holds ``token``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            state = (proc / "stat").read_text().split(")")[-1].split()[0]
        except OSError:
            continue
        if token.encode() in cmdline and state != "Z":
            found.append(int(proc.name))
    return found


def test_a_process_left_by_a_run_that_left_its_group_is_killed(tmp_path):
    """A run's PID namespace ends with the run: a program it started in
    a session of its own (setsid, a double fork) that would sleep on is
    gone when the run's result is in."""
    token = f"outlive-{os.getpid()}-{time.monotonic_ns()}"
    root = tmp_path / "site"
    path = _snippet(
        root,
        "escape.py",
        "import os, subprocess, sys\n"
        "r, w = os.pipe()\n"
        "subprocess.Popen([sys.executable, '-c', 'import os, sys, time; "
        'os.write(int(sys.argv[1]), b"x"); time.sleep(60)\', str(w), '
        f"{token!r}], pass_fds=[w], start_new_session=True)\n"
        "os.read(r, 1)\n"
        "print('left')\n",
    )
    ((run,),) = run_batches(root, [[path]], timeout=60, concurrency=1)
    assert run.stdout == "left\n", run.stderr
    assert _alive_with(token) == [], "a process outlived its run"


def test_runs_write_their_files_in_the_pool_folder_and_leave_none(tmp_path):
    """Each run's stdout, stderr and tables go to a folder of its own in
    the pool's temporary folder (issue 33: no longer /dev/shm); a data
    file the snippet read, and the snippet itself, are still reported;
    the folder goes with the pool."""
    root = tmp_path / "site"
    (root / "data").mkdir(parents=True)
    (root / "data" / "n.txt").write_text("41\n")
    reads = _snippet(
        root,
        "reads.py",
        "print(open('data/n.txt').read().strip())\n",
    )
    quiet = _snippet(root, "quiet.py", "print('hi')\n")
    pool = Pool(root)
    try:
        ((a, b),) = pool.run([[reads, quiet]], timeout=60, concurrency=1)
        assert a.stdout == "41\n", a.stderr
        assert a.reads == ["data/n.txt", "snippets/reads.py"]
        assert (b.stdout, b.reads) == ("hi\n", ["snippets/quiet.py"])
        (server,) = pool.servers.values()
        assert server.folder.is_relative_to(pool.tmp)
        tmp = pool.tmp
    finally:
        pool.close()
    assert not tmp.exists(), "the pool's folder outlived it"


# --- the preload plan --------------------------------------------------------


def test_plain_torch_snippet_preloads_torch_only():
    plan = preload_plan(["import torch\nprint(torch.ones(2).sum())\n"])
    assert plan == ["torch"]


def test_standard_library_snippets_preload_nothing():
    """A test site's print("hi") costs each server no import of torch;
    an import the syntax tree cannot name, or cannot read, keeps it."""
    assert preload_plan(['print("hi")\n', "import json, os.path\n"]) == []
    for source in (
        "m = __import__('torch')\n",
        "import importlib\nt = importlib.import_module('torch')\n",
        "exec('import torch')\n",
        "from . import helper\n",
        "import helper\n",
        "this is not Python (\n",
    ):
        assert preload_plan(['print("hi")\n', source]) == ["torch"], source


def test_a_server_without_torch_runs_what_needs_none(tmp_path):
    """Without torch in the plan the run has no torch; a run that imports
    it by name at run time gets a preloaded, randomly seeded one, as
    every torch snippet does (a forgotten seed is caught)."""
    root = tmp_path / "site"
    plain = _snippet(
        root, "plain.py", "import sys\nprint('torch' in sys.modules)\n"
    )
    dynamic = _snippet(
        root,
        "dynamic.py",
        "import importlib\nt = importlib.import_module('torch')\n"
        "print(t.initial_seed() != 67280421310721)\n",
    )
    for path, printed in ((plain, "False"), (dynamic, "True")):
        plan = preload_plan([path.read_text()])
        ((run,),) = run_batches(
            root, [[path]], timeout=60, concurrency=1, preload=plan
        )
        assert run.stdout == printed + "\n", run.stderr


def test_multihead_attention_preloads_what_its_forward_imports():
    plan = preload_plan(
        [
            "import torch.nn as nn\nm = nn.MultiheadAttention(8, 2)\n",
            "from mha_ref import forward_flops\n",
        ]
    )
    assert plan[0] == "torch"
    for module in (
        "torch.fx.experimental.symbolic_shapes",
        "torch.distributed.tensor",
        "torch._dynamo",
        "torch.nn",
    ):
        assert module in plan, f"expected {module} in the plan {plan}"
    assert "mha_ref" not in plan, "the lesson's code runs only in a run"


def test_only_known_packages_are_imported_ahead():
    """A snippet's own helper module, or a package that might print or
    write when imported, is left to the child."""
    plan = preload_plan(
        [
            "import matplotlib\nmatplotlib.use('Agg')\n"
            "import matplotlib.pyplot as plt\n"
            "import helpers\nimport requests\nfrom . import x\n",
            "this is not Python (\n",
        ]
    )
    assert plan == ["torch", "matplotlib", "matplotlib.pyplot"]


# --- mkdocs serve: the plugin keeps the servers ------------------------------


def test_serve_keeps_servers_across_rebuilds(tmp_path, monkeypatch):
    """Under ``mkdocs serve`` the lesson plugin is kept across rebuilds:
    its servers start once, an edited snippet re-runs alone on them,
    and on_shutdown stops them."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    root = make_site(tmp_path, "good")
    monkeypatch.chdir(root)
    monkeypatch.setenv("SNIPPET_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NO_MKDOCS_2_WARNING", "1")
    site = str(tmp_path / "site")
    config = load_config("mkdocs.yml", site_dir=site)
    config.plugins.on_startup(command="serve", dirty=False)
    try:
        build(config, serve_url="")
        plugin = config.plugins["lesson"].build
        servers = {i: s.proc.pid for i, s in plugin.pool.servers.items()}
        assert len(servers) == 2, "expected two servers kept after a build"
        snippet = sorted((root / "snippets").glob("*.py"))[0]
        snippet.write_text(snippet.read_text() + "\n# edited\n")
        again = load_config("mkdocs.yml", site_dir=site)
        build(again, serve_url="")
        assert again.plugins["lesson"].build is plugin, "MkDocs kept it"
        assert plugin.result.ran == 1, plugin.result.summary()
        assert {
            i: s.proc.pid for i, s in plugin.pool.servers.items()
        } == servers, "expected the rebuild to reuse the servers"
    finally:
        config.plugins.on_shutdown()
    assert plugin.pool is None
    assert all(_gone(pid) for pid in servers.values())


def test_deferred_second_runs_are_judged_and_cached_only_when_they_agree(
    tmp_path,
):
    """A build's check returns after each snippet's first run (seed 0)
    while the second runs (seed 1) go on; ``finish`` judges the pairs:
    a snippet whose output depends on the hash seed is reported there,
    at its include, and never cached; one whose runs agree is cached
    only then."""
    from lessonbuild.engine.cache import Cache

    root = make_site(tmp_path, "good")
    # hash('lesson') % 1000 is 732 under seed 0 and 761 under seed 1.
    _snippet(root, "04_hashed.py", "print(hash('lesson') % 1000)\n")
    (root / "docs/slides/04-hashed.md").write_text(
        "---\ntitle: Hashed\nslide: 4\nkind: Worked example\n"
        "part: Fixture\n---\n\n# Hashed\n\n"
        '```python title="snippets/04_hashed.py"\n'
        '--8<-- "snippets/04_hashed.py"\n```\n\n'
        '```text title="Output"\n732\n```\n',
        encoding="utf-8",
    )
    cache = tmp_path / "cache"
    pool = Pool(root)
    try:
        result = _check(root, cache, pool, defer_second=True)
        assert result.problems == []  # the first runs all passed
        assert result.outputs["snippets/04_hashed.py"] == "732\n"
        assert not list(cache.rglob("*.json")), "cached before both runs"
        found = result.finish()
    finally:
        pool.close()
    assert [(p.path, p.line) for p in found] == [
        ("docs/slides/04-hashed.md", 11)
    ]
    assert "is nondeterministic" in found[0].message
    assert result.problems == found
    assert "snippets/04_hashed.py" not in result.outputs
    store = Cache(cache)
    records = [store.get(k, root) for k in _keys(root)]
    cached = {r["snippet"] for r in records if r is not None}
    assert cached == {
        "snippets/01_shapes.py",
        "snippets/02_softmax.py",
        "snippets/03_params.py",
    }


def _keys(root: Path) -> list[str]:
    from lessonbuild.engine import cache as cache_mod

    base = cache_mod.base_key(root / "snippets")
    return [
        cache_mod.snippet_key(base, f"snippets/{p.name}", p.read_bytes())
        for p in sorted((root / "snippets").glob("*.py"))
    ]


# --- a build's first server, started while MkDocs loads its plugins ----------


def test_prestart_starts_the_seed_0_server_only_for_a_snippet_to_run(
    tmp_path,
):
    """``prestart`` has server 0 import torch at once when a snippet
    has no cached run; the check then runs on that very server. Once
    every snippet is cached, it starts nothing."""
    from lessonbuild import engine
    from lessonbuild.engine.cache import base_key

    root = make_site(tmp_path, "good")
    # Outside snippets/: which server forked it is its Run's server.
    pid = root / "pid.py"
    pid.write_text("print('ran')\n", encoding="utf-8")
    cache = tmp_path / "cache"
    pool = Pool(root)
    try:
        assert engine.prestart(root, cache, pool) is True
        assert list(pool.servers) == [0], "expected seed 0's server alone"
        early = pool.servers[0].proc.pid
        result = _check(root, cache, pool)
        assert result.problems == [], result.problems
        first = pool.run(
            [[pid]],
            timeout=60,
            concurrency=1,
            key=base_key(root / "snippets"),
        )
        assert first[0][0].server == early, (
            "expected the prestarted server to be the one that ran"
        )
    finally:
        pool.close()
    again = Pool(root)
    try:
        assert engine.prestart(root, cache, again) is False
        assert again.servers == {}, "expected no server: all is cached"
    finally:
        again.close()


def test_a_pool_left_open_is_closed_at_exit(tmp_path):
    """A pool whose build never came (MkDocs stopped at another plugin's
    settings) is closed when the process exits: no folder is left."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from lessonbuild.engine.runner import Pool\n"
        "pool = Pool(Path(sys.argv[1]))\n"
        "pool.warm(['torch'], count=1)\n"
        "print(pool.tmp, flush=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    folder = Path(done.stdout.strip())
    assert folder.name.startswith(runner.TMP_PREFIX)
    assert not folder.exists(), f"{folder} left behind"


def test_a_builds_second_runs_yield_the_cores(tmp_path):
    """A build's seed-1 server works in the background (nice +10), and
    so does every run it forks; seed 0's runs keep this process's
    priority. Both seeds' results are judged as before."""

    root = make_site(tmp_path, "good")
    nice = (
        root / "snippets" / "nice.py"
    )  # (nothing outside is in a run's view)
    nice.write_text("import os\nprint(os.nice(0))\n", encoding="utf-8")
    ours = os.nice(0)
    pool = Pool(root)
    try:
        result = _check(root, tmp_path / "cache", pool, defer_second=True)
        seed_1 = pool.servers[1].proc.pid
        assert os.getpriority(os.PRIO_PROCESS, seed_1) == min(
            19, ours + runner.BACKGROUND_NICE
        )
        assert result.finish() == []
        key = pool.key
        first, second = pool.run(
            [[nice], [nice]], timeout=60, concurrency=1, key=key
        )
    finally:
        pool.close()
    assert int(first[0].stdout) == ours
    assert int(second[0].stdout) == min(19, ours + runner.BACKGROUND_NICE)


def test_the_warmed_server_forks_with_one_thread(tmp_path):
    """The server imports torch before its first fork; it must still
    fork single-threaded (a thread pool started before a fork can
    deadlock the child), and a run that wants many threads still gets a
    parallel matmul that agrees with a plain one. (The run is PID 1 of
    its namespace: its parent, the server's child that waits for it, is
    outside; the run reads its own thread count at start.)"""
    path = _snippet(
        tmp_path,
        "threads.py",
        "import os\n"
        "import torch\n"
        "with open('/proc/self/status') as f:\n"
        "    print([l.split()[1] for l in f if l.startswith('Threads:')][0])\n"
        "torch.set_num_threads(4)\n"
        "g = torch.Generator().manual_seed(0)\n"
        "a = torch.randn(384, 384, generator=g, dtype=torch.float64)\n"
        "many = a @ a\n"
        "torch.set_num_threads(1)\n"
        "print(torch.allclose(many, a @ a))\n",
    )
    ((run,),) = run_batches(tmp_path, [[path]], timeout=60, concurrency=1)
    assert run.exit == 0, run.failure or run.stderr
    assert run.stdout.split() == ["1", "True"], run.stdout


def test_a_runs_exit_does_what_a_standalone_exit_does(tmp_path):
    """A snippet's own exit work runs in the engine as in ``python X.py``:
    its atexit handler, its weakref finalizers (a TemporaryDirectory
    removed), and logging's shutdown (a buffering handler flushed); the
    server's own finalizers and handlers are not the child's to run
    (server._ExitWork, through public functions only)."""
    path = _snippet(
        tmp_path,
        "exits.py",
        "import atexit, logging, logging.handlers, sys, tempfile, weakref\n"
        "import torch\n"
        "class Box:\n"
        "    pass\n"
        "box = Box()\n"
        "weakref.finalize(box, print, 'finalizer ran')\n"
        "scratch = tempfile.TemporaryDirectory()\n"
        "open(scratch.name + '/f', 'w').close()\n"
        "atexit.register(lambda: print('atexit ran'))\n"
        "log = logging.getLogger('exits')\n"
        "log.propagate = False\n"
        "log.addHandler(logging.handlers.MemoryHandler(\n"
        "    100, target=logging.StreamHandler(sys.stdout)))\n"
        "log.warning('logged, flushed at exit')\n"
        "print('body done', scratch.name, file=sys.stderr)\n",
    )
    ((run,),) = run_batches(tmp_path, [[path]], timeout=60, concurrency=1)
    alone = subprocess.run(
        [sys.executable, str(path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert run.exit == 0, run.failure or run.stderr
    assert run.stdout == alone.stdout
    assert run.stdout.split("\n") == [
        "atexit ran",
        "finalizer ran",
        "logged, flushed at exit",
        "",
    ]
