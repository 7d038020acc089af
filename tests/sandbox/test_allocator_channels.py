"""Host-global allocators a run can move and read without a denied call: a real sender and a
receiver, side by side, on every backend. The pidfd inode counter is closed (no run can open a
pidfd); the pipe and shared-memory inode counters in test_worker_filter.py (no run can make
either); what remains (the pipe counter through procfs) is measured in
docs/sandbox-isolation.md ("What remains") with bench/allocators.py."""

from __future__ import annotations

import secrets

import pytest

from sandbox.protocol import Sandbox
from tests.sandbox.helpers import (
    FAST,
    assert_grader_still_works,
    balanced_secret,
    manchester_decoded,
    manchester_pair,
    report,
    run,
    timed_pair,
    unwrapped,
)

pytestmark = pytest.mark.timeout(180)

EPERM, ENOSYS = 1, 38
BITS = 64
HALF = 0.05
CHANNEL_LIMITS = FAST.model_copy(
    update={"wall_seconds": 18.0, "cpu_seconds": 15.0, "max_processes": 64, "output_bytes": 65536}
)

# Every way a run could hold a pidfd, each with arguments that succeed (or fail with EINVAL,
# after the filter) where the call is let through.
PIDFD_PATHS = """
import ctypes, json, os, socket

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def oserror(fn):
    try:
        fn()
        return 0
    except OSError as exc:
        return exc.errno

def sockopt(nr, option):
    # On fd 0, not a socket (the worker may make none): the filter answers before the kernel
    # would say ENOTSOCK.
    value = ctypes.c_int(1)
    size = ctypes.c_uint(4)
    ctypes.set_errno(0)
    ret = libc.syscall(ctypes.c_long(nr), 0, socket.SOL_SOCKET, option, ctypes.byref(value),
                       ctypes.byref(size) if nr == 55 else 4)
    return 0 if ret >= 0 else ctypes.get_errno()

def f(a, n):
    out = {
        "pidfd_open": oserror(lambda: os.pidfd_open(os.getpid())),
        "getsockopt SO_PEERPIDFD": sockopt(55, 77),
        "setsockopt SO_PASSPIDFD": sockopt(54, 76),
    }
    # CLONE_PIDFD with CLONE_DETACHED: EINVAL from the kernel, so no child is ever made.
    ctypes.set_errno(0)
    ret = libc.syscall(ctypes.c_long(56), ctypes.c_long(0x1000 | 0x400000), None, None, None, None)
    out["clone CLONE_PIDFD"] = 0 if ret >= 0 else ctypes.get_errno()
    print(json.dumps(out))
    return a
"""


def test_no_run_can_open_a_pidfd(sandbox: Sandbox) -> None:
    out = report(run(sandbox, PIDFD_PATHS))
    assert out == {
        "pidfd_open": ENOSYS,
        "getsockopt SO_PEERPIDFD": EPERM,
        "setsockopt SO_PASSPIDFD": EPERM,
        "clone CLONE_PIDFD": EPERM,
    }, out
    assert_grader_still_works(sandbox)


# The channel: in the half of each bit slot its secret names, the sender starts threads (each
# takes a pid, so advances the host's pidfd inode counter); the receiver forks a child at a time
# and reads its pidfd's inode number, summing per half how far the counter moved beyond its own
# children. Manchester coding as in test_global_counters.
SENDER = """
import threading, time

T0 = {t0!r}
BITS = {bits!r}
HALF = {half!r}

def f(a, n):
    late = time.time() - T0
    for i, bit in enumerate(BITS):
        for half in (0, 1):
            start = T0 + (2 * i + half) * HALF
            end = start + HALF
            while time.time() < start:
                time.sleep(0.001)
            while (half == 0) == (bit == 1) and time.time() < end:
                t = threading.Thread(target=int)
                t.start()
                t.join()
    print("late", late)
    return a
"""

RECEIVER = """
import json, os, time

T0 = {t0!r}
SLOTS = {slots!r}
HALF = {half!r}

def read():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return None
    finally:
        os.waitpid(pid, 0)
    ino = os.fstat(fd).st_ino
    os.close(fd)
    return ino

def f(a, n):
    late = time.time() - T0
    moved = [0] * SLOTS
    last = read()
    while last is not None:
        now = time.time()
        k = int((now - T0) // HALF)
        if k >= SLOTS:
            break
        if k < 0:
            time.sleep(0.001)
            last = read()
            continue
        ino = read()
        if ino is None:
            break
        moved[k] += max(0, ino - last - 1)
        last = ino
    print(json.dumps({{"late": late, "readable": last is not None, "moved": moved}}))
    return a
"""


