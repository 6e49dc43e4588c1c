"""Keep the student's file away from the grader (Linux; stdlib only).

The grader's child runs the student's file as the same user as the
grader, and a same-user process can do anything to another: write
"PASS" lines into its stdout through ``/proc/<pid>/fd/1``, rewrite its
code with ptrace, stop it with SIGSTOP or kill it after forging a
report. So, before the child imports anything:

- it enters a user and PID namespace of its own and forks: the file then
  runs as PID 2 of a namespace where the grader has no process number
  to signal or trace (PID 1 only reaps, :func:`_reap`), and when it
  ends, whatever it started ends too (nothing is left holding the reply
  pipe);
- the process left outside waits for it and ends as it ended; it is not
  dumpable, and the file runs one user namespace further down, so it
  holds no capability to trace or write that process either;
- the grader makes itself not dumpable while it grades (grade.py);
- it writes nothing that outlives it: every mount is read-only but a new
  ``/dev/shm``, locked by the file's own user namespace (a
  file that left a ``secrets.py`` beside itself was imported by the
  *next* grader, started from that folder, and made a wrong module pass);
- its ``/dev`` holds :data:`DEVICES` alone (it wrote "PASS" lines onto
  the grader's terminal through ``/dev/pts``), its ``/proc`` shows its own
  processes, and the files it writes, its memory and its processes
  are bounded;
- it has no network (a file read its neighbours, the submissions graded
  from the same folder, and posted them to a server) and System V IPC
  of its own (shared memory it left behind stayed allocated after the
  grader ended);
- it holds no capability and may make no namespace: with either it
  mounted a tmpfs of 4 GiB, memory no limit above counts;
- it may open no Unix socket (:func:`confine`): a new network namespace
  scopes TCP and abstract sockets, not a socket file, and one on a
  read-only mount still connects (a file sent /etc/shadow to a listener
  outside; on a real machine: docker.sock, an ssh-agent, X11);
- it ends when the process that started it ends, however that ends:
  each process dies with its parent, the grader's zygote with the grader
  (a file that outlived an autograder's ``timeout 15`` ran on, and its
  watcher read its memory every 50 ms, for ever).

Where the kernel refuses (no user namespaces: another OS, or a distribution
that restricts them), the child runs as before; a step the kernel refuses
(mount_setattr before Linux 5.12, a /proc of its own inside a container
that masks /proc) is skipped, the others kept.

Called first thing in a fork of the grader's zygote (one thread, even
if torch started others in the zygote), or, in a fresh child, loaded by
path before ``mha_ref`` (whose ``__init__`` imports torch, which may
start threads: unshare refuses a threaded process).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import signal
import sys
import time

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID = 0x20000, 0x10000000, 0x20000000
CLONE_NEWNET, CLONE_NEWIPC = 0x40000000, 0x08000000
PR_SET_PDEATHSIG, PR_GET_DUMPABLE, PR_SET_DUMPABLE = 1, 3, 4
#: prctl(2): securebits NOROOT, NO_SETUID_FIXUP and KEEP_CAPS, each
#: locked (no capabilities come back through exec of any program, even
#: as uid 0); no_new_privs (nor through a setuid one).
PR_SET_SECUREBITS, SECURE_ALL, PR_SET_NO_NEW_PRIVS = 28, 0x3F, 38
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
#: mount_setattr(2): the same number on every architecture.
SYS_MOUNT_SETATTR, AT_FDCWD, AT_RECURSIVE, MOUNT_ATTR_RDONLY = (
    442,
    -100,
    0x8000,
    1,
)
#: The devices the file may open (its /dev has nothing else).
DEVICES = ("null", "zero", "full", "random", "urandom")
#: Where it may write (a new tmpfs at /dev/shm, gone when it ends).
SCRATCH_SIZE = b"size=64m,mode=1777"
#: What a /proc of its own would let uid 0 change of the machine's.
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus")
#: The most one file it writes may hold, and the memory it may map
#: beyond what it has (a tensor of 8 GiB fails with a MemoryError).
FILE_SIZE, MORE_MEMORY = 64 << 20, 8 << 30
#: The descriptors it may hold: each socket of a stream pair keeps what
#: was written to it and not read (about 200 KB at the default buffer
#: size) outside every mapping.
FILES = 1024
#: Processes and threads it may have at once, counted in its own user
#: namespace (Linux 5.14+), so not its user's others: a fork bomb stops
#: there. The kernel does not hold uid 0 of the machine to it.
TASKS = 64
#: For uid 0 (a grader run as root: a container, Colab), the bound is
#: the PID namespace's own ``pid_max`` (Linux 6.14+): a fork bomb as
#: root stops there instead of at the machine's limit, which it had used
#: up, so that nothing else on the machine could start. The kernel
#: hands out pids in turn and, once past its reserved 300, reuses only
#: those from 300 on: at 301 (the least it takes) a file that starts a
#: thread in every call had no pid left after 300 in all (a thread pool
#: per call failed a correct module: an expert's audit). TASKS more
#: than that are reused as threads end, as ``RLIMIT_NPROC`` counts them.
#: Before 6.14 that file set the machine's own limit: not written there.
RESERVED_PIDS, PER_NAMESPACE_PID_MAX = 300, (6, 14)
PIDS = RESERVED_PIDS + TASKS


@contextlib.contextmanager
def undumpable():
    """This process (the grader) not dumpable while grading: no process
    of its user without CAP_SYS_PTRACE may trace it or open its
    /proc/<pid>/fd and mem. Then as it was (a notebook's kernel)."""
    try:
        libc = ctypes.CDLL(None) if sys.platform.startswith("linux") else None
    except OSError:
        libc = None
    was = libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) if libc else -1
    if was > 0:
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    try:
        yield
    finally:
        if was > 0:
            libc.prctl(PR_SET_DUMPABLE, was, 0, 0, 0)


