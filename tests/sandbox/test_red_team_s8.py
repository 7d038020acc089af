"""A hostile student against the fork server's cheaper confinement and the binary call frames:
the run's supervisor cloned straight into its namespaces (its user namespace owned by the
zygote's uid), the seccomp filter installed in two parts around the /tmp mount, and the ``S``/``R``
frames. Each test fails if its attack works; every probe runs as submission code through the real
fork server."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from typing import Any

import numpy as np
import pytest

from sandbox.backends.bwrap import BwrapSandbox
from sandbox.backends.forkserver import ForkServerSandbox
from sandbox.protocol import RunRequest, RunResult
from tests.sandbox.conftest import AlwaysForked
from tests.sandbox.helpers import FAST, phased_request
from tests.sandbox.test_call_frames import TOOLS

pytestmark = pytest.mark.timeout(180)


def probe(
    sandbox: AlwaysForked, body: str, name: str = "probe"
) -> tuple[dict[str, Any], RunResult]:
    """Run ``body`` (which fills the dict ``out``) in a public call; return what it printed."""
    code = (
        "import ctypes, errno, json, os, signal, struct\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "pylibc = ctypes.PyDLL(None, use_errno=True)\n"
        "def err(ret):\n"
        "    return 0 if ret == 0 else (ctypes.get_errno() if ret == -1 else ret)\n"
        "def f(a, n):\n"
        "    out = {}\n"
        + "".join(f"    {line}\n" for line in body.strip().splitlines())
        + "    print('PROBE' + json.dumps(out), flush=True)\n"
        "    return a\n"
    )
    result = sandbox.run(phased_request(code, [(name, np.ones(2), False)]))
    text = result.stdout
    assert "PROBE" in text, (result.status, result.message, result.stdout, result.stderr)
    line = next(x for x in text.splitlines() if x.startswith("PROBE"))
    return json.loads(line[len("PROBE") :]), result


STATUS = """
with open('/proc/self/status') as fh:
    for line in fh:
        key, _, value = line.partition(':')
        if key.startswith(('Cap', 'NoNewPrivs', 'Seccomp', 'Uid', 'Gid', 'Groups')):
            out[key] = value.split()
with open('/proc/self/uid_map') as fh:
    out['uid_map'] = fh.read().split()
with open('/proc/self/gid_map') as fh:
    out['gid_map'] = fh.read().split()
with open('/proc/self/setgroups') as fh:
    out['setgroups'] = fh.read().strip()
"""


def test_submission_code_holds_no_capability_and_both_filter_parts(forked: AlwaysForked) -> None:
    """The go-ahead drops CAP_SYS_ADMIN and CAP_SETPCAP and stacks the mount rule before the
    job is read: a submission sees every capability set empty (bounding and ambient too),
    no_new_privs, seccomp filtering, and its own uid mapped to one host uid, never the zygote's."""
    out, _ = probe(forked, STATUS)
    for key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(out[key][0], 16) == 0, (key, out[key])
    assert out["NoNewPrivs"] == ["1"]
    assert out["Seccomp"] == ["2"]
    assert out["Uid"] == ["65534"] * 4 and out["Gid"] == ["65534"] * 4
    assert out["setgroups"] == "deny"
    # One line, 65534 inside, one id, and the id it maps to is not uid 0 of the zygote's
    # namespace (the zygote's own uid, which owns the run's user namespace).
    assert out["uid_map"][0] == "65534" and out["uid_map"][2] == "1", out["uid_map"]
    assert out["uid_map"][1] != "0", out["uid_map"]
    assert len(out["uid_map"]) == 3 and len(out["gid_map"]) == 3


