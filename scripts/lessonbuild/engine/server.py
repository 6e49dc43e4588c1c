"""Fork server: import torch and what snippets need once, fork per snippet.

Started by runner.py as ``python server.py ROOT TMP`` (a plain script,
stdlib only until it preloads). Protocol, JSON lines: ``{"ready": ...}``
once its sandbox is up; then per batch read (jobs, limits, modules to
preload), ``{"started": id}`` and ``{"id": ..., "exit": ...}`` per job
and ``{"done": true}``. EOF ends it: one server serves a whole ``mkdocs
serve``. A run is ``python snippets/X.py`` (or ``python -m MODULE``) from
the root, but for the inherited imports, a fixed environment, a share of
torch's threads, a random torch seed (an unseeded snippet is caught as
nondeterministic) and none of the server's exit handlers.

The sandbox (issue 31): a run cannot change what is published, reach a
process outside it, or undo either. The server sees the root read-only
and little else of the machine, in namespaces a further user namespace
locks (``_sandbox_server``). Each run gets private user, mount, PID,
IPC, network, UTS and cgroup namespaces with everything read-only but
its scratch (``_sandbox_run``) under a non-dumpable init (``_init``);
rlimits and cgroups bound it, the grader's seccomp filter refuses it a
Unix socket, and an audit hook records what it reads (``_record_reads``).
``LESSONBUILD_NO_SANDBOX=1`` runs snippets unconfined (for a platform
without user namespaces; never in CI).
"""

import atexit
import ctypes
import faulthandler
import functools
import gc
import importlib
import importlib.util
import io
import json
import os
import re
import resource
import runpy
import signal
import stat
import sys
import time
import traceback
import weakref
from contextlib import suppress

#: mha_ref.tables.TABLES_ENV: this script may not import mha_ref (a
#: broken one under ``mkdocs serve`` must fail the snippet, not the server).
TABLES_ENV = "MHA_REF_TABLES_FILE"
NO_SANDBOX_ENV = "LESSONBUILD_NO_SANDBOX"
#: A child running longer than this (a hang, a sleep) stops counting
#: against the concurrency: two hanging snippets cost about one timeout.
SLOW_AFTER = 2.0
#: At most this many times the concurrency run at once (slow included).
SLOW_EXTRA = 4
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 1, 38, 36
PR_SET_DUMPABLE = 4
#: Seconds between the traceback dump (SIGUSR1) and SIGKILL on a timeout.
DUMP_GRACE = 0.3
#: What a run may read outside the root: the interpreter, its packages
#: and the system, and of /etc only what every user may read (a build as
#: root read /etc/shadow into a page).
SYSTEM_FOLDERS = ("/usr/", "/lib/", "/lib64/", "/proc/", "/sys/", "/dev/")
CONFIG_FOLDER = "/etc/"
#: The machine's folders a run can see at all (with a merged /usr's links).
VISIBLE = (*(f.rstrip("/") for f in SYSTEM_FOLDERS), "/etc", "/bin", "/sbin")
#: Audit events after which what a run reads is no longer all seen.
UNTRACKED = {
    "subprocess.Popen": "started a program",
    "os.system": "started a program",
    "os.exec": "started a program",
    "os.posix_spawn": "started a program",
    "os.spawn": "started a program",
    "ctypes.dlopen": "called C code through ctypes",
    "ctypes.call_function": "called C code through ctypes",
}
#: A run's /dev: a loop device a run attached outlived it and carried
#: data to the next, and /dev/kmsg wrote to the machine's log.
DEVICES = ("null", "zero", "full", "random", "urandom")
#: What of a run's own /proc is read-only (what container runtimes mask).
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus")
#: Bytes of a run's record of reads (the lesson's runs write a few KB).
MAX_READS = 1 << 20
#: Size of a run's scratch folder and of its /dev/shm (tmpfs, in RAM).
SCRATCH_SIZE = "256m"
#: lessonbuild, this script's package: a module job runs it, and a
#: traceback through the server's frames reads its source.
ENGINE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CGROUPS = {}  # controller -> this server's cgroup folder (make_cgroups)
PACKAGES = []  # where the interpreter finds packages (``main``)
#: mha_ref._isolate.confine (``_load_confine``), or why it did not load.
CONFINE = []
TORCH_THREADS = []  # torch's default thread count, once imported