def _unshare(libc, flags: int, uid: int, gid: int) -> bool:
    """A new user namespace (and ``flags``) mapping our ids to
    themselves; False if the kernel refuses."""
    if libc.unshare(CLONE_NEWUSER | flags) != 0:
        return False
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{uid} {uid} 1"),
        ("gid_map", f"{gid} {gid} 1"),
    ):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)
    return True


def isolate(parent: int | None = None) -> None:
    """Continue as PID 2 of a new namespace (see above), or as we are.
    ``parent``: the process whose end ends this one (the zygote that
    forked it; by default the one this process has now, so a grader
    that ended while this interpreter started is not seen: its pipes
    are closed, and the file's import has its watchdog)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        _die_with(libc, os.getppid() if parent is None else parent)
        libc.mount.argtypes = [ctypes.c_char_p] * 3 + [
            ctypes.c_ulong,
            ctypes.c_char_p,
        ]
        uid, gid = os.getuid(), os.getgid()
        # Without a network and IPC of its own where the kernel has none
        # to give (a container may refuse them), rather than not at all.
        apart = CLONE_NEWPID | CLONE_NEWNS
        own_network = _unshare(
            libc, apart | CLONE_NEWNET | CLONE_NEWIPC, uid, gid
        )
        if not own_network:
            if not _unshare(libc, apart, uid, gid):
                # No namespace (a container's seccomp profile, a kernel
                # that restricts them): the filter needs none, and such a
                # machine is where docker.sock is likeliest to be reached.
                confine()
                return
    except (OSError, AttributeError):
        confine()
        return
    _wall_in(libc)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    proc = os.open("/proc", os.O_RDONLY | os.O_DIRECTORY)  # the machine's
    # Open while the waiting process lives: its end is seen below.
    watcher, lives = os.pipe()
    ended, report = os.pipe()  # how the file's process ended (_reap)
    pid = os.fork()
    if pid:
        os.close(watcher)
        os.close(report)
        status = watch(pid, MORE_MEMORY, proc, own_network)
        _end_as(_reported(ended, status))
    os.close(proc)
    os.close(lives)
    os.close(ended)
    # Dumpable again (this side only): the waiting process reads its
    # memory in /proc (watch); a process not dumpable is closed to it.
    libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    _own_proc(libc)
    _limit()
    # The student's side: a user and mount namespace below the waiting
    # process's, where every mount made above is locked as it is. (Its
    # id maps are written in /proc; where that /proc stayed read-only,
    # the file runs unmapped, as nobody, rather than not at all.)
    with contextlib.suppress(OSError):
        _unshare(libc, CLONE_NEWNS, uid, gid)
    _drop_capabilities(libc)
    # Killed with the waiting process: as PID 1, the namespace's every
    # process with it. (Its parent is outside the namespace: getppid()
    # is 0 either way, so the pipe tells whether it has already gone.)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    os.set_blocking(watcher, False)
    with contextlib.suppress(BlockingIOError):
        os.read(watcher, 1)  # b"": it has
        os._exit(1)
    os.close(watcher)
    confine()
    _reap(report)


def _reap(report: int) -> None:
    """Stay PID 1, reaping, and go on as PID 2, the file's process.

    PID 1 of a namespace ignores a signal that its namespace sends it
    without a handler, its own SIGKILL included: a module whose forward
    killed its own process (through ctypes, past any check in Python)
    passed every milestone, and ended its program run alone (attackers'
    audits). PID 1 writes how PID 2 ended on ``report`` and exits; the
    kernel then ends the namespace's every other process."""
    pid = os.fork()
    if pid == 0:
        os.close(report)
        return
    os.closerange(3, report)  # the grader's pipes are the file's alone
    os.closerange(report + 1, os.sysconf("SC_OPEN_MAX"))
    try:  # never returns: PID 1 must not go on into the file's code
        while (found := os.waitpid(-1, 0))[0] != pid:
            pass  # an orphan of the file's, reaped
        os.write(report, found[1].to_bytes(4, "little"))
    finally:
        os._exit(0)