NAMESPACE_CALLS = """
EPERM = errno.EPERM
out['mount'] = err(libc.mount(b'none', b'/tmp', b'tmpfs', 0, None))
# Without the late mount rule the kernel looks the target up before it checks capabilities:
# ENOENT here would mean only the missing CAP_SYS_ADMIN stood in the way, not the filter.
out['mount_missing_target'] = err(libc.mount(b'none', b'/no/such/dir', b'tmpfs', 0, None))
os.makedirs('/tmp/m', exist_ok=True)
out['mount_sub'] = err(libc.mount(b'none', b'/tmp/m', b'tmpfs', 0, None))
out['remount_proc'] = err(libc.mount(None, b'/proc', None, 32 | 1, None))  # MS_REMOUNT|RDONLY
out['bind'] = err(libc.mount(b'/tmp', b'/tmp/m', None, 4096, None))  # MS_BIND
out['umount2'] = err(libc.umount2(b'/tmp', 2))
out['umount_proc'] = err(libc.umount2(b'/proc', 2))
for flag in (0x10000000, 0x20000, 0x20000000, 0x40000000, 0x8000000, 0x4000000, 0x2000000):
    out['unshare_%x' % flag] = err(libc.unshare(flag))
fd = os.open('/proc/self/ns/user', os.O_RDONLY)
out['setns_user'] = err(libc.setns(fd, 0))
os.close(fd)
fd = os.open('/proc/self/ns/mnt', os.O_RDONLY)
out['setns_mnt'] = err(libc.setns(fd, 0))
os.close(fd)
# The raw clone(2) with each namespace flag: 56 on x86_64, 220 on aarch64.
import platform
nr = {'x86_64': 56, 'aarch64': 220}[platform.machine()]
pylibc.syscall.restype = ctypes.c_long
for flag in (0x10000000, 0x20000, 0x20000000, 0x40000000):
    pid = pylibc.syscall(nr, flag | signal.SIGCHLD, 0, 0, 0, 0)
    if pid == 0:
        os._exit(0)
    if pid > 0:
        os.waitpid(pid, 0)
    out['clone_%x' % flag] = ctypes.get_errno() if pid < 0 else 'CLONED'
clone3 = {'x86_64': 435, 'aarch64': 435}[platform.machine()]
args = struct.pack('=11Q', 0x10000000, 0, 0, 0, signal.SIGCHLD, 0, 0, 0, 0, 0, 0)
buf = ctypes.create_string_buffer(args)
pid = pylibc.syscall(clone3, buf, len(args))
if pid == 0:
    os._exit(0)
out['clone3'] = ctypes.get_errno() if pid < 0 else 'CLONED'
for name, nr_ in (('fsopen', 430), ('open_tree', 428), ('fsmount', 432), ('move_mount', 429)):
    if name == 'fsopen':
        ret = libc.syscall(nr_, b'tmpfs', 0)
    elif name == 'open_tree':
        ret = libc.syscall(nr_, -100, b'/tmp', 1)  # OPEN_TREE_CLONE
    else:
        ret = libc.syscall(nr_, -1, 0, 0)
    out[name] = err(ret)
pivot = 155 if platform.machine() == 'x86_64' else 41
out['pivot_root'] = err(libc.syscall(pivot, b'/tmp', b'/tmp'))
out['chroot'] = err(libc.chroot(b'/tmp'))
"""


def test_no_mount_namespace_or_clone_call_is_left_to_a_submission(forked: AlwaysForked) -> None:
    """The early filter leaves ``mount`` allowed until the go-ahead: a submission's mount,
    remount, bind, umount, unshare, setns, raw clone with namespace flags, clone3 and the new
    mount API are every one refused."""
    out, _ = probe(forked, NAMESPACE_CALLS)
    assert out["mount_missing_target"] == 1, "the mount rule is not installed"
    assert out.pop("clone3") == 38  # ENOSYS: libc falls back to clone, whose flags are seen
    refused = {k: v for k, v in out.items() if v in (1, 38)}  # EPERM (or ENOSYS)
    assert refused == out, {k: v for k, v in out.items() if k not in refused}


