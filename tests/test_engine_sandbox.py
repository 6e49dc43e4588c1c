"""The sandbox holds (issue 31): each attack a snippet can make on its
isolation, its limits and the cache, run as root and as an unprivileged
user, and what it gets.

Before this, the run owned the namespace that made the repository
read-only, so one ``mount -o remount,rw`` undid it; it could signal any
process of its user; nothing but time was bounded; and the cache key
missed files read by other programs, the environment, the date and the
installed packages. Each test below fails on that code.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from lessonbuild.engine import cache as cache_mod
from tests.engine_fixtures.sites import run_batches
from tests.sockets import socket_files

#: Every way out a snippet was found to try; each line says what it got.
ATTACKS = r"""
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_void_p]
libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
root = os.getcwd().encode()
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC = 1, 32, 4096, 16384

def attempt(name, result):
    err = ctypes.get_errno()
    print(name, "DONE" if result == 0 else errno.errorcode.get(err, err))

def try_open(name, path):
    try:
        open(path, "a").close()
        print(name, "DONE")
    except OSError as exc:
        print(name, errno.errorcode.get(exc.errno, exc.errno))

try_open("write-repo", "README.md")
try_open("write-tmp", "/tmp/escaped-" + str(os.getpid()))
attempt("remount-rw", libc.mount(None, root, None, MS_BIND | MS_REMOUNT, None))
attempt("remount-root-rw", libc.mount(None, b"/", None, MS_REMOUNT | MS_BIND, None))
attempt("umount-repo", libc.umount2(root, 0))
attempt("umount-repo-lazy", libc.umount2(root, 2))
attempt("umount-proc", libc.umount2(b"/proc", 2))
parent = os.path.dirname(os.getcwd()).encode()
scratch = os.environ["TMPDIR"].encode()
attempt("bind-parent", libc.mount(parent, scratch, None, MS_BIND, None))
# A new user namespace of its own gives every capability in it, and
# still no way to unlock a mount made by a more privileged one.
if libc.unshare(0x10000000 | 0x20000) == 0:
    attempt("unshare-remount-rw", libc.mount(None, root, None, MS_BIND | MS_REMOUNT, None))
    attempt("unshare-umount", libc.umount2(root, 2))
else:
    print("unshare-remount-rw", errno.errorcode.get(ctypes.get_errno()))
    print("unshare-umount", errno.errorcode.get(ctypes.get_errno()))
try_open("write-repo-again", "README.md")
try:
    os.kill(-1, 9)
    print("kill-all DONE")
except OSError as exc:
    print("kill-all", errno.errorcode[exc.errno])
# Only itself and the namespace's init (pid 1).
others = [
    p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())
]
print("processes-seen", len(others))
try_open("write-scratch", os.path.join(os.environ["TMPDIR"], "ok"))
# Init (pid 1) holds none of the run's limits: rewriting its code would
# run anything unbounded.
try_open("write-init-memory", "/proc/1/mem")
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
attempt("ptrace-init", libc.ptrace(16, 1, None, None))  # PTRACE_ATTACH
import signal, time
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
    os.kill(1, sig)
time.sleep(0.3)
print("init-alive", os.path.exists("/proc/1/status"))
# Its process group: once the waiting process outside the namespace too.
signal.signal(signal.SIGTERM, signal.SIG_IGN)
os.kill(0, signal.SIGTERM)
time.sleep(0.3)
print("group-signal-survived", True)
# Devices: only the harmless ones (a loop device outlived its run and
# carried data to the next; /dev/kmsg wrote to the machine's log).
for dev in ("loop-control", "loop0", "kmsg", "mem", "vda"):
    print("dev-" + dev, os.path.exists("/dev/" + dev))
with open("/dev/null", "w") as null:
    print("dev-null", null.write("x"))
print("dev-urandom", len(open("/dev/urandom", "rb").read(4)))
# The machine's settings, through the run's own /proc (read-only; not
# even writable to the unprivileged).
try:
    open("/proc/sys/kernel/domainname", "a").close()
    print("write-proc-sys DONE")
except OSError as exc:
    refused = exc.errno in (errno.EROFS, errno.EACCES)
    print("write-proc-sys", "refused" if refused else errno.errorcode[exc.errno])
