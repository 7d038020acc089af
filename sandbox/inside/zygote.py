"""The fork server's zygote. Runs INSIDE one long-lived bwrap sandbox and clones a child per run
into fresh namespaces, which confines itself and then runs its job with ``runner``.

Command::

    python -I -S -B <the package>/__main__.py zygote --sys-path DIR --control FD --filter FD \
        --late FD

bwrap starts the zygote as uid 0 of its user namespace with CAP_SYS_ADMIN, CAP_SETPCAP,
CAP_SETUID, CAP_SETGID and CAP_SETFCAP. It needs the first two for one thing: at start it unmounts
the read-only covers bwrap put on /proc/sys and friends (the kernel lets a child user namespace
mount a new procfs only where an uncovered one is visible); then it drops every capability,
bounding set included, before it imports anything, except the last three: with them it maps
65534 of each child's new user namespace to the run's own uid (when the grader is root, the
zygote's user namespace maps a range of unprivileged host uids, see
``sandbox/backends/unprivileged.py``), or else to its own uid 0 (the kernel allows mapping that
only with CAP_SETFCAP). no_new_privs (set by bwrap) keeps them from being regained.

The zygote imports numpy and everything the runner needs, writes ``ready`` on stdout, then serves
fork requests from the host on the ``--control`` unix socket, one per run: a JSON object
``{"uid": int}`` (the run's uid in the zygote's namespace, 1..65535; ``{}``: the zygote's own)
with two fds attached (SCM_RIGHTS): the run's socket (go-ahead and job in, result stream
out) and the write end of the run's stderr pipe. It never reads anything a child wrote: the
control socket is closed in the child right after the fork, and nothing flows from the per-run
socket to the zygote. ``--filter`` and ``--late`` are fds holding the two parts of the full
seccomp filter (BPF) every child installs: all of it but the mount rule, and the mount rule (see
``sandbox/seccomp.py``; stacked, they refuse exactly what the full filter does).

Each request becomes the run's supervisor (G), cloned by the zygote straight into fresh user,
mount, pid, net, ipc and uts namespaces (pid 1 of the new pid namespace; one fork per run, not
two: the first process of a new pid namespace must be a new process anyway). Before it reads its
job or touches any submission code,

1. the zygote writes G's uid and gid maps (setgroups denied; the run's uid, or the zygote's own,
   seen as 65534 inside), and only then lets G go on (a pipe): G takes uid 65534 there, i.e. the
   run's own host uid, so it holds no capability outside its namespaces;
2. G mounts a fresh procfs of its pid namespace on /proc with ``subset=pid`` (its processes,
   ``self`` and ``thread-self``: no host-global file) and ``hidepid=invisible`` (of those, only
   the ones a process may inspect: the worker does not see its supervisor), and an empty
   read-only /dev/pts (the zygote's devpts instance would be shared by every run), drops every
   capability but CAP_SYS_ADMIN and CAP_SETPCAP (bounding set included), sets no_new_privs and
   installs the seccomp filter but its mount rule, sends one byte on the run socket so the host
   learns its host pid (SCM_CREDENTIALS) and moves it into the run's cgroup, runs the runner's
   warm-up (``runner.warm_up``: the page faults of reading a job's header, on a made-up one),
   then waits for the go-ahead. The host may prime runs this far ahead of demand (spares):
   nothing of a submission exists yet, and most of the confinement's cost is paid before one
   does;
3. the go-ahead is ``G``, a 4-byte big-endian length and a JSON object ``{"rlimits": [[resource,
   soft, hard]], "tmpfs_bytes": int}``: G mounts a fresh tmpfs of that size on /tmp, drops its
   last two capabilities, installs the mount rule (so no mount, unshare or setns from then on) and
   applies the rlimits, and only then reads its job and runs the runner's supervisor on it,
   exactly as a cold sandbox would.

G's user namespace is owned by the zygote's uid (its creator), which no run ever has; every
process of the run runs as the run's own host uid.
"""