IDENTITY_CALLS = """
out['setuid0'] = err(libc.setuid(0))
out['setresuid0'] = err(libc.setresuid(0, 0, 0))
out['setgid0'] = err(libc.setgid(0))
out['setgroups'] = err(libc.setgroups(0, None))
for name in ('uid_map', 'gid_map', 'setgroups'):
    try:
        with open('/proc/self/' + name, 'w') as fh:
            fh.write('0 0 1' if name != 'setgroups' else 'allow')
        out['write_' + name] = 'WROTE'
    except OSError as exc:
        out['write_' + name] = exc.errno
# capset: ask for CAP_SYS_ADMIN and CAP_SETPCAP back (version 3, this process).
hdr = struct.pack('=Ii', 0x20080522, 0)
data = struct.pack('=6I', 1 << 21 | 1 << 8, 1 << 21 | 1 << 8, 0, 0, 0, 0)
buf = ctypes.create_string_buffer
out['capset'] = err(libc.capset(buf(hdr), buf(data)))
out['ambient_raise'] = err(libc.prctl(47, 2, 21, 0, 0))  # PR_CAP_AMBIENT_RAISE SYS_ADMIN
out['no_new_privs_off'] = err(libc.prctl(38, 0, 0, 0, 0))
out['no_new_privs'] = libc.prctl(39, 0, 0, 0, 0)
out['securebits'] = err(libc.prctl(28, 0, 0, 0, 0))  # PR_SET_SECUREBITS
"""


def test_a_submission_cannot_take_another_identity_or_regain_capabilities(
    forked: AlwaysForked,
) -> None:
    """The run's user namespace is owned by the zygote's uid, and its maps are written by the
    zygote: a submission can neither become uid 0, change its groups, rewrite its maps, nor
    raise any capability (permitted, ambient) or clear no_new_privs."""
    out, _ = probe(forked, IDENTITY_CALLS)
    assert out.pop("no_new_privs") == 1
    assert out.pop("no_new_privs_off") != 0
    assert all(v not in (0, "WROTE") for v in out.values()), out


# Every pid a run can signal (``alive``): /proc lists only the processes it may inspect (the
# fork server's hidepid hides the supervisor, and would hide a daemon that is not dumpable).
SIGNALLABLE = """
def signallable():
    alive = []
    for pid in range(1, 5000):
        try:
            os.kill(pid, 0)
            alive.append(pid)
        except OSError:
            pass
    return alive
"""

PROCESS_CALLS = (
    SIGNALLABLE
    + """
ppid = os.getppid()
out['ppid'] = ppid
out['ptrace_attach'] = err(libc.ptrace(16, ppid, 0, 0))  # PTRACE_ATTACH the supervisor
out['ptrace_seize'] = err(libc.ptrace(0x4206, ppid, 0, 0))
vm_readv = 310 if __import__('platform').machine() == 'x86_64' else 270
out['process_vm_readv'] = err(libc.syscall(vm_readv, ppid, 0, 0, 0, 0, 0))
try:
    with open('/proc/%d/mem' % ppid, 'rb') as fh:
        out['supervisor_mem'] = 'OPENED'
except OSError as exc:
    out['supervisor_mem'] = exc.errno
try:
    out['supervisor_fds'] = os.listdir('/proc/%d/fd' % ppid)
except OSError as exc:
    out['supervisor_fds'] = exc.errno
# Every pid a run can reach: its own processes only (pid 1, its supervisor; never the zygote).
out['alive'] = signallable()
out['proc'] = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
out['fds'], out['fd_targets'] = [], []
for x in os.listdir('/proc/self/fd'):
    try:
        out['fd_targets'].append(os.readlink('/proc/self/fd/' + x))
        out['fds'].append(int(x))
    except OSError:
        pass  # the listing's own fd, closed by now
"""
)


def test_a_submission_reaches_only_its_own_run_s_processes(forked: AlwaysForked) -> None:
    """The supervisor and the worker share a uid: the worker cannot ptrace the supervisor,
    read its memory or fds, and no pid it can signal lies outside its own run (the zygote and
    other runs are in other pid namespaces)."""
    out, _ = probe(forked, PROCESS_CALLS)
    assert out["ptrace_attach"] != 0 and out["ptrace_seize"] != 0
    assert out["process_vm_readv"] != 0
    assert out["supervisor_mem"] != "OPENED"
    assert not isinstance(out["supervisor_fds"], list), out["supervisor_fds"]
    # /proc lists the processes it may inspect (hidepid): not its supervisor, pid 1.
    assert out["proc"] == [p for p in out["alive"] if p != 1], out
    assert 1 in out["alive"] and len(out["alive"]) <= 3, out["alive"]
    # 0-2, the result and acknowledgement pipes, and the listing's own fd: no socket (the run's
    # socket to the host, the zygote's control socket) and no fd of the zygote's (its filters).
    assert len(out["fds"]) <= 5, out["fd_targets"]
    assert not any(t.startswith(("socket:", "/memfd")) for t in out["fd_targets"]), out