def pidfd_channel(sandbox: Sandbox) -> tuple[int, bool]:
    """A sender and a receiver side by side: how many bits the receiver decoded (read either
    way up), and whether it could read the counter at all."""
    bits = balanced_secret(BITS)
    got = manchester_pair(sandbox, SENDER, RECEIVER, CHANNEL_LIMITS, bits, HALF)
    moved: list[int] = got["moved"]  # type: ignore[assignment]
    return manchester_decoded(moved, bits), bool(got["readable"])


@pytest.mark.slow
def test_the_pidfd_inode_counter_carries_nothing_between_concurrent_runs(
    sandbox: Sandbox,
) -> None:
    decoded, readable = pidfd_channel(sandbox)
    print("decoded", decoded, "of", BITS, "bits; counter readable:", readable)
    # At chance 32 of 64; 48 or more happens with probability ~1e-4.
    assert decoded < 48, (decoded, readable)
    assert not readable
    assert_grader_still_works(sandbox)


# Socket cookies and eventfds: each call with arguments that succeed where it is let through.
COOKIES_AND_EVENTFDS = """
import ctypes, json, os, socket

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def oserror(fn):
    try:
        fn()
        return 0
    except OSError as exc:
        return exc.errno

def sockopt(option):
    # On fd 0, not a socket (the worker may make none): the filter answers before the kernel
    # would say ENOTSOCK.
    value = ctypes.create_string_buffer(8)
    size = ctypes.c_uint(8)
    ctypes.set_errno(0)
    ret = libc.syscall(ctypes.c_long(55), 0, socket.SOL_SOCKET, option, value, ctypes.byref(size))
    return 0 if ret >= 0 else ctypes.get_errno()

def f(a, n):
    out = {
        "getsockopt SO_COOKIE": sockopt(57),
        "getsockopt SO_NETNS_COOKIE": sockopt(71),
        "eventfd2": oserror(lambda: os.eventfd(0)),
    }
    ctypes.set_errno(0)
    ret = libc.syscall(ctypes.c_long(284), ctypes.c_long(0))  # eventfd, without flags
    out["eventfd"] = 0 if ret >= 0 else ctypes.get_errno()
    print(json.dumps(out))
    return a
"""


def test_no_run_can_read_a_socket_cookie_or_make_an_eventfd(sandbox: Sandbox) -> None:
    out = report(run(sandbox, COOKIES_AND_EVENTFDS))
    assert out == {
        "getsockopt SO_COOKIE": EPERM,
        "getsockopt SO_NETNS_COOKIE": EPERM,
        "eventfd2": ENOSYS,
        "eventfd": ENOSYS,
    }, out
    assert_grader_still_works(sandbox)


# The eventfd id channel: in each 20 ms slot the sender holds as many eventfds as the slot's
# 5-bit value; in the middle of the slot the receiver makes one and reads its id from fdinfo (the
# lowest free host-wide, so above every id the sender holds). Four slots of 0 calibrate.
WIDTH = 5
SYMBOLS = 40
PREAMBLE = 4
SLOT = 0.02

EVENTFD_SENDER = """
import os, time

T0 = {t0!r}
VALUES = {values!r}
SLOT = {slot!r}

def f(a, n):
    late = time.time() - T0
    for i, v in enumerate(VALUES):
        start = T0 + i * SLOT
        while time.time() < start:
            pass
        held = []
        try:
            held = [os.eventfd(0) for _ in range(v)]
        except OSError:
            pass
        while time.time() < start + 0.8 * SLOT:
            pass
        for fd in held:
            os.close(fd)
    print("late", late)
    return a
"""