def _reported(ended: int, status: int) -> int:
    """PID 2's wait status, as PID 1 wrote it, else PID 1's own (killed
    by the watcher, or ended before the file started)."""
    with contextlib.suppress(OSError):
        data = os.read(ended, 4)
        if len(data) == 4 and os.WIFEXITED(status):
            return int.from_bytes(data, "little")
    return status


def _die_with(libc, parent: int) -> None:
    """SIGKILL when ``parent`` ends (PR_SET_PDEATHSIG), or now if it
    already has (it ended before the prctl: this process was given to
    another). Credentials made since (a user namespace, capabilities
    dropped) keep the setting: none gains a capability or changes an id."""
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _call(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(libc, source, target: str, fstype, flags: int, data=None):
    source, fstype = (s and s.encode() for s in (source, fstype))
    _call(libc.mount(source, target.encode(), fstype, flags, data), target)


def _read_only(libc, path: str, on: bool, flags: int = 0) -> None:
    """Set (or clear) read-only on the mount at ``path`` (and, with
    AT_RECURSIVE, every mount below it), its other flags kept."""
    set_, clear = (MOUNT_ATTR_RDONLY, 0) if on else (0, MOUNT_ATTR_RDONLY)
    attr = (ctypes.c_uint64 * 4)(set_, clear, 0, 0)
    where = path.encode()
    _call(
        libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, where, flags, attr, 32), path
    )