"""


def _site(base: Path) -> Path:
    root = base / "site"
    (root / "snippets").mkdir(parents=True)
    (root / "README.md").write_text("# untouched\n")
    return root


def _run_as(user: str, root: Path, sources: dict[str, str], env=None):
    """Run each snippet once, as ``user`` ("root": this process, or
    "nobody": a child dropped to uid 65534); a list of Run-like dicts."""
    for name, text in sources.items():
        (root / "snippets" / name).write_text(text)
    paths = [root / "snippets" / name for name in sources]
    if user == "root":
        old = dict(os.environ)
        os.environ.update(env or {})
        try:
            [runs] = run_batches(root, [paths], timeout=60, concurrency=1)
        finally:
            os.environ.clear()
            os.environ.update(old)
        return [r.__dict__ | {"limits": None} for r in runs]
    if os.getuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("dropping to an unprivileged user needs root and setpriv")
    # pytest's folders are root's alone: a copy in a folder of its own.
    base = Path(tempfile.mkdtemp(prefix="sandbox-nobody-"))
    try:
        return _run_as_nobody(base, root, list(sources), env)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _run_as_nobody(base: Path, site: Path, names: list[str], env):
    os.chmod(base, 0o755)
    root, tmp = base / "site", base / "tmp"
    shutil.copytree(site, root)
    tmp.mkdir()
    for path in [base, root, tmp, *root.rglob("*")]:
        os.chown(path, 65534, 65534, follow_symlinks=False)
    paths = [root / "snippets" / name for name in names]
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from lessonbuild.engine.runner import Pool\n"
        "paths = [Path(p) for p in sys.argv[2:]]\n"
        "pool = Pool(Path(sys.argv[1]))\n"
        "[runs] = pool.run([paths], timeout=60, concurrency=1)\n"
        "pool.close()\n"
        "print(json.dumps([r.__dict__ | {'limits': None} for r in runs]))\n"
    )
    python, extra = _interpreter_for_nobody()
    proc = subprocess.run(
        [*NOBODY, python, "-c", code, str(root), *map(str, paths)],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "TMPDIR": str(tmp),
            "HOME": str(tmp),
            **extra,
            **(env or {}),
        },
        cwd=tmp,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


USERS = ["root", "nobody"]
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
REPO = Path(__file__).resolve().parents[1]


def _fresh_server():
    """The engine's server module, loaded anew from its file: a test may
    set its module globals (CGROUPS) without touching another's."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "server", REPO / "scripts/lessonbuild/engine/server.py"
    )
    server = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(server)
    return server


def _interpreter_for_nobody() -> tuple[str, dict]:
    """(python, environment) an unprivileged user can run with this
    project importable: this interpreter, or, where it lives in a folder
    only root may enter (a pyenv under /root), the system's Python of
    the same minor version with the virtual environment's packages."""
    probe = [
        sys.executable,
        "-c",
        "import subprocess, sys; subprocess.run([sys.executable, '-c', "
        "'import torch, lessonbuild'], check=True)",
    ]
    if subprocess.run([*NOBODY, *probe], capture_output=True).returncode == 0:
        return sys.executable, {}
    python = shutil.which(
        f"python{sys.version_info[0]}.{sys.version_info[1]}", path="/usr/bin"
    )
    if python is None:
        pytest.skip(
            f"no Python an unprivileged user may run ({sys.executable})"
        )
    import sysconfig

    path = [sysconfig.get_paths()["purelib"], str(REPO / "scripts"), str(REPO)]
    return python, {"PYTHONPATH": os.pathsep.join(path)}