def main():
    global CGROUPS
    root, tmp = sys.argv[1], sys.argv[2]
    _die_with_parent()
    # Orphans of a run that escaped its PID namespace's init come here.
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    # Before any import starts a thread: unshare(CLONE_NEWUSER) refuses.
    CGROUPS = make_cgroups() if os.getuid() == 0 else {}
    PACKAGES.extend(_package_folders())  # (the sandbox keeps them in view)
    error = ""
    if not os.environ.get(NO_SANDBOX_ENV):
        error = _sandbox_server(root, tmp)
        CONFINE.append(_load_confine())
    # The protocol's own stdout: a stray print during preload goes to fd 2.
    proto = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    if error:
        error = (
            f"no sandbox for the snippets: {error}\n(set {NO_SANDBOX_ENV}=1"
            " to run them unconfined, on a machine you trust)"
        )
        return _send(proto, {"ready": False, "error": error})
    os.chdir(root)
    # sys.path[0] stays this script's folder: nothing of the lesson's is
    # imported outside a run's sandbox.
    os.environ.pop(TABLES_ENV, None)
    faulthandler.enable()
    # The cyclic collector walks torch's millions of objects for no
    # garbage (import 2.8 s -> 2.3 s); children turn it back on.
    gc.disable()
    _send(proto, {"ready": True})
    for line in sys.stdin:
        batch = json.loads(line)
        default_threads = _preload(batch.get("preload", ()))
        threads = min(default_threads, int(batch.get("threads", 0)) or 10**6)
        _run_batch(proto, root, batch, threads)
        _send(proto, {"done": True})
    for folder in set(CGROUPS.values()):
        _rmdir(folder)


def _preload(names) -> int:
    """Import the batch's modules (preload.py), then ``gc.freeze``: a
    child's collection would touch, and copy, every page of torch. One
    that fails is left to the child to fail. Returns torch's default
    thread count (1 without torch)."""
    fresh = [name for name in names if name not in sys.modules]
    for name in fresh:
        try:
            importlib.import_module(name)
        except BaseException:
            pass
        if name == "torch" and "torch" in sys.modules:
            torch = sys.modules["torch"]
            TORCH_THREADS.append(torch.get_num_threads())
            # A fork after torch's OpenMP pool started can deadlock the
            # child; with one thread it never starts. Children set theirs.
            torch.set_num_threads(1)
    if fresh:
        gc.freeze()
    return TORCH_THREADS[0] if TORCH_THREADS else 1


def _load_confine():
    """``confine`` of ``mha_ref/_isolate.py`` (the grader's seccomp
    filter, kept in one place), loaded by path under a name of its own so
    that ``mha_ref`` stays the runs' own; or why not (each run then fails
    with that, not the server)."""
    repo = os.path.dirname(os.path.dirname(ENGINE))
    path = os.path.join(repo, "mha_ref", "_isolate.py")
    try:
        spec = importlib.util.spec_from_file_location("_lesson_isolate", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.confine
    except Exception as exc:  # noqa: BLE001 - a broken or missing file
        return f"{path} did not load: {exc!r}"


def _die_with_parent():
    """Be killed when the parent dies: nothing runs on orphaned (a
    terminal's SIGINT misses the runs' own process groups)."""
    if _prctl(PR_SET_PDEATHSIG, signal.SIGKILL) and os.getppid() == 1:
        os._exit(1)  # the parent died before prctl


# --- the sandbox -------------------------------------------------------------

# <linux/sched.h>, <linux/mount.h>
_CLONE_NEWNS, _CLONE_NEWUSER, _CLONE_NEWPID = 0x20000, 0x10000000, 0x20000000
_CLONE_NEWIPC, _CLONE_NEWNET = 0x8000000, 0x40000000
_CLONE_NEWCGROUP, _CLONE_NEWUTS = 0x2000000, 0x4000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_MOUNT_ATTR_RDONLY, _AT_RECURSIVE, _AT_FDCWD = 1, 0x8000, -100
_SYS_MOUNT_SETATTR = 442  # the same number on every architecture
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "arm64": 41}
# statvfs flag -> mount flag that must be kept on a remount in a user
# namespace (the kernel refuses to drop a locked flag).
_KEEP = {2: 2, 4: 4, 8: 8, 1024: 1024, 2048: 2048, 4096: 1 << 21}


@functools.cache  # loaded once, in the server
def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    text = ctypes.c_char_p
    libc.mount.argtypes = [text, text, text, ctypes.c_ulong, ctypes.c_void_p]
    return libc


def _check(result, what):
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source, target, fstype, flags, data=None):
    source, path, fstype, data = (
        s and os.fsencode(s) for s in (source, target, fstype, data)
    )
    result = _libc().mount(source, path, fstype, flags, data)
    _check(result, f"mount {target}")


def _set_readonly(path, readonly, recursive):
    """mount_setattr(2): set or clear read-only on the mount at ``path``
    (and every mount below it), leaving its other flags as they are."""
    attr = (ctypes.c_uint64 * 4)(
        _MOUNT_ATTR_RDONLY if readonly else 0,
        0 if readonly else _MOUNT_ATTR_RDONLY,
    )
    flags = _AT_RECURSIVE if recursive else 0
    _check(
        _libc().syscall(
            _SYS_MOUNT_SETATTR, _AT_FDCWD, os.fsencode(path), flags, attr, 32
        ),
        f"mount_setattr {path}",
    )