# dtype strings numpy parses as Python literals: np.dtype raises SyntaxError on them (",", "01",
# "0)", "(,)" ... every 1-4 character one numpy does not reject with ValueError/TypeError).
BAD_DTYPE = (
    TOOLS
    + """
import json as _json


def f(a, n):
    if n == 2:  # the binary result form
        _result(1, [a * n], codes=[","])
    elif n == 3:  # the JSON one, header then blob
        meta = {"type": "case", "index": 2, "error": None, "mutated_inputs": [],
                "output": {"dtype": "01", "shape": [2]}}
        _frame(b"J", _json.dumps(meta).encode())
        _frame(b"B", (a * n).tobytes())
    return a * n
"""
)


def test_a_forged_dtype_numpy_parses_as_python_does_not_kill_the_supervisor(
    forked: AlwaysForked,
) -> None:
    """A result (binary or JSON) whose dtype string makes numpy raise SyntaxError is that
    case's InvalidOutput; the supervisor lives on and the earlier case's result stands."""
    cases = [(f"public-{i}", np.arange(2.0), False) for i in range(3)]
    result = forked.run(phased_request(BAD_DTYPE, cases))
    assert result.status == "ok", result.message
    assert [c.name for c in result.cases] == ["public-0", "public-1", "public-2"]
    np.testing.assert_array_equal(result.cases[0].output, np.arange(2.0))
    for outcome in result.cases[1:]:
        assert outcome.output is None
        assert outcome.error is not None and outcome.error.type == "InvalidOutput", outcome


LINGER = (
    """
import os, time
"""
    + SIGNALLABLE
    + """

def f(a, n):
    if n == 1:
        if os.fork() == 0:
            try:
                os.setsid()
            except OSError:  # refused by the worker's filter: stays in the session
                pass
            if os.fork() == 0:  # a daemon: reparented, in a session of its own
                for _ in range(200):
                    with open('/tmp/alive', 'a') as fh:
                        fh.write('x')
                    time.sleep(0.05)
            os._exit(0)
        time.sleep(0.2)
    print(signallable(), os.path.exists('/tmp/alive'))
    return a
"""
)


def test_a_daemon_left_by_one_run_dies_with_it_and_never_meets_the_next(
    forked: AlwaysForked,
) -> None:
    """A run double-forks a daemon into its own session that keeps writing to /tmp: when the run
    is over nothing of its pid namespace is alive, and the next run sees only its own processes
    and a /tmp of its own."""
    first = forked.run(phased_request(LINGER, [("p", np.ones(2), False)]))
    assert first.status == "ok", first.message
    assert "True" in first.stdout  # the control: the daemon was running
    assert forked.leftovers() == []
    quiet = LINGER.replace("n == 1", "n == 0")  # the same probe, without the daemon
    second = forked.run(phased_request(quiet, [("p", np.ones(2), False)]))
    assert second.status == "ok", second.message
    assert second.stdout.strip() == "[1, 2] False", second.stdout
    assert forked.leftovers() == []