@pytest.mark.parametrize("user", USERS)
def test_a_run_cannot_undo_its_isolation(tmp_path, user):
    """Remounting the repository writable, unmounting it or /proc,
    binding around it, doing so from a user namespace of its own, writing
    outside its scratch folder, signalling everything: each refused."""
    root = _site(tmp_path)
    [run] = _run_as(user, root, {"attack.py": ATTACKS})
    assert run["exit"] == 0, run["stderr"] + run["failure"]
    got = dict(line.split(" ", 1) for line in run["stdout"].splitlines())
    assert got == {
        "write-repo": "EROFS",
        "write-tmp": "EROFS",
        "remount-rw": "EPERM",
        "remount-root-rw": "EPERM",
        # No capability in the user namespace that owns its mounts.
        "umount-repo": "EPERM",
        "umount-repo-lazy": "EPERM",
        "umount-proc": "EPERM",
        "bind-parent": "EPERM",
        "unshare-remount-rw": "EPERM",
        "unshare-umount": "EINVAL",
        "write-repo-again": "EROFS",
        "kill-all": "ESRCH",
        "processes-seen": "0",
        "write-scratch": "DONE",
        "write-init-memory": "EACCES",
        "ptrace-init": "EPERM",
        "init-alive": "True",
        "group-signal-survived": "True",
        "write-proc-sys": "refused",
        "dev-loop-control": "False",
        "dev-loop0": "False",
        "dev-kmsg": "False",
        "dev-mem": "False",
        "dev-vda": "False",
        "dev-null": "1",
        "dev-urandom": "4",
    }, run["stdout"]
    assert (root / "README.md").read_text() == "# untouched\n"
    assert not list(Path("/tmp").glob("escaped-*"))


@pytest.mark.parametrize("user", USERS)
def test_a_run_shares_no_ipc_and_no_network(tmp_path, user):
    """A System V semaphore set of the machine's and a port listening on
    its loopback are out of reach, and what a run leaves in IPC is gone
    with it (a later run, or the machine, never sees it). A System V
    segment or message queue it may not make at all: filled, its memory
    is counted by no limit (mha_ref/_isolate.confine)."""
    import socket

    libc = ctypes.CDLL(None, use_errno=True)
    key = 0x4C420000 + os.getpid() % 0xFFFF
    semaphores = libc.semget(key, 1, 0o1600)  # IPC_CREAT | 0600
    assert semaphores >= 0, os.strerror(ctypes.get_errno())
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    probe = (
        "import ctypes, errno, socket\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def said(got):\n"
        "    return errno.errorcode.get(ctypes.get_errno()) if got < 0 else 'made'\n"
        f"print('machine-sem', said(libc.semget({key}, 1, 0)))\n"
        f"print('own-sem', said(libc.semget({key + 1}, 1, 0o1600)))\n"
        f"print('own-queue', said(libc.msgget({key + 3}, 0o1600)))\n"
        f"print('own-shm', said(libc.shmget({key + 2}, 4096, 0o1600)))\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=5)\n"
        "    print('loopback', 'CONNECTED')\n"
        "except OSError as exc:\n"
        "    print('loopback', errno.errorcode.get(exc.errno, exc))\n"
    )
    try:
        [run] = _run_as(user, _site(tmp_path), {"ipc.py": probe})
    finally:
        listener.close()
        libc.semctl(semaphores, 0, 0)  # IPC_RMID
    got = dict(line.split(" ", 1) for line in run["stdout"].splitlines())
    assert got == {
        "machine-sem": "ENOENT",
        "own-sem": "made",
        "own-queue": "ENOSYS",
        "own-shm": "ENOSYS",
        "loopback": "EACCES",
    }, run["stdout"] + run["stderr"]
    assert libc.semget(key + 1, 1, 0) < 0, "a run's IPC outlived it"


def test_the_servers_import_nothing_of_the_lessons(tmp_path):
    """A module in snippets/ named like a package the servers preload
    (matplotlib) runs in a run's sandbox only, never in a fork server,
    whose mounts it could change: here it would leave a file where the
    server may write and a run may not."""
    root = _site(tmp_path)
    marker = tmp_path / "imported-in-the-server"
    (root / "snippets" / "matplotlib.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n"
    )
    [run] = _run_as(
        root=root, user="root", sources={"plot.py": "import matplotlib\n"}
    )
    assert not marker.exists(), "the server imported the lesson's module"
    assert "Read-only file system" in run["stderr"], run