def _unshare(flags):
    """A new user namespace (and ``flags``) mapping our ids to
    themselves: files keep their owners."""
    uid, gid = os.getuid(), os.getgid()
    _check(_libc().unshare(_CLONE_NEWUSER | flags), "unshare")
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{uid} {uid} 1"),
        ("gid_map", f"{gid} {gid} 1"),
    ):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def _sandbox_server(root, tmp):
    """Bind-mount ``root`` read-only in a private user and mount
    namespace, locked; ``tmp`` (where runs write) must not be under it.
    The reason it cannot be done, or ""."""
    real, tmp = os.path.realpath(root), os.path.realpath(tmp)
    if tmp == real or tmp.startswith(real.rstrip(os.sep) + os.sep):
        return f"the engine's folder {tmp} is inside {real}"
    try:
        flags = os.statvfs(real).f_flag
        _unshare(_CLONE_NEWNS)
        keep = sum(m for s, m in _KEEP.items() if flags & s)
        _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
        _mount(real, real, None, _MS_BIND | _MS_REC)
        _mount(None, real, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | keep)
        _hide_the_rest(root, tmp)
        # One more user namespace locks that mount for the server too:
        # nothing it runs (a module it imports) can unmount it.
        _unshare(_CLONE_NEWNS)
    except (OSError, AttributeError) as exc:
        return str(exc) or "user namespaces unavailable"
    return ""