def _wall_in(libc) -> None:
    """In the new mount namespace: everything read-only; a /dev of
    :data:`DEVICES` alone and a new /dev/shm, the one place it may write
    (``$TMPDIR``); /proc writable (its own replaces it, and the uid maps
    are written there)."""
    try:
        _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
        _read_only(libc, "/", True, AT_RECURSIVE)
        _read_only(libc, "/proc", False)
    except OSError:
        return  # no mount_setattr: the machine's mounts as they are
    with contextlib.suppress(OSError):
        machines = os.open("/dev", os.O_PATH | os.O_DIRECTORY)  # covered next
        _mount(libc, "tmpfs", "/dev", "tmpfs", MS_NOSUID, b"size=64k,mode=755")
        for name in DEVICES:
            device = f"/proc/self/fd/{machines}/{name}"
            if os.path.exists(device):
                os.close(os.open(f"/dev/{name}", os.O_CREAT | os.O_WRONLY))
                _mount(libc, device, f"/dev/{name}", None, MS_BIND)
        os.close(machines)
        for i, name in enumerate(("stdin", "stdout", "stderr")):
            os.symlink(f"/proc/self/fd/{i}", f"/dev/{name}")
        os.symlink("/proc/self/fd", "/dev/fd")
        os.mkdir("/dev/shm")
        flags = MS_NOSUID | MS_NODEV
        _mount(libc, "tmpfs", "/dev/shm", "tmpfs", flags, SCRATCH_SIZE)
        _read_only(libc, "/dev", True)
        # Where tempfile writes: its cached choice too, made in the
        # zygote when an import asked (torch._dynamo's does) and now
        # read-only here. (Imported here: the engine's server loads this
        # file for confine alone, and tempfile is a third of its cost.)
        import tempfile

        os.environ["TMPDIR"] = tempfile.tempdir = "/dev/shm"


def _own_proc(libc) -> None:
    """PID 1's own /proc (the grader's processes are not in it), and the
    machine's settings in it read-only. Before that, the one user
    namespace still to come (the file's own) is the last this one may
    hold: one made further down would give the file back every
    capability there."""
    with contextlib.suppress(OSError):
        _mount(libc, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    with contextlib.suppress(OSError):
        with open("/proc/sys/user/max_user_namespaces", "w") as f:
            f.write("1")
    if _kernel() >= PER_NAMESPACE_PID_MAX:
        with contextlib.suppress(OSError):
            with open("/proc/sys/kernel/pid_max", "w") as f:
                f.write(str(PIDS))
    for path in PROC_READ_ONLY:
        with contextlib.suppress(OSError):
            _mount(libc, path, path, None, MS_BIND | MS_REC)
            _read_only(libc, path, True, AT_RECURSIVE)


def _kernel() -> tuple[int, int]:
    """Linux's (major, minor) version; (0, 0) if it cannot be read."""
    numbers = os.uname().release.split("-")[0].split(".")[:2]
    try:
        return int(numbers[0]), int(numbers[1])
    except (IndexError, ValueError):
        return 0, 0


def _drop_capabilities(libc) -> None:
    """None of the capabilities a new user namespace grants (to mount,
    to make namespaces), now or after an exec."""

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):  # effective, permitted, inheritable
        _fields_ = [(n, ctypes.c_uint32) for n in ("eff", "perm", "inh")]

    libc.prctl(PR_SET_SECUREBITS, SECURE_ALL, 0, 0, 0)
    libc.capset(
        ctypes.byref(Header(_LINUX_CAPABILITY_VERSION_3, 0)), (Data * 2)()
    )
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