def test_a_leftover_cgroup_does_not_lift_the_process_limit(tmp_path):
    """A build killed before it cleaned up leaves its cgroups; a later
    server with the same pid still gets folders of its own (without
    them, nothing bounds root's processes)."""
    server = _fresh_server()
    first = server.make_cgroups() if os.getuid() == 0 else {}
    if "pids" not in first:
        pytest.skip("no pids cgroup this user may make folders in")
    second = server.make_cgroups()  # the same pid, the first left behind
    try:
        assert second.get("pids") and second["pids"] != first["pids"]
    finally:
        for folder in {*first.values(), *second.values()}:
            os.rmdir(folder)
    # A gone server's folders (and its runs') are swept by the next; a
    # folder of another PID namespace, where that pid may be alive, is
    # not (a sweep removed live servers' folders: their runs failed).
    gone = subprocess.Popen(["true"])
    gone.wait()
    base = Path(first["pids"]).parent
    stale = base / server.cgroup_name(gone.pid)
    (stale / "7").mkdir(parents=True)
    other = base / stale.name.replace(
        f".{os.stat('/proc/self/ns/pid').st_ino}.", ".1.", 1
    )
    other.mkdir()
    try:
        third = server.make_cgroups()
        for folder in set(third.values()):
            os.rmdir(folder)
        assert not stale.exists(), "a gone server's cgroup was left"
        assert other.exists(), "another namespace's cgroup was swept"
    finally:
        other.rmdir()


def test_a_server_whose_cgroup_folder_was_removed_still_runs(tmp_path):
    """An idle server's cgroup folder is empty, and a root process may
    remove it: each later run failed to join a cgroup (a clean-clone CI
    run lost 6 tests). The server makes its folder again."""
    server = _fresh_server()
    server.CGROUPS = server.make_cgroups() if os.getuid() == 0 else {}
    if "pids" not in server.CGROUPS:
        pytest.skip("no pids cgroup this user may make folders in")
    folders = set(server.CGROUPS.values())
    try:
        for folder in folders:
            os.rmdir(folder)  # removed under the server
        pid = os.fork()
        if pid == 0:  # the run: joins its cgroup, as a run does
            try:
                server._join_cgroups("run", {"processes": 8})
                os._exit(0)
            except BaseException:
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        pids = Path(server.CGROUPS["pids"]) / "run"
        assert (pids / "pids.max").read_text().strip() == "9"
    finally:
        for folder in folders:
            for run in Path(folder).glob("*/"):
                run.rmdir()
            if os.path.isdir(folder):
                os.rmdir(folder)


def test_a_run_cannot_raise_its_own_limits(tmp_path):
    """A cgroup file system the run mounts itself (in a cgroup namespace
    of its own) shows its own cgroups: their limits stay read-only."""
    if os.getuid() != 0:
        pytest.skip("cgroups are made for a build run as root")
    lift = (
        "import ctypes, errno, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_void_p]\n"
        "libc.unshare(0x10000000 | 0x20000 | 0x02000000)\n"
        "s = os.environ['TMPDIR']\n"
        "for c, f, v in (('pids', 'pids.max', 'max'),\n"
        "                ('memory', 'memory.limit_in_bytes', '-1')):\n"
        "    os.mkdir(f'{s}/{c}')\n"
        "    if libc.mount(b'none', f'{s}/{c}'.encode(), b'cgroup', 0, c.encode()):\n"
        "        print(c, 'not-mounted'); continue\n"
        "    try:\n"
        "        open(f'{s}/{c}/{f}', 'w').write(v)\n"
        "        print(c, 'RAISED')\n"
        "    except OSError as exc:\n"
        "        print(c, errno.errorcode[exc.errno])\n"
    )
    [run] = _run_as("root", _site(tmp_path), {"lift.py": lift})
    assert run["exit"] == 0, run["stderr"]
    assert "RAISED" not in run["stdout"], run["stdout"]