def _descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{entry.name}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        for child in children.get(pid, []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


SLEEPER = """
import os, time

def f(a, n):
    if os.fork() == 0:
        try:
            os.setsid()  # out of the zygote's process group
        except OSError:  # refused by the worker's filter: stays in the session
            pass
        time.sleep(30)
        os._exit(0)
    time.sleep(30)
    return a
"""


def test_no_run_or_spare_outlives_its_zygote() -> None:
    """The run's supervisor takes its uid after it asked for SIGKILL at its parent's death, and
    a change of uid clears that request: whether anything of a run (or a waiting spare) outlives
    a zygote killed under it, processes of its own session included."""
    server = ForkServerSandbox(BwrapSandbox())
    try:
        assert server.wait_ready()
        request = phased_request(SLEEPER, [("p", np.ones(2), False)])
        outcome: list[object] = []
        thread = threading.Thread(target=lambda: outcome.append(_run_caught(server, request)))
        thread.start()
        deadline = time.monotonic() + 10
        while not server.last_host_pid and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.5)  # the worker and its session's child exist by now
        zygote = server.zygote_pid()
        assert zygote is not None
        doomed = _descendants(zygote)
        assert server.last_host_pid in doomed and len(doomed) >= 3, doomed
        os.kill(zygote, signal.SIGKILL)
        time.sleep(0.5)
        alive = [p for p in doomed if _state(p) not in ("", "Z")]  # a zombie runs nothing
        assert alive == [], alive
        # The supervisor held the only other ends of the host's streams: the host sees them end
        # at once and runs the submission again cold, where its 30 s nap is what meets the wall
        # limit (the forked run's own cut-off is no verdict; see test_forkserver.py).
        thread.join(FAST.wall_seconds + 10)
        assert not thread.is_alive()
        assert server.cold_runs == 1 and server.forked_runs == 0
        result = outcome[0]
        assert isinstance(result, RunResult) and result.status == "time_limit_exceeded", result
    finally:
        server.close()


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return ""


def _run_caught(server: ForkServerSandbox, request: RunRequest) -> object:
    try:
        return server.run(request)
    except Exception as exc:  # the run cut off by its zygote's death may say so
        return exc


# In each hidden call, binary results forged from the hidden Q: a dtype string spelt from its
# bytes (refused: an invalid output) or an empty array whose other dimension is a number taken
# from them (accepted, the wrong shape); the genuine result that follows is dropped.
FORGER = """
import gc, os, struct, sys
import numpy as np

_calls = []


def _worker():
    gc.unfreeze()
    return next(o for o in gc.get_objects() if type(o).__name__ == "Worker")


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    index = len(_calls)
    _calls.append(index)
    w = _worker()
    raw = Q.tobytes()
    if index >= PUBLIC:
        if index % 2:
            code = "".join(chr(ord("g") + b % 20) for b in raw[:4]).encode()
            head = struct.pack(">QB", index, 0) + struct.pack(">4sB", code, 1)
            payload = head + struct.pack(">Q", 1) + bytes(8)
        else:
            secret = int.from_bytes(raw[:6], "little") | 1 << 47
            head = struct.pack(">QB", index, 0) + struct.pack(">4sB", b"<f8", 2)
            payload = head + struct.pack(">2Q", 0, secret)
        os.write(w.res, struct.pack(">cQ", b"R", len(payload)) + payload)
        print("SECRET", raw.hex(), file=sys.stderr)
    return np.zeros(Q.shape)
"""


def test_hidden_inputs_forged_into_binary_results_never_reach_the_report(
    forked: AlwaysForked, mha: Any
) -> None:
    """Through the grading path on the fork server: neither the dtype strings nor the shapes
    a hidden call forges from its inputs appear anywhere in the student's report."""
    from app.grading.pipeline import grade_submission

    code = FORGER.replace("PUBLIC", str(len(mha.examples)))
    report = grade_submission(mha, code, forked.server)
    text = report.model_dump_json()
    assert mha.hidden
    for i, case in enumerate(mha.hidden, start=len(mha.examples)):
        raw = case.inputs["Q"].tobytes()
        spelt = "".join(chr(ord("g") + b % 20) for b in raw[:4])
        number = str(int.from_bytes(raw[:6], "little") | 1 << 47)
        assert spelt not in text and number not in text, (i, report.verdict)
        assert raw.hex()[:16] not in text


NAMESPACES = ("user", "mnt", "pid", "net", "ipc", "uts")
NS_PROBE = """
out.update({ns: os.readlink('/proc/self/ns/' + ns) for ns in NAMESPACES})
""".replace("NAMESPACES", repr(NAMESPACES))