#: seccomp(2): prctl's option and mode, and a filter's verdicts.
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
_ALLOW, _ERRNO, _KILL = 0x7FFF0000, 0x00050000, 0x80000000
#: By machine (a 64-bit interpreter's): AUDIT_ARCH, the numbers of
#: socket, socketpair and prctl, and of add_key, request_key and keyctl.
#: io_uring_setup is 425 on both.
#: (arch, socket, socketpair, prctl, the keyrings' three calls and
#: seccomp, memfd_create, memfd_secret, shmget, msgget, vmsplice and
#: splice, and setsockopt).
SYSCALLS = {
    "x86_64": (
        0xC000003E, 41, 53, 157, (248, 249, 250, 317),
        (319, 447, 29, 68, 278, 275), 54,
    ),
    "aarch64": (
        0xC00000B7, 198, 199, 167, (217, 218, 219, 277),
        (279, 447, 194, 186, 75, 76), 208,
    ),
}  # fmt: skip
#: setsockopt(2) at SOL_SOCKET: the options that grow a socket's buffers
#: (SO_SNDBUF, SO_RCVBUF and their FORCE forms), and those that attach a
#: BPF program to it (SO_ATTACH_FILTER, SO_ATTACH_BPF and the two
#: SO_ATTACH_REUSEPORT_ forms).
SOL_SOCKET, SOCKET_BUFFERS = 1, (7, 8, 32, 33, 26, 50, 51, 52)
#: prctl(2): a seccomp filter of the file's own (PR_SET_SECCOMP).
PR_SET_SECCOMP_OPTION = 22
IO_URING_SETUP, X32_SYSCALL_BIT = 425, 0x40000000
AF_UNIX = 1
SOCK_STREAM, SOCK_SEQPACKET = 1, 5