EVENTFD_RECEIVER = """
import json, os, time

T0 = {t0!r}
SLOTS = {slots!r}
SLOT = {slot!r}

def read():
    try:
        fd = os.eventfd(0)
    except OSError:
        return None
    try:
        with open("/proc/self/fdinfo/%d" % fd) as info:
            for line in info:
                if line.startswith("eventfd-id:"):
                    return int(line.split()[1])
    finally:
        os.close(fd)
    return None

def f(a, n):
    late = time.time() - T0
    got = []
    for i in range(SLOTS):
        start = T0 + (i + 0.5) * SLOT
        while time.time() < start:
            pass
        got.append(read())
    print(json.dumps({{"late": late, "ids": got}}))
    return a
"""


@pytest.mark.slow
def test_eventfd_ids_carry_nothing_between_concurrent_runs(sandbox: Sandbox) -> None:
    values = [0] * PREAMBLE + [secrets.randbelow(1 << WIDTH) for _ in range(SYMBOLS)]
    got = timed_pair(
        sandbox,
        lambda t0: {
            "sender": EVENTFD_SENDER.format(t0=t0, values=values, slot=SLOT),
            "receiver": EVENTFD_RECEIVER.format(t0=t0, slots=len(values), slot=SLOT),
        },
        CHANNEL_LIMITS,
    )
    ids: list[int | None] = got["ids"]  # type: ignore[assignment]
    readable = [i for i in ids if i is not None]
    right = 0
    if len(readable) == len(ids):
        base = min(readable[:PREAMBLE])
        for value, seen in zip(values[PREAMBLE:], readable[PREAMBLE:], strict=True):
            decoded = min((1 << WIDTH) - 1, max(0, seen - base))
            right += sum(((decoded ^ value) >> j) & 1 == 0 for j in range(WIDTH))
    total = SYMBOLS * WIDTH
    print("decoded", right, "of", total, "bits; ids readable:", len(readable), "of", len(ids))
    # At chance 100 of 200 (a receiver that reads nothing gets none right); 130 or more happens
    # with probability ~1e-5.
    assert right < 130, (right, readable)
    assert readable == [], readable
    assert_grader_still_works(sandbox)


# The socket cookie channel, sequential on one worker: a reader, a sender that asks as many new
# sockets for their cookie as its value times 8192, a reader.
COOKIE_STEP = 8192
COOKIE_WIDTH = 6

COOKIE_READER = """
import json, os, socket

CPUS = sorted(os.sched_getaffinity(0))

def f(a, n):
    got = []
    for cpu in CPUS:  # each CPU takes its own batch of cookies: the highest is the newest
        os.sched_setaffinity(0, {cpu})
        try:
            with socket.socket(socket.AF_UNIX) as s:
                got.append(int.from_bytes(s.getsockopt(socket.SOL_SOCKET, 57, 8), "little"))
        except OSError:  # no cookie, or no socket at all
            pass
    print(json.dumps({"cookie": max(got) if got else None}))
    return a
"""

COOKIE_SENDER = """
import socket

def f(a, n):
    for _ in range({count}):
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.getsockopt(socket.SOL_SOCKET, 57, 8)
        except OSError:
            return a
    return a
"""


@pytest.mark.slow
def test_socket_cookies_carry_nothing_to_a_later_run(sandbox: Sandbox) -> None:
    backend = unwrapped(sandbox)

    def cookie() -> int | None:
        value = report(run(backend, COOKIE_READER, limits=CHANNEL_LIMITS))["cookie"]
        return None if value is None else int(value)  # type: ignore[call-overload]

    def send(count: int) -> None:
        result = run(backend, COOKIE_SENDER.format(count=count), limits=CHANNEL_LIMITS)
        assert result.status == "ok" and result.cases[0].error is None, result.message

    right, readable = 0, 0
    for _ in range(3):
        value = secrets.randbelow(1 << COOKIE_WIDTH)
        before = cookie()
        send(value * COOKIE_STEP)
        after = cookie()
        if before is None or after is None:
            continue
        readable += 1
        decoded = min((1 << COOKIE_WIDTH) - 1, max(0, round((after - before) / COOKIE_STEP)))
        right += sum(((decoded ^ value) >> j) & 1 == 0 for j in range(COOKIE_WIDTH))
    print("decoded", right, "of", 3 * COOKIE_WIDTH, "bits; runs that read a cookie:", readable)
    assert right < 15, right  # at chance 9 of 18 (none, reading nothing); 15 or more: ~0.004
    assert readable == 0
    assert_grader_still_works(sandbox)