def _zygote_namespaces(server: ForkServerSandbox) -> dict[str, str]:
    launcher = server.zygote_pid()
    assert launcher is not None
    for pid in sorted(_descendants(launcher)):
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            if b"zygote" in fh.read():  # the first one: the zygote itself, then its runs
                return {ns: os.readlink(f"/proc/{pid}/ns/{ns}") for ns in NAMESPACES}
    raise AssertionError("no zygote found")


def test_the_raw_clone_gives_each_run_every_namespace_of_its_own(forked: AlwaysForked) -> None:
    """The run's supervisor is cloned with the namespace flags in one raw system call: each of
    its namespaces differs from the zygote's (which every run would otherwise share) and from
    the previous run's (held open by the server until the next run, so never reused)."""
    first, _ = probe(forked, NS_PROBE)
    zygote = _zygote_namespaces(forked.server)
    second, _ = probe(forked, NS_PROBE)
    for ns in NAMESPACES:
        assert first[ns] != zygote[ns], ns
        assert second[ns] != zygote[ns], ns
    assert first["pid"] != second["pid"]


MEETING = """
import ctypes, os, socket, time

libc = ctypes.CDLL(None, use_errno=True)
KEY = 0x7E5D8


def f(a, n):
    found = []
    if n == 1:  # the first run: tries to leave a socket and a shared memory segment
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(b"\\0tj-red-s8")
            s.listen(1)
            found.append("bound")
        except OSError:
            pass
        found.append(libc.shmget(KEY, 4096, 0o1666) >= 0)  # IPC_CREAT | 0666
        time.sleep(2.0)
    else:  # the second, at the same time: looks for each
        time.sleep(0.5)
        try:
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.connect(b"\\0tj-red-s8")
            found.append("socket")
        except OSError:
            pass
        if libc.shmget(KEY, 0, 0) >= 0:
            found.append("shm")
    print("FOUND", found)
    return a
"""