def confine() -> bool:
    """A seccomp filter on this process and all it starts (execs too):
    ``socket()`` of any family fails with EACCES. The network namespace
    scopes TCP and abstract Unix sockets, not a socket file, and one on
    a read-only mount still connects: a file sent /etc/shadow to a
    listener outside (docker.sock, an ssh-agent, X11 on a real machine).
    ``AF_VSOCK`` too (a VM's channel to its host, which no network
    namespace scopes either). And a socket of a family that reaches
    nothing there (``AF_INET`` with its loopback down) still holds what
    the kernel keeps for it: up to ``optmem_max`` (128 KB) of option
    memory each, in no mapping (TCP_MD5SIG keys, IP options): 300
    sockets in each of two forks held 110 MB of the kernel's
    unreclaimable memory, none of it counted, beside a module that
    passed 7 of 7, about 190 MB a process at :data:`FILES` descriptors
    and 12 GB in the :data:`TASKS` of them (an attacker's audit). Also
    refused, each a way around that:

    - ``socketpair()`` of ``AF_UNIX`` but a connected stream or
      seqpacket pair (those reach only each other; a datagram one may
      ``sendto`` any socket file);
    - ``io_uring_setup`` (ENOSYS: its operations, a socket's included,
      never pass through the filter);
    - the kernel's keyrings (``add_key``, ``request_key``, ``keyctl``):
      no namespace scopes the caller's session keyring, and a graded
      file left a key there that the next file graded from the same
      shell read (a channel between submissions; the user's key quota);
    - ``socket()`` of ``AF_NETLINK`` (EACCES): one netlink socket may
      send to another, and what each received and nobody read sits in
      its buffer, about 200 KB a descriptor in no mapping, which the
      watcher does not count as it counts Unix sockets' (an attacker's
      audit);
    - ``prctl(PR_SET_PDEATHSIG)`` to other than SIGKILL: PID 1 of the
      grader's child would outlive its watcher (:func:`isolate`);
    - a BPF program of the file's own (EACCES): one attached to a
      socket of the pair it may make (``SO_ATTACH_FILTER`` and the
      like) is copied, converted and compiled by the kernel, up to about
      300 KB a socket in no mapping (1,000 sockets took 293 MB of the
      machine's available memory), and so is each seccomp filter it
      stacks on its own (``seccomp``, ``prctl(PR_SET_SECCOMP)``), about
      25 MB a process (an attacker's audit);
    - a system call of another ABI (x32: ENOSYS; i386's ``int 0x80``,
      whose numbers differ: the process is killed);
    - memory no mapping holds (ENOSYS): a file in memory
      (``memfd_create``, ``memfd_secret``) written with ``os.write``, or
      a System V segment filled and detached, or a System V message
      queue filled (``msgget``), is counted by neither the address-space
      limit nor the watcher's sum of what the process maps: a file held
      2 GB in 32 such files and passed every milestone, and the open-file
      limit allowed a terabyte (an attacker's audit); nor pages handed to
      a pipe by reference (``vmsplice``, ``splice``): a pipe keeps each
      page it was given, and one 4 KB page of a transparent huge page
      keeps all 2 MB of it, after munmap: 32 pipes held 1 GB beside a
      module that passed 7 of 7, 16 GB a process at the open-file limit
      (an attacker's audit; what ``write`` puts in a pipe is bounded by
      the kernel's per-user pipe pages);
    - ``setsockopt`` of a socket's buffer sizes (EACCES): data written
      into a stream socketpair and never read sits in the kernel, seen
      by no limit either; with ``SO_SNDBUF`` at the machine's
      ``wmem_max`` 540 pairs held 7.7 GiB, none of it counted, and
      passed every milestone (an attacker's audit). At the default
      size a process with :data:`FILES` descriptors holds about 230 MB;
      what they hold together counts in the watcher's budget
      (:func:`socket_bytes`).

    Everything else is allowed: the grader's pipes, torch, a snippet's
    ``multiprocessing`` Pipe, Pool and Queue of plain objects (a stream
    pair). Refused with it, each needing a Unix socket or another death
    signal: multiprocessing's Manager and forkserver (Python 3.14's
    default start method), tensors sent through a Queue and
    ``DataLoader(num_workers>0)`` (torch shares their memory over a
    socket), ``torch.multiprocessing.spawn`` (PR_SET_PDEATHSIG to
    SIGINT), ZMQ's ipc transport (the engine's notebook kernels: that
    job gets no filter, server.py). No snippet of the lesson uses them.

    Needs one thread (a filter binds the calling thread and those it
    starts); sets no_new_privs, as a filter requires. False, and
    nothing done, where it cannot be: not Linux, a machine other than
    x86_64 or aarch64 (numbers not known here: there the network
    namespace and the read-only mounts remain), or a kernel without
    seccomp filters, as other steps the kernel refuses are skipped.
    """
    numbers = SYSCALLS.get(os.uname().machine)
    if not sys.platform.startswith("linux") or not numbers:
        return False
    if sys.maxsize < 1 << 32:  # a 32-bit interpreter: another ABI
        return False
    rows = _filter(*numbers)

    class Row(ctypes.Structure):  # struct sock_filter
        _fields_ = [
            ("code", ctypes.c_uint16),
            ("jt", ctypes.c_uint8),
            ("jf", ctypes.c_uint8),
            ("k", ctypes.c_uint32),
        ]

    class Program(ctypes.Structure):  # struct sock_fprog
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Row))]

    table = (Row * len(rows))(*(Row(*row) for row in rows))
    program = Program(len(rows), table)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return False
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    mode = (PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(program))
    return libc.prctl(*mode, 0, 0) == 0