def _hide_the_rest(given, tmp):
    """A root of :data:`VISIBLE`, the lesson's root (``given``), ``tmp``
    and the interpreter's folders alone (bound into a tmpfs, then
    pivot_root), with what of /etc not every user may read masked. The
    audit hook sees only Python's opens: C code and programs read
    /etc/shadow and a user's files into a page, and reached sockets
    outside (an X server, a daemon)."""
    new = os.path.join(tmp, f"root-{os.getpid()}")  # one per server
    os.mkdir(new, 0o755)
    _mount("tmpfs", new, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755")
    wanted = {os.path.abspath(given), *_interpreter_folders()}
    folders = {os.path.realpath(p) for p in wanted if os.path.isdir(p)}
    bound = []
    for path in sorted({*VISIBLE, *folders}):
        if os.path.islink(path) and os.path.dirname(path) == "/":
            os.symlink(os.readlink(path), new + path)  # /bin -> usr/bin
        elif os.path.isdir(path) and not _under(path, bound):
            os.makedirs(new + path, exist_ok=True)
            _mount(path, new + path, None, _MS_BIND | _MS_REC)
            bound.append(path)
    # A folder named through a link: the link, where no bound folder is.
    for path in sorted(p for p in wanted - folders if os.path.isdir(p)):
        if not _under(path, bound) and not os.path.lexists(new + path):
            os.makedirs(os.path.dirname(new + path), exist_ok=True)
            os.symlink(os.path.realpath(path), new + path)
    # tmp holds this root: bound alone (not recursively), it shows none.
    os.makedirs(new + tmp, exist_ok=True)
    _mount(tmp, new + tmp, None, _MS_BIND)
    _mask_private(new, "/etc")
    os.chdir(new)
    machine = os.uname().machine
    if machine not in _PIVOT_ROOT:
        raise OSError(f"pivot_root: not known on {machine}")
    _check(_libc().syscall(_PIVOT_ROOT[machine], b".", b"."), "pivot_root")
    _check(_libc().umount2(b".", 2), "umount the old root")  # MNT_DETACH
    os.chdir("/")


def _interpreter_folders():
    """The folders Python, its packages (:data:`PACKAGES`) and the
    build's code come from, as named."""
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    exe = os.path.dirname(os.path.realpath(sys.executable))
    folders = {*prefixes, exe, ENGINE, *PACKAGES}
    return {os.path.abspath(p) for p in folders if p}


def _under(path, folders):
    """Whether ``path`` is one of ``folders`` or lies in one."""
    return any(
        path == f or path.startswith(f.rstrip("/") + "/") for f in folders
    )


def _mask_private(new, top):
    """Cover each file and folder under ``top`` that not every user may
    read with an empty one (the policy :func:`_record_reads` names)."""
    empty = os.path.join(new, ".empty")
    os.close(os.open(empty, os.O_CREAT | os.O_WRONLY, 0))
    for folder, dirs, files in os.walk(top):
        for name in [*dirs, *files]:
            path = os.path.join(folder, name)
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            if stat.S_ISLNK(mode) or mode & stat.S_IROTH:
                continue
            if stat.S_ISDIR(mode):
                options = "size=4k,mode=0700"
                _mount("tmpfs", new + path, "tmpfs", _MS_NOSUID, options)
                dirs.remove(name)
            else:
                _mount(empty, new + path, None, _MS_BIND)


def _sandbox_run(run_dir, tables):
    """In a fresh child of the server: everything read-only but the
    run's scratch (a new tmpfs), its tables file and a new /dev/shm, in
    a /dev of its own; then new user, mount, PID, IPC, network, UTS and
    cgroup namespaces, the user one locking those mounts. The caller
    forks the namespace's PID 1."""
    _check(_libc().unshare(_CLONE_NEWNS), "unshare")  # the server's userns
    _set_readonly("/", True, recursive=True)
    # /proc stays writable for the uid maps below (the run's own /proc,
    # mounted over it, checks its own permissions).
    _set_readonly("/proc", False, recursive=False)
    size = f"size={SCRATCH_SIZE},mode=0700"
    scratch = os.path.join(run_dir, "scratch")
    _mount("tmpfs", scratch, "tmpfs", _MS_NOSUID | _MS_NODEV, size)
    _own_dev(os.path.join(run_dir, "dev"))
    _mount("tmpfs", "/dev/shm", "tmpfs", _MS_NOSUID | _MS_NODEV, size)
    _set_readonly("/dev", True, recursive=False)
    _mount(tables, tables, None, _MS_BIND)
    _set_readonly(tables, False, recursive=False)
    # No IPC object left for a later run, no network (a loopback that is
    # down), its own host name and cgroup tree.
    flags = _CLONE_NEWNS | _CLONE_NEWPID | _CLONE_NEWIPC | _CLONE_NEWNET
    _unshare(flags | _CLONE_NEWUTS | _CLONE_NEWCGROUP)


def _own_dev(stage):
    """A /dev of the run's own (a tmpfs): :data:`DEVICES`, bound from the
    machine's through ``stage`` (an empty folder), and /dev/fd."""
    _mount("/dev", stage, None, _MS_BIND | _MS_REC)
    _mount("tmpfs", "/dev", "tmpfs", _MS_NOSUID, "size=64k,mode=0755")
    for name in DEVICES:
        if os.path.exists(os.path.join(stage, name)):
            os.close(os.open(f"/dev/{name}", os.O_CREAT | os.O_WRONLY))
            _mount(os.path.join(stage, name), f"/dev/{name}", None, _MS_BIND)
    for i, name in enumerate(("stdin", "stdout", "stderr")):
        os.symlink(f"/proc/self/fd/{i}", f"/dev/{name}")
    os.symlink("/proc/self/fd", "/dev/fd")
    os.mkdir("/dev/shm")
    _check(_libc().umount2(os.fsencode(stage), 2), f"umount {stage}")


def _enter_run_namespace():
    """PID 1 of the run's namespace: its own /proc, locked by one more
    user namespace (unmounted, it would show the machine's processes)."""
    _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    # The run is uid 0 to the kernel where the build runs as root: the
    # machine's settings (/proc/sys) would be writable through its /proc.
    for path in PROC_READ_ONLY:
        if os.path.exists(path):
            _mount(path, path, None, _MS_BIND | _MS_REC)
            _set_readonly(path, True, recursive=True)
    _unshare(_CLONE_NEWNS)


#: Limits a cgroup sets for all of a run's processes at once, and their
#: files (v1, v2): root is exempt from RLIMIT_NPROC, and RLIMIT_AS bounds
#: each process alone (four forks of 200 MiB, or memory kept in tmpfs and
#: memfds, passed a 256 MiB limit).
CGROUP_LIMITS = {
    "pids": ("processes", ("pids.max",)),
    "memory": ("memory", ("memory.limit_in_bytes", "memory.max")),
}


def make_cgroups():
    """``{controller: folder}``: a folder this process made for its runs'
    cgroups under each controller of :data:`CGROUP_LIMITS` the platform
    has (v1, or v2 with the controller delegated: one folder for both)."""
    bases = {}  # controller -> folder
    for line in _read("/proc/self/cgroup").splitlines():
        hid, names, path = line.split(":", 2)
        for controller in CGROUP_LIMITS:
            if controller in names.split(","):
                bases[controller] = f"/sys/fs/cgroup/{controller}{path}"
            elif hid == "0" and names == "" and controller not in bases:
                base = f"/sys/fs/cgroup{path}"
                control = _read(f"{base}/cgroup.subtree_control")
                if controller in control.split():
                    bases[controller] = base
    # A build killed before cleaning up leaves its folder: random letters
    # in the name never take one.
    name = cgroup_name(os.getpid())
    folders = {}
    for base in set(bases.values()):
        _sweep(base)
    for controller, base in bases.items():
        folder = os.path.join(base.rstrip("/"), name)
        try:
            _make_folder(folder, [controller])
            folders[controller] = folder
        except OSError:
            pass
    return folders


def _make_folder(folder, controllers):
    """Make this server's cgroup ``folder`` (if missing), whose runs'
    folders get ``controllers`` (v2: it has a cgroup.subtree_control)."""
    if not os.path.isdir(folder):
        os.mkdir(folder)
    control = os.path.join(folder, "cgroup.subtree_control")
    if os.path.exists(control):
        for controller in controllers:
            with open(control, "w") as f:
                f.write(f"+{controller}")


def cgroup_name(pid: int) -> str:
    """A server's cgroup folder: its PID namespace, pid, random letters.
    Other PID namespaces share the hierarchy: a sweep that judged their
    folders by a pid removed a live server's."""
    return f"lessonbuild.{_pid_namespace()}.{pid}.{os.urandom(4).hex()}"


def _pid_namespace() -> str:
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "0"


def _sweep(base):
    """Remove the (empty) cgroups of this PID namespace's servers that
    are gone, their runs' first. A folder gone meanwhile was swept by
    another server starting (two builds at once): not an error."""
    mine = f"lessonbuild.{_pid_namespace()}."
    for entry in os.listdir(base) if os.path.isdir(base) else ():
        pid = entry[len(mine) :].partition(".")[0]
        if not entry.startswith(mine) or not pid.isdigit():
            continue
        if os.path.exists(f"/proc/{pid}"):
            continue
        folder = os.path.join(base, entry)
        try:
            runs = [run.path for run in os.scandir(folder) if run.is_dir()]
        except OSError:
            continue
        for run in runs:
            _rmdir(run)
        _rmdir(folder)


def _rmdir(path):
    try:
        os.rmdir(path)
    except OSError:
        pass


def _read(path):
    """The text of ``path``, or "" if it cannot be read."""
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def _join_cgroups(name, limits):
    """Move this process into new cgroups ``<folder>/name``, each with
    its limit."""
    for folder in set(CGROUPS.values()):
        # Made again if removed under this server (idle, it is empty: any
        # root process may remove it, and each later run failed).
        if not os.path.isdir(folder):
            mine = [c for c, f in CGROUPS.items() if f == folder]
            _make_folder(folder, mine)
        os.mkdir(os.path.join(folder, name))
    for controller, folder in CGROUPS.items():
        key, files = CGROUP_LIMITS[controller]
        if not limits.get(key):
            continue
        path = os.path.join(folder, name)
        for file in files:  # the v1 name, or the v2 one
            if os.path.exists(os.path.join(path, file)):
                # + 1 process: the one that waits for the run.
                with open(os.path.join(path, file), "w") as f:
                    f.write(str(limits[key] + (key == "processes")))
                break
    for folder in set(CGROUPS.values()):
        path = os.path.join(folder, name)
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        # The run stays uid 0 to the kernel: a cgroup file system it
        # mounts itself must not let it raise its own limits.
        for entry in os.scandir(path):
            if entry.is_file():
                os.chmod(entry.path, 0o444)


def _leave_cgroups(name):
    """Remove the run's cgroups; whether it ran out of memory there."""
    memory = CGROUPS.get("memory")
    oom = bool(memory) and _oom_kills(os.path.join(memory, name)) > 0
    for folder in set(CGROUPS.values()):
        _rmdir(os.path.join(folder, name))
    return oom


def _oom_kills(path):
    """Processes the kernel killed in cgroup ``path`` for its memory
    limit (v1: memory.oom_control, v2: memory.events)."""
    for file in ("memory.oom_control", "memory.events"):
        for line in _read(os.path.join(path, file)).splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
    return 0


def _limit(limits):
    """The run's resource limits (``runner.Limits``), no_new_privs, and
    a write past the file size limit an error (EFBIG), not a signal."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    address_space = None
    if limits.get("memory"):  # beyond what the server's imports mapped
        with open("/proc/self/statm") as f:
            mapped = int(f.read().split()[0]) * resource.getpagesize()
        address_space = mapped + limits["memory"]
    for name, value in (
        ("RLIMIT_AS", address_space),
        ("RLIMIT_NPROC", limits.get("processes")),
        ("RLIMIT_FSIZE", limits.get("file_size")),
    ):
        if value:
            resource.setrlimit(getattr(resource, name), (value, value))
    _prctl(PR_SET_NO_NEW_PRIVS, 1)


def run_environment(job, scratch):
    """The whole environment of a run: the same on every machine."""
    bin_dir = os.path.dirname(sys.executable)
    return {
        "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": scratch,
        "TMPDIR": scratch,
        "LANG": "C.UTF-8",
        "TZ": "UTC",
        "MPLBACKEND": "agg",
        "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0"),
        TABLES_ENV: job["tables"],
    }


def _prctl(option, value):
    """prctl(2) (Linux); False where it is not available."""
    try:
        return _libc().prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _send(proto, message):
    proto.write(json.dumps(message) + "\n")
    proto.flush()


# --- batches -----------------------------------------------------------------


def _run_batch(proto, root, batch, threads):
    queue = list(batch["jobs"])
    limit = max(1, int(batch["concurrency"]))
    timeout = float(batch["timeout"])
    limits = batch.get("limits", {})
    running = {}  # pid -> (job, start)
    while queue or running:
        now = time.monotonic()
        busy = sum(1 for _, t in running.values() if now - t < SLOW_AFTER)
        while queue and busy < limit and len(running) < limit * SLOW_EXTRA:
            job = queue.pop(0)
            _send(proto, {"started": job["id"]})
            pid = _fork_child(root, job, threads, limits, proto.fileno())
            running[pid] = (job, time.monotonic())
            busy += 1
        time.sleep(0.005)
        for pid, (job, start) in list(running.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            timed_out = not done and time.monotonic() >= start + timeout
            if timed_out:
                status = _kill(pid)
            elif not done:
                continue
            del running[pid]
            _reap_adopted(running)
            _send(
                proto,
                {
                    "id": job["id"],
                    "exit": os.waitstatus_to_exitcode(status),
                    "timed_out": timed_out,
                    "seconds": time.monotonic() - start,
                    "memory_full": _leave_cgroups(str(job["id"])),
                },
            )


def _children(pid):
    """The pids of ``pid``'s children (its run, for a sandboxed job)."""
    text = _read(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in text.split()]


def _reap_adopted(running):
    """Kill and reap what this server adopted as subreaper that is not a
    running job: nothing may outlive a run."""
    for p in _children(os.getpid()):
        if p not in running:
            try:
                os.kill(p, signal.SIGKILL)
                os.waitpid(p, 0)
            except (ProcessLookupError, PermissionError, ChildProcessError):
                pass


def _kill(pid):
    """Dump the hung run's traceback (faulthandler), then kill it all:
    its PID namespace ends with its first process."""
    # The run is the grandchild of ``pid`` (its child is the namespace's
    # init), or ``pid`` itself without the sandbox.
    run = [r for c in _children(pid) for r in _children(c)] or [pid]
    _signal(run, signal.SIGUSR1)
    end = time.monotonic() + DUMP_GRACE
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.01)
    _signal([*_children(pid), pid], signal.SIGKILL)
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    return os.waitpid(pid, 0)[1]


