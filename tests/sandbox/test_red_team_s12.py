"""Session 12's red team, against the worker's filter (``sandbox/inside/nochannels.py``): a hostile
submission looking for a host-wide counter it can still move and another run can still read, on
every backend. Each channel is a real sender and receiver.

Two were open, both closed here:

- **Scheduler autogroups.** Every ``setsid`` makes a new autogroup, numbered by one host-wide
  counter with no batching (``autogroup_seq_nr``), shown in ``/proc/self/autogroup``. A sender
  started ~8 000 sessions a second (``os.posix_spawn(..., setsid=True)`` of a missing file: the
  child's ``setsid`` happens before its ``execve`` fails); a receiver forked a child that called
  ``setsid`` and read its number. Closed: the worker's filter refuses ``setsid``.
- **Audit session ids.** A task whose audit login uid is unset (every run's, on a host whose
  grader or engine was not started from a login) may set it once without privilege, and each such
  write takes the next audit session id, one host-wide counter shown in ``/proc/self/sessionid``
  (no batching, and nothing else on such a host moves it: the figures below have no noise but the
  schedule's). A sender made itself dumpable again (``prctl(PR_SET_DUMPABLE, 1)``: a non-dumpable
  task's ``/proc/self`` files are root's) and wrote ``/proc/thread-self/loginuid`` from new
  threads, ~8 000 a second; a receiver did it once per sample. Closed: the runner sets its own
  login uid before any job (``runner.pin_login_uid``; the fork server's zygote once for all its
  runs), so a run's processes have it set and changing it takes the host's CAP_AUDIT_CONTROL.

Attacks that held are listed in docs/sandbox-isolation.md ("Checked and found closed") and in the
report of this session; the ones that needed a test of their own are at the end of this file.
"""

from __future__ import annotations

import secrets

import pytest

from sandbox.protocol import Sandbox
from tests.sandbox.helpers import (
    assert_grader_still_works,
    at_a_common_start,
    in_time,
    report,
    run,
    side_by_side,
    unwrapped,
)
from tests.sandbox.test_allocator_channels import CHANNEL_LIMITS

pytestmark = pytest.mark.timeout(180)

EPERM, EACCES = 1, 13

# How each counter is moved and read, by a submission that uses no refused call but the one under
# attack. ``move()`` takes one number of the counter; ``read()`` takes one and returns it (after
# the fix: the run's own number, which the sender cannot move). Both answer, as "refused", what
# the kernel said when the move itself was refused.
COUNTERS = r"""
import ctypes, json, os, threading, time

libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: our /proc/self files are ours again
REFUSED = {"autogroup": [], "session": []}

def _number(path):
    with open(path) as fh:
        text = fh.read()
    return int(text.split()[0].rsplit("-", 1)[-1])  # "/autogroup-N nice 0" or "N"

def move_autogroup():
    # The child's setsid happens before its execve fails: no executable needed.
    try:
        os.posix_spawn("/nonexistent-tj", ["x"], {}, setsid=True)
    except FileNotFoundError:
        pass
    except OSError as exc:
        REFUSED["autogroup"].append(exc.errno)

def read_autogroup():
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
        except OSError:
            pass
        with open("/tmp/autogroup", "w") as fh:
            fh.write(str(_number("/proc/self/autogroup")))
        os._exit(0)
    os.waitpid(pid, 0)
    with open("/tmp/autogroup") as fh:
        return int(fh.read())

def _session(out):
    try:
        with open("/proc/thread-self/loginuid", "w") as fh:
            fh.write(str(os.getuid()))
    except OSError as exc:
        REFUSED["session"].append(exc.errno)
    out.append(_number("/proc/thread-self/sessionid"))

def move_session():
    t = threading.Thread(target=_session, args=([],))
    t.start()
    t.join()

def read_session():
    out = []
    t = threading.Thread(target=_session, args=(out,))
    t.start()
    t.join()
    return out[0]

MOVE = {"autogroup": move_autogroup, "session": move_session}
READ = {"autogroup": read_autogroup, "session": read_session}
"""