def test_memory_is_bounded_for_the_run_not_each_process(tmp_path):
    """Four processes of 200 MiB each, under a 256 MiB limit: the run's
    processes share it (a cgroup, as root), and the message names the
    setting."""
    from lessonbuild.engine.judge import judge
    from lessonbuild.engine.runner import Limits

    if os.getuid() != 0 or not Path("/sys/fs/cgroup/memory").is_dir():
        if not Path("/sys/fs/cgroup/cgroup.controllers").is_file():
            pytest.skip("no memory cgroup here")
    forks = (
        "import os, time\n"
        "for _ in range(4):\n"
        "    if os.fork() == 0:\n"
        "        x = bytearray(200 << 20)\n"
        "        time.sleep(5)\n"
        "        os._exit(0)\n"
        "statuses = [os.wait()[1] for _ in range(4)]\n"
        "print('all held', all(s == 0 for s in statuses))\n"
    )
    root = _site(tmp_path)
    [run] = _run_as(
        "root", root, {"forks.py": forks}, {"SNIPPET_MEMORY_MB": "256"}
    )
    if not run["memory_full"]:
        pytest.skip("this machine gave the run no memory cgroup")
    assert "all held True" not in run["stdout"], run
    from lessonbuild.engine.runner import Run

    # Even where the snippet carries on after the kernel killed a fork.
    fields = {k: v for k, v in run.items() if k in Run.__dataclass_fields__}
    got = Run(**fields | {"limits": Limits(memory_mb=256)})
    verdict = judge(root, "snippets/forks.py", got, got, 60)
    assert not verdict["ok"]
    assert "more than 256 MiB of memory" in verdict["message"], verdict


@pytest.mark.parametrize("user", USERS)
def test_memory_processes_and_output_are_bounded(tmp_path, user):
    """20 GiB asked for, a fork bomb, 200 MB printed: each stops at its
    limit (a setting each), with a message naming the setting; the
    output is cut while it is written, never read whole."""
    root = _site(tmp_path)
    env = {
        "SNIPPET_MEMORY_MB": "1024",
        "SNIPPET_MAX_PROCESSES": "32",
        "SNIPPET_MAX_FILE_MB": "1",
    }
    runs = _run_as(
        user,
        root,
        {
            "memory.py": "x = bytearray(20 << 30)\nprint('allocated')\n",
            "bomb.py": (
                "import os, sys, time\n"
                "n = 0\n"
                "try:\n"
                "    while n < 1000:\n"
                "        if os.fork() == 0:\n"
                "            time.sleep(30)\n"
                "            os._exit(0)\n"
                "        n += 1\n"
                "except OSError as exc:\n"
                "    print('stopped after', n, exc.strerror)\n"
            ),
            "flood.py": (
                "import sys\n"
                "line = 'x' * 999 + '\\n'\n"
                "for _ in range(200_000):\n"
                "    sys.stdout.write(line)\n"
            ),
        },
        env,
    )
    memory, bomb, flood = runs
    assert memory["exit"] == 1 and "MemoryError" in memory["stderr"]
    assert "allocated" not in memory["stdout"]
    words = bomb["stdout"].split()
    assert words[:2] == ["stopped", "after"], bomb["stdout"] + bomb["stderr"]
    assert int(words[2]) < 32
    assert flood["file_full"] and flood["exit"] != 0
    assert len(flood["stdout"]) <= 1 << 20
    assert "File too large" in flood["stderr"]


def test_limit_messages_name_their_setting(tmp_path, monkeypatch):
    """The judge says which limit a failed run hit and how to raise it."""
    from lessonbuild.engine.judge import judge

    root = _site(tmp_path)
    monkeypatch.setenv("SNIPPET_MAX_FILE_MB", "1")
    monkeypatch.setenv("SNIPPET_MEMORY_MB", "1024")
    path = root / "snippets" / "memory.py"
    path.write_text("x = bytearray(20 << 30)\n")
    flood = root / "snippets" / "flood.py"
    flood.write_text("import sys\nsys.stdout.write('x' * (3 << 20))\n")
    [[a, b]] = run_batches(root, [[path, flood]], timeout=60, concurrency=1)
    verdict = judge(root, "snippets/memory.py", a, a, 60)
    assert "more than 1024 MiB of memory" in verdict["message"]
    assert "SNIPPET_MEMORY_MB" in verdict["message"]
    verdict = judge(root, "snippets/flood.py", b, b, 60)
    assert "past 1 MiB" in verdict["message"], verdict
    assert "SNIPPET_MAX_FILE_MB" in verdict["message"]


# --- the cache sees what a run can observe ----------------------------------