def _signal(pids, sig):
    for pid in pids:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


# --- one run -----------------------------------------------------------------


def _fork_child(root, job, threads, limits, proto_fd):
    pid = os.fork()
    if pid:
        return pid
    code = 70
    try:
        try:
            os.setpgid(0, 0)  # a timeout also kills what it started
            _die_with_parent()
            os.close(proto_fd)
            scratch = os.path.join(job["dir"], "scratch")
            os.makedirs(scratch, exist_ok=True)
            os.makedirs(os.path.join(job["dir"], "dev"), exist_ok=True)
            os.close(os.open(job["tables"], os.O_WRONLY | os.O_CREAT, 0o644))
            reads = os.open(
                job["reads"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644
            )
            _redirect(job)
            if CGROUPS:
                _join_cgroups(str(job["id"]), limits)
            if not os.environ.get(NO_SANDBOX_ENV):
                _sandbox_run(job["dir"], job["tables"])
                # The timeout's traceback dump is for the run, not this.
                signal.signal(signal.SIGUSR1, signal.SIG_IGN)
                # The run records its reads into a pipe this relay copies
                # to the file: one ftruncate of the file erased them.
                drain, record = os.pipe()
                init = os.fork()
                if init:
                    os.close(record)
                    _relay_exit(init, drain, reads)
                os.close(drain)
                os.close(reads)
                reads = record
                _die_with_parent()
                _enter_run_namespace()
                # kill(0, ...) from the run must not reach the relay (in
                # the group the server's timeout kills).
                os.setsid()
                guarded, go = os.pipe()
                run = os.fork()
                if run:
                    os.close(guarded)
                    os.close(reads)  # the run's alone: its end ends it
                    _init(run, go)
                os.close(go)
                # Its parent is the namespace's init: pid 1 is no sign of
                # an orphan here, as _die_with_parent would think.
                _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
                signal.signal(signal.SIGUSR1, signal.SIG_DFL)
                # A user namespace of its own: no capability over init's.
                _unshare(0)
                os.read(guarded, 1)  # init has made itself untouchable
                os.close(guarded)
            env = run_environment(job, scratch)
            os.environ.clear()
            os.environ.update(env)
            _limit(limits)
            # A snippet gets no Unix socket; a module job does (the
            # homework's notebook kernels talk over ZMQ's ipc transport).
            if CONFINE and not job.get("module"):
                if isinstance(CONFINE[0], str):
                    raise OSError(CONFINE[0])
                CONFINE[0]()
            # tempfile read TMPDIR in the server, if it was imported.
            if "tempfile" in sys.modules:
                sys.modules["tempfile"].tempdir = scratch
            _setup_child(root, job, threads)
            # A module job is the build's own: its reads key no snippet.
            if not job.get("module"):
                _record_reads(root, reads, job["path"], scratch)
        except BaseException:
            os.write(2, traceback.format_exc().encode())
            os._exit(71)
        code = _run_snippet(job)
    finally:
        os._exit(code)


def _init(run, go):
    """PID 1 of the run's namespace: reap orphans, end as the run ended
    (the kernel then kills the rest). Not the run itself: an init ignores
    default-action signals from its namespace, and a Jupyter kernel
    checking ``getppid() == 1`` would think its parent gone. Init holds
    none of the run's limits, so it makes itself untouchable (not
    dumpable, signals left to the kernel, which drops them) before the
    run goes on (``go`` closed)."""
    _prctl(PR_SET_DUMPABLE, 0)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)
    os.close(go)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(70)
        if pid == run:
            _end_as(status)