READER = (
    COUNTERS
    + """
def f(a, n):
    print(json.dumps({name: READ[name]() for name in READ}))
    return a
"""
)

SENDER = """
MOVES = {moves}

def f(a, n):
    for name in MOVE:
        for _ in range(MOVES):
            MOVE[name]()
    print(json.dumps({{name: sorted(set(errnos)) for name, errnos in REFUSED.items()}}))
    return a
"""

MOVES = 800


def test_a_run_moves_no_session_counter_a_later_run_reads(sandbox: Sandbox) -> None:
    """A reader, a sender that takes 800 numbers of each counter, a reader, one after the other:
    the readers' numbers moved by ~800 (+ the host's few new sessions) before; now the sender's
    calls are refused and the readers see only the runs the host started in between."""
    before = report(run(sandbox, READER))
    refused = report(run(sandbox, COUNTERS + SENDER.format(moves=MOVES)))
    after = report(run(sandbox, READER))
    moved = {name: int(after[name]) - int(before[name]) for name in before}  # type: ignore[call-overload]
    print("moved", moved, "refused", refused)
    # Each reader takes a number itself before the fix (2), the host starts a few sessions of
    # its own meanwhile (cold bwrap and docker runs: one or two each); 800 is the sender's.
    assert all(m < MOVES // 2 for m in moved.values()), (moved, refused)
    # setsid: EPERM (the filter); loginuid: EACCES (root's file: the worker stays not dumpable)
    assert refused == {"autogroup": [EPERM], "session": [EACCES]}, refused
    assert_grader_still_works(sandbox)


# The concurrent channel: in each slot of SLOT seconds the sender takes v * STEP numbers of the
# counter for a random 4-bit v; the receiver reads it just before each slot's end and decodes v
# from the difference (less its own read), rounded to steps (the host's own new sessions are a
# few a slot). 20 symbols: 80 bits in 2 s.
CONCURRENT_SENDER = """
T0, SLOT, VALUES, NAME, STEP = {t0!r}, {slot!r}, {values!r}, {name!r}, {step!r}

def f(a, n):
    late = time.time() - T0
    for i, v in enumerate(VALUES):
        while time.time() < T0 + (i + 1) * SLOT:
            time.sleep(0.0005)
        for _ in range(v * STEP):
            MOVE[NAME]()
    print(json.dumps({{"late": late}}))
    return a
"""

CONCURRENT_RECEIVER = """
T0, SLOT, N, NAME = {t0!r}, {slot!r}, {n!r}, {name!r}

def f(a, n):
    late = time.time() - T0
    got = []
    for i in range(N + 2):
        while time.time() < T0 + (i + 1) * SLOT - SLOT * 0.02:
            time.sleep(0.0005)
        got.append(READ[NAME]())
    print(json.dumps({{"late": late, "got": got}}))
    return a
"""

SYMBOLS = 20
SLOT = 0.1
STEP = 4


@pytest.mark.slow
@pytest.mark.parametrize("counter", ["autogroup", "session"])
def test_session_counters_carry_nothing_between_concurrent_runs(
    sandbox: Sandbox, counter: str
) -> None:
    values = [secrets.randbelow(16) for _ in range(SYMBOLS)]

    def attempt(t0: float) -> dict[str, object]:
        codes = {
            "sender": COUNTERS
            + CONCURRENT_SENDER.format(t0=t0, slot=SLOT, values=values, name=counter, step=STEP),
            "receiver": COUNTERS
            + CONCURRENT_RECEIVER.format(t0=t0, slot=SLOT, n=SYMBOLS, name=counter),
        }
        results = side_by_side(sandbox, codes, CHANNEL_LIMITS)
        sent = report(results["sender"])
        got = report(results["receiver"])
        in_time(sent["late"], "sender")
        in_time(got["late"], "receiver")
        return got

    got = at_a_common_start(sandbox, attempt)
    numbers: list[int] = got["got"]  # type: ignore[assignment]
    diffs = [round((numbers[i + 1] - numbers[i] - 1) / STEP) for i in range(len(numbers) - 1)]
    right = max(sum(d == v for d, v in zip(diffs[s:], values, strict=False)) for s in (0, 1))
    print(counter, "symbols right", right, "of", SYMBOLS, "sent", values, "diffs", diffs)
    # At chance ~1 in 16 of 4-bit symbols; 10 of 20 right by chance has probability ~1e-7.
    # Before: 16-20 of 20 (session), 8-16 (autogroup, with the host's own sessions as noise).
    assert right < SYMBOLS // 2, (right, values, diffs)
    assert_grader_still_works(unwrapped(sandbox))


# The shared nice: a run that made itself dumpable again (``prctl`` or ``execve``) owns its
# ``/proc/self/autogroup`` and may set the autogroup's nice value, 0-19, which on the fork server
# every run shares (the zygote's session): a register. In each slot the sender writes a 4-bit
# value, the receiver reads it in the slot's middle (slots > 0.1 s: the kernel lets the host make
# one such write per 0.1 s, itself a clock every run could probe by writing).
NICE_SENDER = """
import ctypes, json, time

libc = ctypes.CDLL(None, use_errno=True)
T0, SLOT, VALUES = {t0!r}, {slot!r}, {values!r}

def f(a, n):
    dumpable = libc.prctl(4, 1, 0, 0, 0)
    errors = []
    for i, v in enumerate(VALUES):
        while time.time() < T0 + i * SLOT:
            time.sleep(0.001)
        try:
            with open("/proc/self/autogroup", "w") as fh:
                fh.write(str(v))
        except OSError as exc:
            errors.append(exc.errno)
    print(json.dumps({{"late": time.time() - T0 - len(VALUES) * SLOT, "dumpable": dumpable,
                      "errors": sorted(set(errors))}}))
    return a
"""

NICE_RECEIVER = """
import json, time

T0, SLOT, N = {t0!r}, {slot!r}, {n!r}

def f(a, n):
    late = time.time() - T0
    got = []
    for i in range(N):
        while time.time() < T0 + (i + 0.5) * SLOT:
            time.sleep(0.001)
        with open("/proc/self/autogroup") as fh:
            got.append(int(fh.read().split()[-1]))
    print(json.dumps({{"late": late, "got": got}}))
    return a
"""

NICE_SLOTS = 8
NICE_SLOT = 0.25


def test_no_run_sets_a_nice_value_another_run_reads(sandbox: Sandbox) -> None:
    """Before: 8 of 8 values read on the fork server (elsewhere each run has a session of its
    own, so the receiver read 0); now the sender cannot make itself dumpable and the write
    is refused."""
    values = [1 + secrets.randbelow(19) for _ in range(NICE_SLOTS)]

    def attempt(t0: float) -> tuple[dict[str, object], dict[str, object]]:
        codes = {
            "sender": NICE_SENDER.format(t0=t0, slot=NICE_SLOT, values=values),
            "receiver": NICE_RECEIVER.format(t0=t0, slot=NICE_SLOT, n=NICE_SLOTS),
        }
        results = side_by_side(sandbox, codes, CHANNEL_LIMITS)
        got = report(results["receiver"])
        in_time(got["late"], "receiver")
        return report(results["sender"]), got

    sent, got = at_a_common_start(sandbox, attempt)
    right = sum(g == v for g, v in zip(got["got"], values, strict=True))  # type: ignore[call-overload]
    print("nice values right", right, "of", NICE_SLOTS, "sent", values, "got", got, sent)
    assert right < NICE_SLOTS // 2, (values, got, sent)
    assert sent["dumpable"] == -1 and sent["errors"] == [EACCES], sent  # a root-owned file
    assert_grader_still_works(unwrapped(sandbox))


# Queued signals: every run may have 256 pending (RLIMIT_SIGPENDING), and every fork-server run
# is also charged, at the top of its user namespaces, to the count of the zygote's uid, capped by
# the zygote's own limit when it made the run's namespace. A sender queues as many real-time
# signals to itself as it may (blocked) and holds them; a receiver, started while it holds them,
# counts how many it may queue. Before: the zygote's limit was one run's 256, so the receiver
# could queue 0 of 256 on the fork server (a register: the sender holding k left 256 - k).
SIGNALS = """
import ctypes, json, os, signal, time

libc = ctypes.CDLL(None, use_errno=True)
HOLD = {hold!r}

def f(a, n):
    time.sleep({wait!r})
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
    info = (ctypes.c_int * 32)(int(signal.SIGRTMIN), 0, -1)  # si_code < 0: from userspace
    queued = 0
    while queued < 1024 and libc.syscall(129, os.getpid(), int(signal.SIGRTMIN), info) == 0:
        queued += 1
    time.sleep(HOLD)
    print(json.dumps({{"queued": queued}}))
    return a
"""


def test_no_run_takes_another_runs_pending_signals(sandbox: Sandbox) -> None:
    codes = {
        "sender": SIGNALS.format(hold=3.0, wait=0.0),
        "receiver": SIGNALS.format(hold=0.0, wait=1.5),
    }
    results = side_by_side(sandbox, codes, CHANNEL_LIMITS)
    sent, got = report(results["sender"]), report(results["receiver"])
    print("queued", sent, got)
    # Each its own full share: 256 on bwrap; docker runs keep the engine's limit (each run a host
    # uid of its own), so both reach this probe's own cap of 1024.
    assert got == sent and int(sent["queued"]) >= 256, (sent, got)  # type: ignore[call-overload]
    assert_grader_still_works(unwrapped(sandbox))


# What held, kept as tests because each is one line away from breaking: the filter is on every
# thread the worker has, execve is refused (it would make the process dumpable again), and the
# odd ways to a refused call or a shared mapping are refused.
HELD = r"""
import ctypes, json, os, sys, threading

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
FDS = (ctypes.c_int * 2)()

def call(nr, *args):
    ctypes.set_errno(0)
    ret = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return 0 if ret >= 0 else ctypes.get_errno()

def filters(path):
    with open(path) as fh:
        return [l.split()[1] for l in fh if l.startswith("Seccomp_filters")][0]

def f(a, n):
    out = {"threads": sorted(os.listdir("/proc/self/task"))}
    seen = {}
    def thread():
        seen["filters"] = filters("/proc/thread-self/status")
        seen["pipe"] = call(22, ctypes.addressof(FDS))
    t = threading.Thread(target=thread)
    t.start()
    t.join()
    out["thread"] = seen
    out["main filters"] = filters("/proc/self/status")
    # The system call number's upper half is ignored by the kernel, not by the filter.
    out["pipe, nr with upper bits"] = call((1 << 32) + 22, ctypes.addressof(FDS))
    # MAP_SHARED with bits above the flags' low half; remap_file_pages of a private mapping.
    out["mmap shared, upper flag bits"] = call(9, 0, 4096, 3, (1 << 32) | 0x21, -1, 0)
    out["remap_file_pages"] = call(216, 0, 4096, 0, 0, 0)
    out["prctl(PR_SET_DUMPABLE), upper bits"] = call(157, (1 << 32) | 4, 1, 0, 0, 0)
    out["prctl(PR_GET_DUMPABLE)"] = call(157, 3, 0, 0, 0, 0)
    exe = ctypes.create_string_buffer(sys.executable.encode())
    out["execve"] = call(59, ctypes.addressof(exe), 0, 0)
    out["execveat"] = call(322, -100, ctypes.addressof(exe), 0, 0, 0)
    print(json.dumps(out))
    return a
"""


def test_the_worker_filter_is_on_every_thread_and_refuses_odd_forms(sandbox: Sandbox) -> None:
    out = report(run(sandbox, HELD))
    filters = out["main filters"]
    assert out["threads"] == [out["threads"][0]], out  # type: ignore[index]
    assert out["thread"] == {"filters": filters, "pipe": EPERM}, out
    assert out["pipe, nr with upper bits"] == EPERM, out
    assert out["mmap shared, upper flag bits"] == EPERM, out
    assert out["remap_file_pages"] != 0, out
    assert out["prctl(PR_SET_DUMPABLE), upper bits"] == EPERM, out
    assert out["prctl(PR_GET_DUMPABLE)"] == 0, out
    assert out["execve"] == EPERM and out["execveat"] == EPERM, out