def _filter(
    arch: int,
    socket: int,
    socketpair: int,
    prctl: int,
    keys: tuple,
    unmapped: tuple,
    setsockopt: int,
) -> list:
    """:func:`confine`'s classic BPF program, as (code, jt, jf, k) rows.
    It reads ``struct seccomp_data``: nr at 0, arch at 4, args[i] at
    16 + 8 i (the low half on these little-endian machines: the kernel
    takes each of these arguments as an int)."""
    ld, jeq, jge, and_, ret = 0x20, 0x15, 0x35, 0x54, 0x06
    deny, nosys = _ERRNO | errno.EACCES, _ERRNO | errno.ENOSYS
    program = [
        (ld, 0, 0, 4),  # arch
        (jeq, 0, "kill", arch),
        (ld, 0, 0, 0),  # nr
        (jge, "nosys", 0, X32_SYSCALL_BIT),
        (jeq, "nosys", 0, IO_URING_SETUP),
        *((jeq, "nosys", 0, call) for call in unmapped),
        *((jeq, "deny", 0, key) for key in keys),
        (jeq, "socket", 0, socket),
        (jeq, "pair", 0, socketpair),
        (jeq, "sockopt", 0, setsockopt),
        (jeq, 0, "allow", prctl),
        (ld, 0, 0, 16),  # its option
        (jeq, "deny", 0, PR_SET_SECCOMP_OPTION),
        (jeq, 0, "allow", PR_SET_PDEATHSIG),
        (ld, 0, 0, 24),  # the signal
        (jeq, "allow", "deny", signal.SIGKILL),
        "socket",  # of any family (AF_UNIX, AF_NETLINK, AF_VSOCK, AF_INET...)
        (ret, 0, 0, deny),
        "pair",
        (ld, 0, 0, 16),
        (jeq, 0, "allow", AF_UNIX),
        (ld, 0, 0, 24),  # the type, less SOCK_NONBLOCK and SOCK_CLOEXEC
        (and_, 0, 0, 0xF),
        (jeq, "allow", 0, SOCK_STREAM),
        (jeq, "allow", "deny", SOCK_SEQPACKET),
        "sockopt",
        (ld, 0, 0, 24),  # the level
        (jeq, 0, "allow", SOL_SOCKET),
        (ld, 0, 0, 32),  # the option
        *((jeq, "deny", 0, option) for option in SOCKET_BUFFERS),
        (ret, 0, 0, _ALLOW),
        "allow",
        (ret, 0, 0, _ALLOW),
        "deny",
        (ret, 0, 0, deny),
        "nosys",
        (ret, 0, 0, nosys),
        "kill",
        (ret, 0, 0, _KILL),
    ]
    at, rows = {}, []
    for row in program:
        if isinstance(row, str):
            at[row] = len(rows)
        else:
            rows.append(row)

    def to(target, i: int) -> int:  # a jump counts the rows it skips
        return at[target] - i - 1 if isinstance(target, str) else target

    return [(c, to(t, i), to(f, i), k) for i, (c, t, f, k) in enumerate(rows)]


def _limit() -> None:
    """The files it writes, its memory (beyond what it has mapped: torch,
    in a fork of the zygote), its processes, no core files."""
    import resource

    with open("/proc/self/status") as f:
        sizes = [line.split()[1] for line in f if line.startswith("VmSize:")]
    mapped = int(sizes[0]) << 10 if sizes else 0
    for which, most in (
        (resource.RLIMIT_FSIZE, FILE_SIZE),
        (resource.RLIMIT_AS, mapped + MORE_MEMORY),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NPROC, TASKS),
        (resource.RLIMIT_NOFILE, FILES),
    ):
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(which, (most, most))


#: Seconds between two sums of the file's processes' memory.
WATCH_S = 0.05