def test_what_a_run_reads_is_seen_and_outside_reads_are_named(tmp_path):
    """A data file under the root is in the run's reads, even when the
    run ends with os._exit (noted as it is opened); a file outside the
    repository is named, reached through /proc/self/root too; a program
    it starts (cat) makes it uncacheable; the caller's environment is not
    there to read, not even in /proc/self/environ."""
    outside = tmp_path / "secret.txt"
    outside.write_text("outside\n")
    root = _site(tmp_path)
    (root / "data.txt").write_text("inside\n")
    os.environ["LESSON_PROBE"] = "leaked"
    try:
        [exits, reads_outside, cat, env, proc_root, link] = _run_as(
            "root",
            root,
            {
                "exits.py": (
                    "import os\nprint(open('data.txt').read().strip(), flush=True)\n"
                    "os._exit(0)\n"
                ),
                "outside.py": f"print(open({str(outside)!r}).read())\n",
                "cat.py": (
                    "import subprocess\n"
                    "subprocess.run(['cat', 'data.txt'], check=True)\n"
                ),
                "env.py": (
                    "import os\nprint(os.environ.get('LESSON_PROBE'))\n"
                    "print(b'leaked' in open('/proc/self/environ', 'rb').read())\n"
                ),
                "proc_root.py": f"print(open('/proc/self/root' + {str(outside)!r}).read())\n",
                "link.py": (
                    "import os\n"
                    "link = os.path.join(os.environ['TMPDIR'], 'l')\n"
                    f"os.symlink({str(outside)!r}, link)\n"
                    "print(open(link).read())\n"
                ),
            },
        )
    finally:
        del os.environ["LESSON_PROBE"]
    assert exits["stdout"] == "inside\n"
    assert exits["reads"] == ["data.txt", "snippets/exits.py"]
    assert reads_outside["outside"] == [str(outside)]
    assert (
        cat["stdout"] == "inside\n" and cat["uncached"] == "started a program"
    )
    assert env["stdout"] == "None\nFalse\n", (
        "the build's environment is readable"
    )
    # /proc/self/root/... is the machine's root: the same outside file.
    assert proc_root["outside"] == [str(outside)], proc_root
    # A link in its own scratch folder to the outside file: the same.
    assert link["outside"] == [str(outside)], link


def test_a_run_cannot_erase_what_it_read(tmp_path):
    """The record of reads was a file the run held open: one ftruncate
    erased it, and a cached run stayed when the data file changed. Now
    the run writes into a pipe: nothing written can be taken back."""
    root = _site(tmp_path)
    (root / "data.txt").write_text("inside\n")
    erase = (
        "import os\n"
        "print(open('data.txt').read().strip())\n"
        "for fd in map(int, os.listdir('/proc/self/fd')):\n"
        "    if fd > 2:\n"
        "        try:\n"
        "            os.ftruncate(fd, 0)\n"
        "            os.lseek(fd, 0, os.SEEK_SET)\n"
        "            os.write(fd, b'R snippets/erase.py\\n')\n"
        "        except OSError:\n"
        "            pass\n"
    )
    [run] = _run_as("root", root, {"erase.py": erase})
    assert run["stdout"] == "inside\n", run
    assert "data.txt" in run["reads"], run["reads"]


#: Reads the audit hook cannot see: C code (ctypes' fopen; torch.from_file
#: did the same) and a program (cat), and a socket of the machine's.
UNSEEN = r"""
import ctypes, errno, os, socket, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.fopen.restype = ctypes.c_void_p
libc.fgets.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p]
for path in sys.argv[1:] or PATHS:
    f = libc.fopen(path.encode(), b"r")
    line = ctypes.create_string_buffer(200)
    got = f and libc.fgets(line, 200, ctypes.c_void_p(f)) and line.value
    print("fopen", path, got or errno.errorcode.get(ctypes.get_errno(), "empty"))
    cat = subprocess.run(["cat", path], capture_output=True)
    print("cat", path, cat.stdout[:40] or cat.returncode or "empty")
print("socket-file", os.path.exists(SOCKET))
try:
    socket.socket(socket.AF_UNIX).connect(SOCKET)
    print("socket DONE")
except OSError as exc:
    print("socket", errno.errorcode[exc.errno])
print("top", sorted(os.listdir("/")))
"""