from __future__ import annotations

import array
import contextlib
import ctypes
import gc
import json
import os
import platform
import resource
import signal
import socket
import struct
import sys

from .fds import close_all_but
from .nochannels import fprog

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REC = 0x4000
MNT_DETACH = 2
PROC_COVERED = (b"sys", b"sysrq-trigger", b"irq", b"bus")
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_SECCOMP = 22
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2
LINUX_CAPABILITY_VERSION_3 = 0x20080522
MAX_REQUEST = 4096
GO = struct.Struct(">cI")
CAP_SETGID = 6
CAP_SETUID = 7
CAP_SETPCAP = 8
CAP_SYS_ADMIN = 21
CAP_SETFCAP = 31
# What the zygote keeps: to give each child its own uid, and to let a child that keeps uid 0
# map it in a user namespace of its own.
ZYGOTE_CAPS = frozenset({CAP_SETGID, CAP_SETUID, CAP_SETFCAP})
SANDBOX_UID = 65534  # the submission's uid and gid in its user namespace, on every backend
# What a primed run keeps until its go-ahead, dropped in this order (SETPCAP drops the others).
RUN_LATE_CAPS_ORDER = (CAP_SYS_ADMIN, CAP_SETPCAP)
RUN_LATE_CAPS = frozenset(RUN_LATE_CAPS_ORDER)
RUN_NAMESPACES = (
    CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
)
# clone(2) with no stack: a fork into new namespaces (Python has no call for it).
SYS_CLONE = {"x86_64": 56, "aarch64": 220}

_libc = ctypes.CDLL(None, use_errno=True)
# The clone runs holding the interpreter lock, as os.fork does: the child's copy of it is held.
_clone_libc = ctypes.PyDLL(None, use_errno=True)
_clone_libc.syscall.restype = ctypes.c_long


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source: bytes, target: bytes, fstype: bytes | None, flags: int, data: bytes) -> None:
    _check(_libc.mount(source, target, fstype, flags, data or None), f"mount {target!r}")