def _relay_exit(pid, drain, out):
    """Copy the run's record of reads from ``drain`` to ``out`` until
    every writer closed it, then end as the run's init ended. The run can
    write that pipe itself (300 MiB filled /tmp): past :data:`MAX_READS`
    the rest is drained unrecorded and the run is not cached."""
    kept = 0
    while data := os.read(drain, 1 << 16):
        if kept < MAX_READS:
            data = data[: MAX_READS - kept]
            kept += len(data)
            os.write(out, data)
            if kept >= MAX_READS:
                os.write(out, b"\nX recorded more reads than can be kept\n")
    _end_as(os.waitpid(pid, 0)[1])


def _end_as(status):
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # no handler there
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _redirect(job):
    for fd, path, flags in (
        (0, os.devnull, os.O_RDONLY),
        (1, job["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, job["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        new = os.open(path, flags, 0o644)
        os.dup2(new, fd)
        os.close(new)


def _setup_child(root, job, threads):
    # Fresh streams, encoded as a standalone run's redirected ones.
    encoding, errors = sys.stdout.encoding, sys.stdout.errors

    def stream(fd, mode, **options):
        buffered = io.BufferedReader if mode == "r" else io.BufferedWriter
        raw = io.FileIO(fd, mode, closefd=False)
        return io.TextIOWrapper(buffered(raw), **options)

    sys.stdin = sys.__stdin__ = stream(0, "r")
    sys.stdout = sys.__stdout__ = stream(
        1, "w", encoding=encoding, errors=errors
    )
    sys.stderr = sys.__stderr__ = stream(
        2,
        "w",
        encoding=encoding,
        errors="backslashreplace",
        line_buffering=True,
    )
    os.chdir(root)
    if job.get("module"):  # as `python -m MODULE ARGS...` from the root
        sys.argv = [job["module"], *job.get("args", ())]
        sys.path[0] = root
    else:
        sys.argv = [job["path"]]
        sys.path[0] = os.path.dirname(job["path"])
    _ExitWork.install()
    faulthandler.enable(file=sys.stderr)
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    gc.enable()  # as in a standalone run (the server turned it off)
    torch = sys.modules.get("torch")  # absent: the standard library alone
    if torch is not None:
        torch.set_num_threads(threads)
        # The CPU generator's alone: torch.seed() visits every accelerator
        # module (2.8 ms per child).
        torch.default_generator.seed()
    # Python reseeds `random` after a fork; numpy is not reseeded.
    np_random = sys.modules.get("numpy.random")
    if np_random is not None:
        np_random.seed()


class _ExitWork:
    """The exit work of the run's own code, and only that: torch's exit
    handlers take ~40 ms after a fork, and tearing down torch tenths of a
    second. A run ends with ``os._exit`` after what its code registered
    through the public functions (replaced here), in a standalone exit's
    order: ``atexit`` (last first), ``weakref.finalize``, logging."""

    handlers = []
    finalizers = []

    @classmethod
    def install(cls):
        def register(func, *args, **kwargs):
            cls.handlers.append((func, args, kwargs))
            return func

        def unregister(func):
            cls.handlers[:] = [h for h in cls.handlers if h[0] != func]

        class finalize(weakref.finalize):
            __slots__ = ()

            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                cls.finalizers.append(self)

        atexit.register, atexit.unregister = register, unregister
        weakref.finalize = finalize

    @classmethod
    def run(cls):
        while cls.handlers:
            func, args, kwargs = cls.handlers.pop()
            _call(func, *args, **kwargs)
        for f in reversed(cls.finalizers):
            if f.alive and f.atexit:
                _call(f)
        logging = sys.modules.get("logging")
        if logging is not None:
            logging.shutdown()


def _package_folders():
    """Where the interpreter finds packages and ``mha_ref`` (an editable
    install is not on sys.path): in the cache key (cache.base_key)."""
    folders = [p for p in sys.path[1:] if p and os.path.isdir(p)]
    try:
        spec = importlib.util.find_spec("mha_ref")
        folders += list(spec.submodule_search_locations or ())
    except (ImportError, AttributeError, ValueError):
        pass
    return folders


#: Links under /proc to any folder of the machine (root, cwd, an fd).
_PROC_LINK = re.compile(
    r"/(proc/[^/]+/(task/[^/]+/)?(root|cwd|fd|map_files)|dev/fd)(/|$)"
)


def _world_readable(path: str) -> bool:
    try:
        return bool(os.stat(path).st_mode & stat.S_IROTH)
    except OSError:
        return True  # not there: nothing read


def _record_reads(root, fd, own, scratch):
    """An audit hook appending to ``fd`` a line per file the snippet
    first opens: ``R path`` under ``root`` (the cache key; ``own`` is in
    it already); ``O path`` outside the root, its scratch and the
    system's folders (an error: a build elsewhere would not have it);
    ``X why`` for a program started or C called (the run is not cached)."""
    prefix = os.path.join(os.path.realpath(root), "")
    own = os.path.abspath(own)
    folders = [scratch, *_interpreter_folders()]  # what the sandbox shows
    allowed = tuple(os.path.join(os.path.realpath(p), "") for p in folders)
    allowed += SYSTEM_FOLDERS
    seen, paths = set(), set()

    def note(line):
        if line not in seen:
            seen.add(line)
            os.write(fd, (line + "\n").encode("utf-8", "surrogateescape"))

    def hook(event, args):
        if event in UNTRACKED:
            return note("X " + UNTRACKED[event])
        if event != "open" or not args or isinstance(args[0], int):
            return
        try:
            path = os.path.abspath(os.fsdecode(args[0]))
        except (TypeError, ValueError):
            return
        if path == own or path in paths:
            return
        paths.add(path)
        # Resolved once, and checked even in an allowed folder: a link in
        # the scratch folder leads anywhere.
        real = os.path.realpath(path)
        if _PROC_LINK.match(path):  # /proc/self/root/... is /...
            path = real
        if path.startswith(prefix):
            if real.startswith(prefix) or real == prefix[:-1]:
                return note("R " + _source_of(path, prefix)[len(prefix) :])
        mode, flags = (list(args[1:3]) + [None, None])[:2]
        if (isinstance(mode, str) and set(mode) & set("wax+")) or (
            isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR)
        ):
            return  # a write: outside the scratch folder it fails anyway
        if real.startswith(CONFIG_FOLDER) and _world_readable(real):
            return
        if not real.startswith(allowed) and real + "/" not in allowed:
            note("O " + real)

    sys.addaudithook(hook)


def _source_of(path, prefix):
    """A compiled copy (``__pycache__/NAME.TAG.pyc``) as its source file
    under ``prefix``, if Python would take it for the source (its stamp
    is the source's time and size, or it is checked by hash): its header
    holds an mtime, so its hash differed between two checkouts and ``make
    site-diff``'s worktree ran every snippet again. Else the copy."""
    folder = os.path.basename(os.path.dirname(path))
    if folder != "__pycache__" or not path.endswith(".pyc"):
        return path
    try:
        source = importlib.util.source_from_cache(path)
        real, st = os.path.realpath(source), os.stat(source)
        with open(path, "rb") as f:  # (the hook has seen this path)
            head = f.read(16)
    except (ValueError, OSError):
        return path
    if not real.startswith(prefix) or len(head) < 16:
        return path
    flags = int.from_bytes(head[4:8], "little")
    stamp = [int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF]
    fields = [int.from_bytes(head[i : i + 4], "little") for i in (8, 12)]
    if flags == 0b11 or (flags == 0 and fields == stamp):
        return source
    return path


def _run_snippet(job):
    """Run the job's snippet (or module) as __main__; return the exit
    status Python would."""
    code = 0
    try:
        if job.get("module"):
            runpy.run_module(
                job["module"], run_name="__main__", alter_sys=True
            )
        else:
            runpy.run_path(job["path"], run_name="__main__")
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException as exc:
        # The traceback from the snippet's frame on, as Python prints it.
        tb, path = exc.__traceback__, job.get("path")
        while (
            path and tb is not None and tb.tb_frame.f_code.co_filename != path
        ):
            tb = tb.tb_next
        traceback.print_exception(type(exc), exc, tb)
        code = 1
    _call(_ExitWork.run)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            code = code or 120
    return code


def _call(func, *args, **kwargs):
    """Call ``func``, printing what it raises as Python's exit would."""
    try:
        func(*args, **kwargs)
    except BaseException:
        traceback.print_exc()


def _exit_code(exc):
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    print(exc.code, file=sys.stderr)
    return 1


if __name__ == "__main__":
    main()