def watch(pid: int, budget: int, proc: int, sockets: bool = False) -> int:
    """Wait for ``pid`` (the file's first process) and return its status;
    kill it and every process under it once together they hold more
    than ``budget`` bytes. ``RLIMIT_AS`` bounds each process alone:
    four forks of 400 MiB held 1.6 GB together, and as many forks of the
    8 GiB each may map would have taken the machine (an attacker's
    review). Proportional set sizes,
    so that the torch pages a fork shares count once. ``proc``: a
    descriptor of a /proc that shows them (the file mounts its own over
    the one this process sees by name). ``sockets``: the network
    namespace is the file's own, and what its Unix sockets hold counts
    too (:func:`socket_bytes`)."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        tree = _tree(pid, proc)
        held = _memory(tree, proc) + (socket_bytes() if sockets else 0)
        if held > budget:
            os.write(
                2,
                (
                    f"\nthe processes your file started held more than "
                    f"{budget >> 20} MiB together: all of them stopped\n"
                ).encode(),
            )
            for each in reversed(tree):
                with contextlib.suppress(OSError):
                    os.kill(each, 9)  # SIGKILL
            return os.waitpid(pid, 0)[1]
        time.sleep(WATCH_S)


def _tree(pid: int, proc: int) -> list[int]:
    """``pid`` and every process under it (each thread's children)."""
    found, i = [pid], 0
    while i < len(found):
        with contextlib.suppress(OSError, ValueError):
            fd = os.open(f"{found[i]}/task", os.O_RDONLY, dir_fd=proc)
            try:
                tasks = os.listdir(fd)
            finally:
                os.close(fd)
            for task in tasks:
                text = _read(f"{found[i]}/task/{task}/children", proc)
                found += [int(c) for c in text.split()]
        i += 1
    return found


def _read(path: str, proc: int) -> str:
    with os.fdopen(os.open(path, os.O_RDONLY, dir_fd=proc)) as f:
        return f.read()


def _memory(pids: list[int], proc: int) -> int:
    """Bytes the processes hold (their Pss: shared pages split)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError, ValueError):
            for line in _read(f"{pid}/smaps_rollup", proc).splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) << 10
                    break
    return total


#: sock_diag(7): the request for every Unix socket of this network
#: namespace with its memory (UDIAG_SHOW_MEMINFO), and where that is.
_NETLINK_SOCK_DIAG, _SOCK_DIAG_BY_FAMILY, _NLM_DUMP_REQUEST = 4, 20, 0x301
_UDIAG_SHOW_MEMINFO, _UNIX_DIAG_MEMINFO = 0x20, 5
_NLMSG_ERROR, _NLMSG_DONE = 2, 3


def socket_bytes() -> int:
    """Bytes that the Unix sockets of this network namespace hold in the
    kernel: data written and not read sits there, in no process's
    mapping. The file's namespace holds its sockets alone; each of its
    processes may have FILES descriptors, and 12 forks held 2.7 GiB in
    socketpairs at the default buffer size, the TASKS of them about
    14 GiB, none of it counted (an attacker's audit). 0 if the kernel
    does not say (no sock_diag for Unix sockets)."""
    import socket
    import struct

    request = struct.pack(
        "=BBHIIIII", socket.AF_UNIX, 0, 0, 0xFFFFFFFF, 0,
        _UDIAG_SHOW_MEMINFO, 0xFFFFFFFF, 0xFFFFFFFF,
    )  # fmt: skip
    header = struct.pack(
        "=IHHII", 16 + len(request), _SOCK_DIAG_BY_FAMILY,
        _NLM_DUMP_REQUEST, 1, 0,
    )  # fmt: skip
    total = 0
    try:
        with socket.socket(
            socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG
        ) as diag:
            diag.send(header + request)
            while data := diag.recv(1 << 16):
                at = 0
                while at + 16 <= len(data):
                    length, kind = struct.unpack_from("=IH", data, at)
                    if kind in (_NLMSG_DONE, _NLMSG_ERROR) or length < 16:
                        return total
                    # Its attributes, after the header and unix_diag_msg.
                    attribute, end = at + 32, at + length
                    while attribute + 4 <= end:
                        size, name = struct.unpack_from("=HH", data, attribute)
                        if size < 4:
                            break
                        if name == _UNIX_DIAG_MEMINFO and size >= 4 + 4 * 9:
                            # sk_meminfo: rmem_alloc, rcvbuf, wmem_alloc,
                            # sndbuf, fwd_alloc, wmem_queued, optmem,
                            # backlog, drops
                            info = struct.unpack_from(
                                "=9I", data, attribute + 4
                            )
                            total += info[0] + info[2] + info[5] + info[7]
                        attribute += (size + 3) & ~3
                    at += (length + 3) & ~3
    except OSError:
        pass
    return total


def _end_as(status: int) -> None:
    """Exit as the child did: its code, or its signal."""
    if os.WIFSIGNALED(status):
        import signal

        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # no handler there
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