def test_what_is_outside_the_repository_is_not_there(tmp_path):
    """The audit hook names what Python opens outside the repository,
    but C code and programs open files unseen: ``torch.from_file`` of
    /etc/shadow reached a page. Now only the repository, the interpreter
    and the system's folders are in a run's file system: a file beside
    the repository, /etc/shadow and a socket of the machine's are not
    there to read or reach, through C or a program (the sandbox as root
    reads any file otherwise)."""
    outside = tmp_path / "secret.txt"
    outside.write_text("outside secret\n")
    outside.chmod(0o644)
    paths = [str(outside), "/etc/shadow", str(Path.home() / ".bashrc")]
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(tmp_path / "daemon.sock"))
    listening.listen()
    root = _site(tmp_path)
    (root / "inside.txt").write_text("inside\n")
    program = UNSEEN.replace("PATHS", repr([*paths, "inside.txt"]))
    program = program.replace("SOCKET", repr(str(tmp_path / "daemon.sock")))
    try:
        [run] = _run_as("root", root, {"unseen.py": program})
    finally:
        listening.close()
    assert run["exit"] == 0, run["stderr"] + run["failure"]
    lines = run["stdout"].splitlines()
    assert "fopen inside.txt b'inside\\n'" in lines, lines
    assert "cat inside.txt b'inside\\n'" in lines, lines
    for path in paths:
        for line in lines:
            if line.split(" ")[1:2] == [path]:
                assert line.endswith(("ENOENT", "EACCES", "empty", " 1")), line
    assert "socket-file False" in lines, lines
    assert "socket EACCES" in lines, lines  # (no Unix socket at all)
    top = next(line for line in lines if line.startswith("top "))
    assert "'home'" not in top and "'var'" not in top, top


def test_a_config_file_only_its_owner_may_read_is_outside(tmp_path):
    """/etc is the system's, but not all of it is for everyone: a build
    as root read /etc/shadow into a page. A file of /etc that not every
    user may read is named as outside the repository (the open is seen
    before it fails, as any user)."""
    secret = Path("/etc/shadow")
    if not secret.is_file() or secret.stat().st_mode & 0o004:
        pytest.skip("no /etc/shadow kept from other users here")
    [run] = _run_as(
        "root",
        _site(tmp_path),
        {
            "etc.py": (
                "print(len(open('/etc/passwd').read()) > 0)\n"
                "try:\n"
                "    open('/etc/shadow').read()\n"
                "except OSError:\n"
                "    pass\n"
            )
        },
    )
    assert run["stdout"] == "True\n", run
    assert run["outside"] == ["/etc/shadow"], run


def _into_the_record(body: str) -> str:
    """A snippet that runs ``body`` with ``fd``, its record of reads (the
    one pipe it holds)."""
    return (
        "import os\n"
        "def pipe(fd):\n"
        "    try:\n"
        "        return os.readlink(f'/proc/self/fd/{fd}').startswith('pipe:')\n"
        "    except OSError:  # listdir's own descriptor, closed\n"
        "        return False\n"
        "[fd] = [int(f) for f in os.listdir('/proc/self/fd') if int(f) > 2 "
        "and pipe(f)]\n" + body
    )


def test_a_forged_read_cannot_make_the_build_read_outside(tmp_path):
    """The run can write into its own record of reads (a pipe): a device
    or a path out of the root written there is not taken (the build would hash
    /dev/zero until it ran out of memory)."""
    forge = _into_the_record(
        "up = b'/'.join([b'..', b'..', b'etc', b'passwd'])\n"
        "os.write(fd, b'R /dev/zero\\nR ' + up + b'\\n')\n"
        "print('forged')\n"
    )
    [run] = _run_as("root", _site(tmp_path), {"forge.py": forge})
    assert run["stdout"] == "forged\n", run
    assert run["reads"] == ["snippets/forge.py"], run["reads"]


def test_a_flooded_record_of_reads_is_bounded(tmp_path):
    """The pipe is copied by a process outside the run's limits: 300 MiB
    written there filled /tmp past the run's 64 MiB file limit, and the
    build read it all into memory. Now 1 MiB is kept, the rest drained,
    and the run is not cached (what it read is no longer all known)."""
    flood = _into_the_record(
        "for _ in range(8 * 1024):\n"
        "    os.write(fd, b'R ' + b'x' * 1000 + b'\\n')\n"
        "print('flooded')\n"
    )
    [run] = _run_as("root", _site(tmp_path), {"flood.py": flood})
    assert run["stdout"] == "flooded\n", run
    assert run["uncached"] == "recorded more reads than can be kept", run
    assert sum(map(len, run["reads"])) < 1 << 20, len(run["reads"])