def _drop_capabilities(
    keep: frozenset[int] = frozenset(), bounded: tuple[int, ...] | None = None
) -> None:
    """Drop every capability (bounding set included) but ``keep``. ``bounded``: the only ones
    still in the bounding set (an earlier call kept them, CAP_SETPCAP among them)."""
    if bounded is not None:
        for cap in bounded:
            _check(_libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "drop a bounding capability")
    for cap in range(64) if bounded is None else ():
        if cap not in keep and _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break  # past the last capability this kernel knows
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    for cap in keep:
        data[cap // 32].effective |= 1 << (cap % 32)
        data[cap // 32].permitted |= 1 << (cap % 32)
    _check(_libc.capset(ctypes.byref(header), ctypes.byref(data)), "capset")


def _install_seccomp(bpf: bytes) -> None:
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    _buf, prog = fprog(bpf)
    _check(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0), "seccomp")


def _uncover_proc() -> None:
    """Make the sandbox's /proc fully visible, so each child may mount a fresh procfs of its own
    pid namespace (the kernel allows that only where an uncovered one exists), then drop the
    capabilities bwrap granted for this alone. A child's own /proc holds none of them."""
    for name in PROC_COVERED:
        _libc.umount2(b"/proc/" + name, MNT_DETACH)
    _drop_capabilities(keep=ZYGOTE_CAPS)
    with open("/proc/self/status") as f:
        caps = [line.split()[1] for line in f if line.startswith(("CapEff", "CapBnd"))]
    if any(int(c, 16) & ~sum(1 << cap for cap in ZYGOTE_CAPS) for c in caps):
        raise SystemExit(f"the zygote still holds capabilities: {caps}")


def _supervise(run_fd: int, err_fd: int, mapped_fd: int, bpf: tuple[bytes, bytes]) -> None:
    """G: pid 1 of the run's namespaces. Confines itself, then runs the job. Never returns."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    # The zygote lets the kernel reap its children; the runner waits for its worker.
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    # The control socket, the zygote's stdio and filter fds, whatever the host left it.
    close_all_but((run_fd, err_fd, mapped_fd))
    os.dup2(err_fd, 2)  # what goes wrong before the job runs reaches the host's diagnostics
    # Until the zygote has written our maps we run as the zygote's uid: wait for them, then take
    # 65534, the run's own host uid, before anything else.
    if os.read(mapped_fd, 1) != b"1":
        os._exit(77)
    os.close(mapped_fd)
    os.setresgid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID)
    os.setresuid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID)
    # A change of uid makes a process non-dumpable, and its /proc files root's; a run's processes
    # are dumpable as a cold run's are (the runner's supervisor makes itself not, on its own).
    _check(_libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "dumpable")
    _mount(b"none", b"/", None, MS_REC | MS_PRIVATE, b"")
    # Only the run's own processes: none of /proc's global files (meminfo, stat, vmstat, sys/...,
    # numbers other runs move) exists in it, so no kernel knob needs a read-only cover either.
    # And only those a process may inspect (hidepid): not the supervisor, which is not dumpable,
    # whose start time and sleep would tell how long the host took to prepare this run.
    _mount(
        b"proc",
        b"/proc",
        b"proc",
        MS_NOSUID | MS_NODEV | MS_NOEXEC,
        b"subset=pid,hidepid=invisible",
    )
    # The zygote's /dev/pts (one devpts instance) would be every run's: a run could open another's
    # terminal. A run gets none (a read-only empty tmpfs over it; /dev/ptmx points into it).
    _mount(
        b"tmpfs", b"/dev/pts", b"tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, b"size=4k"
    )
    with contextlib.suppress(OSError):
        socket.sethostname("sandbox")
    # All the confinement that does not wait for the job's limits, while no job exists: only
    # the /tmp mount, once its size is known, still needs CAP_SYS_ADMIN and the mount call (and
    # CAP_SETPCAP, to drop both from the bounding set then).
    early, late = bpf
    _drop_capabilities(keep=RUN_LATE_CAPS)
    _install_seccomp(early)
    run = socket.socket(fileno=run_fd)
    run.sendall(b"R")  # the host reads our pid from this message's credentials
    from . import runner

    with contextlib.suppress(Exception):  # only a head start: never a reason to fail
        runner.warm_up()  # while the host moves us into the run's cgroup and we wait
    # Moved into the run's cgroup. Anything but a go-ahead (e.g. the socket closed because the
    # host let this spare go): end here.
    head = _recv_exact(run, GO.size)
    kind, length = GO.unpack(head) if len(head) == GO.size else (b"", 0)
    if kind != b"G" or length > MAX_REQUEST:
        os._exit(75)
    settings = json.loads(_recv_exact(run, length))
    size = int(settings["tmpfs_bytes"])
    _mount(b"tmpfs", b"/tmp", b"tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=1777".encode())
    os.chdir("/tmp")
    _drop_capabilities(bounded=RUN_LATE_CAPS_ORDER)
    _install_seccomp(late)
    for which, soft, hard in settings["rlimits"]:
        resource.setrlimit(int(which), (int(soft), int(hard)))
    os.dup2(run_fd, 0)
    os.dup2(run_fd, 1)
    os.dup2(err_fd, 2)
    run.detach()
    close_all_but((), first=3)

    from . import runner

    runner.run_job(os.fdopen(0, "rb", closefd=False))
    os._exit(0)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def _clone() -> int:
    """Fork into fresh run namespaces: 0 in the child, its pid in the zygote."""
    number = SYS_CLONE.get(platform.machine())
    if number is None:
        raise OSError(f"no clone system call number known for {platform.machine()}")
    pid = int(_clone_libc.syscall(number, RUN_NAMESPACES | signal.SIGCHLD, 0, 0, 0, 0))
    if pid < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"clone: {os.strerror(err)}")
    return pid


def _map_ids(pid: int, run_uid: int | None) -> None:
    """Map 65534 in the child's new user namespace to the run's uid (or the zygote's own)."""
    uid = os.getuid() if run_uid is None else run_uid
    gid = os.getgid() if run_uid is None else run_uid
    for name, line in (
        ("setgroups", "deny"),
        ("uid_map", f"{SANDBOX_UID} {uid} 1"),
        ("gid_map", f"{SANDBOX_UID} {gid} 1"),
    ):
        with open(f"/proc/{pid}/{name}", "w") as f:
            f.write(line)


def _spawn(
    control: socket.socket, run_fd: int, err_fd: int, bpf: tuple[bytes, bytes], uid: int | None
) -> None:
    """Clone the run's supervisor into its own namespaces and give it its uid."""
    mapped_r, mapped_w = os.pipe()
    try:
        pid = _clone()
    except OSError as exc:
        os.close(mapped_r)
        os.close(mapped_w)
        with contextlib.suppress(OSError):
            os.write(err_fd, f"the fork server could not start this run: {exc}\n".encode())
        return
    if pid == 0:
        try:
            control.close()
            os.close(mapped_w)
            _supervise(run_fd, err_fd, mapped_r, bpf)
        except BaseException:
            _report()
        finally:
            os._exit(76)
    os.close(mapped_r)
    try:
        _map_ids(pid, uid)
        os.write(mapped_w, b"1")
    except OSError as exc:
        # Not mapped: the child ends at the pipe's end of file, before it runs anything.
        with contextlib.suppress(OSError):
            os.write(err_fd, f"the fork server could not map this run's uid: {exc}\n".encode())
    finally:
        os.close(mapped_w)


def _report() -> None:
    """A child that could not set itself up says why on its stderr (the host's diagnostics)."""
    import traceback

    with contextlib.suppress(BaseException):
        traceback.print_exc()
        sys.stderr.flush()


def serve(control: socket.socket, bpf: tuple[bytes, bytes]) -> None:
    # Children are reaped by the kernel: the zygote never waits on (or hears from) them.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    fds_size = socket.CMSG_SPACE(2 * array.array("i").itemsize)
    while True:
        data, ancdata, _flags, _addr = control.recvmsg(MAX_REQUEST, fds_size)
        if not data:
            return  # the host closed the control socket: shut down
        fds: list[int] = []
        for level, kind, payload in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                usable = len(payload) - len(payload) % array.array("i").itemsize
                fds.extend(array.array("i", payload[:usable]))
        try:
            request = json.loads(data)
            if not isinstance(request, dict) or len(fds) != 2:
                continue
            run_uid = request.get("uid")
            if run_uid is not None and not (isinstance(run_uid, int) and 0 < run_uid < 65536):
                continue
            _spawn(control, fds[0], fds[1], bpf, run_uid)
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)


def main(argv: list[str]) -> int:
    control_fd = filter_fd = late_fd = -1
    torch = "--preload-torch" in argv
    for i, arg in enumerate(argv[:-1]):
        if arg == "--sys-path":
            sys.path.insert(0, argv[i + 1])
        elif arg == "--control":
            control_fd = int(argv[i + 1])
        elif arg == "--filter":
            filter_fd = int(argv[i + 1])
        elif arg == "--late":
            late_fd = int(argv[i + 1])
    with os.fdopen(filter_fd, "rb") as f, os.fdopen(late_fd, "rb") as g:
        bpf = (f.read(), g.read())
    _uncover_proc()
    from . import runner

    runner.pin_login_uid()  # once: every run inherits it
    runner.one_blas_thread()
    runner.preload(torch=torch)
    import io  # noqa: F401  (everything the children use is imported once, here)
    import mmap  # noqa: F401
    import select  # noqa: F401

    control = socket.socket(fileno=control_fd)
    # Every child starts from a copy-on-write image of this process: keep the collector from
    # touching (and so copying) every object it inherits.
    gc.freeze()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    serve(control, bpf)
    return 0