def test_concurrent_runs_share_no_socket_or_ipc(forked: AlwaysForked) -> None:
    """Two runs at once: what the first binds, creates or names (an abstract unix socket, a
    System V shared memory segment) the second cannot reach, since each has its own net and
    ipc namespaces."""
    results: dict[int, RunResult] = {}

    def run(n: int) -> None:
        cases = [(f"n{n}", np.ones(2), False)]
        request = phased_request(MEETING.replace("n == 1", f"n == {n}"), cases)
        results[n] = forked.server.run(request)

    threads = [threading.Thread(target=run, args=(n,)) for n in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    first, second = results[1], results[2]
    assert first.status == "ok" and second.status == "ok", (first.message, second.message)
    # The first run was still there while the second looked; it could make neither (the
    # worker's filter refuses new sockets and shared memory: nochannels.py), and each run has
    # its own net and ipc namespaces anyway.
    assert first.cases[0].error is None and first.wall_seconds >= 2.0, first
    assert "FOUND [False]" in first.stdout, first.stdout
    assert "FOUND []" in second.stdout, second.stdout


# Empty arrays whose other dimensions no numpy array can have: the supervisor's size check
# (zero bytes for zero elements) passes them, the host's .npy reader cannot make them.
HUGE_EMPTY = (
    TOOLS
    + """
def f(a, n):
    index = n - 1
    dims = {2: (0, 2**64 - 1), 3: (0, 2**62), 4: (2**32, 2**32, 0)}.get(n)
    if dims:
        head = struct.pack(">QB", index, 0) + struct.pack(">4sB", b"<f8", len(dims))
        _frame(b"R", head + struct.pack(">%dQ" % len(dims), *dims))
    return a * n
"""
)


def test_an_empty_output_of_impossible_dimensions_is_that_case_s_invalid_output(
    forked: AlwaysForked,
) -> None:
    """Forged binary results of zero elements but dimensions past what an array can have are
    each that case's InvalidOutput; the other cases' results stand."""
    cases = [(f"public-{i}", np.arange(2.0), False) for i in range(4)]
    result = forked.run(phased_request(HUGE_EMPTY, cases))
    assert result.status == "ok", result.message
    assert [c.name for c in result.cases] == [f"public-{i}" for i in range(4)]
    np.testing.assert_array_equal(result.cases[0].output, np.arange(2.0))
    for outcome in result.cases[1:]:
        assert outcome.output is None
        assert outcome.error is not None and outcome.error.type == "InvalidOutput", outcome


RACER = """
import os, threading, time

_region = []


def _spy():
    while True:
        region = _region[0]
        os.write(1, b"SEEN " + bytes(region[:512]).hex().encode() + b"\\n")
        time.sleep(0.001)


def f(a, n):
    if not _region:
        _region.append(a.base)  # the whole shared region, seen as long as the process lives
        threading.Thread(target=_spy, daemon=True).start()
    # The spy prints through the public phase, its end, the next lay and the hidden call.
    time.sleep(0.3 if n == 1 else 0.1)
    return a * n
"""


def test_a_thread_printing_the_region_across_the_phase_switch_shows_no_hidden_byte(
    forked: AlwaysForked,
) -> None:
    """A thread prints the shared region without pause while the public call returns and the
    supervisor lays the hidden case: text is attributed by when the supervisor read it, so
    every print that could hold the hidden bytes falls in the hidden phase."""
    hidden = np.random.default_rng(81).standard_normal(16)
    limits = FAST.model_copy(update={"output_bytes": 1 << 20})
    request = phased_request(
        RACER, [("public-1", np.ones(16), False), ("hidden-1", hidden, True)], limits=limits
    )
    result = forked.run(request)
    secret = hidden.tobytes()[:32].hex()
    assert secret in result.stdout  # the control: the spy did see and print the hidden bytes
    student = [result.import_stdout, result.unfinished_stdout, result.message]
    student += [c.stdout + c.stderr for c in result.cases if c.name == "public-1"]
    assert "SEEN" in "".join(student)  # and it printed during the public phase too
    assert secret not in "".join(student)


MUTATOR = """
import numpy as np


def f(a, n):
    if n in (1, 3):
        a[-1] += 1.0  # in place: the worker's own check (shapes) sees nothing
    elif n == 2:
        a[0] += 1.0
        a[0] -= 1.0  # changed and restored: the same bytes
    return np.zeros(2)
"""


def test_an_input_changed_in_place_is_seen_on_the_binary_result_path(
    forked: AlwaysForked,
) -> None:
    """The worker sends the binary result when its own (shape) check finds no change: the
    supervisor's byte comparison still names an input changed in place, public or hidden, and
    only that one (a value changed and restored is the same bytes)."""
    cases = [("public-1", np.arange(4.0), False), ("public-2", np.arange(4.0), False)]
    cases.append(("hidden-1", np.arange(4.0) + 0.5, True))
    result = forked.run(phased_request(MUTATOR, cases))
    assert result.status == "ok", result.message
    seen = {c.name: c.mutated_inputs for c in result.cases}
    assert seen == {"public-1": ["a"], "public-2": [], "hidden-1": ["a"]}, seen


SIGNALLER = """
import os, signal


def f(a, n):
    sent = []
    for sig in (signal.SIGSTOP, signal.SIGTERM, signal.SIGINT, signal.SIGKILL):
        try:
            os.kill(os.getppid(), sig)
            sent.append(sig.name)
        except OSError as exc:
            sent.append(exc.errno)
    print("SENT", sent, os.getppid())
    return a * n
"""


def test_the_submission_cannot_stop_or_kill_its_supervisor(forked: AlwaysForked) -> None:
    """The supervisor is pid 1 of the run's pid namespace: signals its worker sends it (stop,
    terminate, kill) have no effect, and the run reports every case."""
    cases = [("public-1", np.ones(2), False), ("public-2", np.ones(2), False)]
    result = forked.run(phased_request(SIGNALLER, cases))
    assert result.status == "ok", result.message
    assert [c.name for c in result.cases] == ["public-1", "public-2"]
    assert "SENT ['SIGSTOP', 'SIGTERM', 'SIGINT', 'SIGKILL'] 1" in result.stdout, result.stdout