def test_outside_read_fails_the_check_naming_the_file(tmp_path):
    from lessonbuild.engine.judge import judge
    from lessonbuild.engine.runner import Run

    run = Run(stdout="x\n", exit=0, outside=["/home/me/data.csv"])
    verdict = judge(tmp_path, "snippets/a.py", run, run, 60)
    assert not verdict["ok"]
    assert "/home/me/data.csv, outside the repository" in verdict["message"]


def test_the_key_covers_packages_and_the_date(tmp_path, monkeypatch):
    """Installing or upgrading any package, or a new day (a run may read
    the clock), changes every snippet's key."""
    snippets = tmp_path / "snippets"
    snippets.mkdir()
    before = cache_mod.base_key(snippets)
    site = tmp_path / "site-packages"
    (site / "extra_pkg-1.0.dist-info").mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [*sys.path, str(site)])
    with_package = cache_mod.base_key(snippets)
    assert with_package != before
    tomorrow = time.gmtime(time.time() + 86400)
    monkeypatch.setattr(time, "gmtime", lambda *a: tomorrow)
    assert cache_mod.base_key(snippets) != with_package


def test_a_sweep_racing_another_servers_sweep_goes_on(tmp_path, monkeypatch):
    """Two builds start servers at once, each sweeping gone servers'
    cgroup folders: a folder listed by one and removed by the other
    before it was read killed the first server (FileNotFoundError; a
    clean-clone CI run lost a test). The sweep goes on past it."""
    server = _fresh_server()
    gone = subprocess.Popen(["true"])
    gone.wait()
    first, second = (tmp_path / server.cgroup_name(gone.pid) for _ in "12")
    (first / "7").mkdir(parents=True)
    (second / "7").mkdir(parents=True)
    scandir = os.scandir

    def swept_meanwhile(path):
        if Path(path) == first:  # the other server got there first
            (first / "7").rmdir()
            first.rmdir()
        return scandir(path)

    monkeypatch.setattr(server.os, "scandir", swept_meanwhile)
    server._sweep(str(tmp_path))
    assert not first.exists() and not second.exists()


#: A socket file the run can see (in the repository: git's fsmonitor
#: daemon keeps one in .git), reached by a stream socket and by a
#: datagram pair's sendto; then what a snippet may still do with
#: processes (multiprocessing's Queue is a pipe, its Pipe a stream pair).
SOCKET_FILES = r"""
import errno, multiprocessing, socket
def probe(name, act):
    try:
        act()
        print(name, "DONE")
    except OSError as exc:
        print(name, errno.errorcode[exc.errno])
probe("connect", lambda: socket.socket(socket.AF_UNIX).connect("s.sock"))
pair = lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)[0]
probe("sendto", lambda: pair().sendto(b"x", "d.sock"))
if __name__ == "__main__":
    queue = multiprocessing.Queue()
    worker = multiprocessing.Process(target=queue.put, args=(42,))
    worker.start()
    ends = multiprocessing.Pipe()
    ends[0].send(queue.get(timeout=30))
    print("multiprocessing", ends[1].recv())
    worker.join()
"""


def test_a_run_reaches_no_socket_file_it_can_see(tmp_path):
    """The run's root shows the repository, and a socket file in it
    (a daemon's, a tool's) was a way out of the network namespace: a
    snippet connected to it. Now a run makes no Unix socket to connect
    or send with (the grader's filter, mha_ref/_isolate.py); it still
    starts processes and talks to them."""
    root = _site(tmp_path)
    with socket_files(root):
        [run] = _run_as("root", root, {"sockets.py": SOCKET_FILES})
        assert run["stdout"].splitlines() == [
            "connect EACCES",
            "sendto EACCES",
            "multiprocessing 42",
        ], run["stdout"] + run["stderr"]
        assert run["exit"] == 0, run["stderr"]
