"""The worker's own filter (``sandbox/inside/nochannels.py``): once the submission runs it makes
no new pipe, socket or shared memory, whose inode numbers come from host-wide counters. On every
backend: each way to such an object is refused, numpy, threads, fork and imports still work, a
submission using multiprocessing, subprocess or socket is told why, and a real sender and
receiver side by side no longer get a bit through the pipe or the memfd counter."""

from __future__ import annotations

import pytest

from sandbox.inside import nochannels
from sandbox.protocol import Sandbox
from tests.sandbox.helpers import (
    assert_grader_still_works,
    balanced_secret,
    manchester_decoded,
    manchester_pair,
    report,
    run,
)
from tests.sandbox.test_allocator_channels import BITS, CHANNEL_LIMITS, HALF

pytestmark = pytest.mark.timeout(180)

EPERM = 1


def test_the_filter_numbers_are_libseccomps() -> None:
    import pyseccomp as sc

    for machine, arch in (("x86_64", sc.Arch.X86_64), ("aarch64", sc.Arch.AARCH64)):
        audit_arch, numbers = nochannels.ARCHES[machine]
        assert audit_arch == int(arch)
        for name, number in numbers.items():
            assert sc.resolve_syscall(arch, name) == number, (machine, name)
        # Every refused call that exists on the architecture is in its table.
        for name in ("pipe", "pipe2", "socket", "socketpair", "memfd_create", "memfd_secret"):
            assert (sc.resolve_syscall(arch, name) >= 0) == (name in numbers), (machine, name)


# Each way to a new pipe, socket, shared-memory or other inode the host numbers, by raw system
# call (x86_64) with arguments that succeed where the call is let through; and what must still
# work after the filter: numpy, threads, fork, private mappings, an import.
NEW_OBJECTS = """
import ctypes, json, mmap, os, threading
import numpy as np

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.c_long]
FDS = (ctypes.c_int * 2)()
NAME = ctypes.create_string_buffer(b"/tj")

def call(nr, *args):
    ctypes.set_errno(0)
    ret = libc.syscall(ctypes.c_long(nr), *args)
    return 0 if ret >= 0 else ctypes.get_errno()

def mapping(flags, fd=-1):
    ctypes.set_errno(0)
    ret = libc.mmap(None, 1 << 21, 3, flags, fd, 0)
    return 0 if ret not in (None, 2 ** 64 - 1) else ctypes.get_errno()

def f(a, n):
    ctx = ctypes.c_ulong(0)
    zero = os.open("/dev/zero", os.O_RDWR)
    out = {
        "pipe": call(22, FDS),
        "pipe2": call(293, FDS, 0),
        "socket AF_UNIX": call(41, 1, 1, 0),
        "socketpair AF_UNIX": call(53, 1, 1, 0, FDS),
        "memfd_create": call(319, NAME, 0),
        "memfd_secret": call(447, 0),
        "shmget": call(29, 0, 4096, 0o1600),
        "io_setup": call(206, 1, ctypes.byref(ctx)),
        "mq_open": call(240, NAME, 0o102, 0o600, None),
        "mmap shared anonymous": mapping(0x21),
        "mmap shared validate": mapping(0x23),
        "mmap shared /dev/zero": mapping(0x01, zero),
        "mmap private huge pages": mapping(0x40022),
    }
    works = {"mmap private": mapping(0x22), "mmap private /dev/zero": mapping(0x02, zero)}
    x = np.random.default_rng(0).random((200, 200))
    works["numpy"] = bool(np.allclose(np.linalg.inv(x) @ x, np.eye(200)))
    seen = []
    t = threading.Thread(target=seen.append, args=(1,))
    t.start()
    t.join()
    works["thread"] = seen == [1]
    pid = os.fork()
    if pid == 0:
        os._exit(7)
    works["fork"] = os.waitpid(pid, 0)[1] >> 8 == 7
    import fractions, statistics
    works["import"] = statistics.mean([fractions.Fraction(1), fractions.Fraction(2)]) == 1.5
    print(json.dumps({"refused": out, "works": works}))
    return a
"""


def test_no_new_pipe_socket_or_shared_memory_once_the_submission_runs(sandbox: Sandbox) -> None:
    out = report(run(sandbox, NEW_OBJECTS))
    refused: dict[str, int] = out["refused"]  # type: ignore[assignment]
    assert refused == dict.fromkeys(refused, EPERM), refused
    assert out["works"] == {
        "mmap private": 0,
        "mmap private /dev/zero": 0,
        "numpy": True,
        "thread": True,
        "fork": True,
        "import": True,
    }, out
    assert_grader_still_works(sandbox)


# What a student who reaches for processes or sockets sees: at import time, and in a public case.
AT_IMPORT = """
import multiprocessing
pool = multiprocessing.Pool(2)

def f(a, n):
    return a
"""

IN_A_CASE = """
import json, socket, subprocess

def attempt(fn):
    try:
        fn()
        return "made"
    except OSError as exc:
        return type(exc).__name__ + ": " + str(exc)

def f(a, n):
    out = {
        "subprocess": attempt(lambda: subprocess.run(["true"])),
        "socket": attempt(lambda: socket.socket(socket.AF_UNIX)),
        "socketpair": attempt(socket.socketpair),
    }
    print(json.dumps(out))
    return a
"""


def test_multiprocessing_subprocess_and_socket_say_why_they_fail(sandbox: Sandbox) -> None:
    result = run(sandbox, AT_IMPORT)
    assert result.status == "runtime_error", (result.status, result.message)
    assert nochannels.MESSAGE in result.message + result.stderr, (result.message, result.stderr)
    assert "PermissionError" in result.message + result.stderr
    out = report(run(sandbox, IN_A_CASE))
    assert out == dict.fromkeys(out, f"PermissionError: [Errno 1] {nochannels.MESSAGE}"), out
    assert len(out) == 3


# The channel: in the half of each bit slot its secret names, the sender makes (and closes) pipes
# and memfds as fast as it can; the receiver, pinned to one CPU, makes one of each at a time and
# sums per half how far each inode counter moved beyond its own objects. Manchester coding as in
# test_allocator_channels.
SENDER = """
import os, time

T0 = {t0!r}
BITS = {bits!r}
HALF = {half!r}

def move():
    r, w = os.pipe()
    os.close(r)
    os.close(w)
    os.close(os.memfd_create("s"))

def f(a, n):
    late = time.time() - T0
    for i, bit in enumerate(BITS):
        for half in (0, 1):
            start = T0 + (2 * i + half) * HALF
            end = start + HALF
            while time.time() < start:
                time.sleep(0.001)
            while (half == 0) == (bit == 1) and time.time() < end:
                try:
                    move()
                except OSError:
                    time.sleep(0.001)
    print("late", late)
    return a
"""

RECEIVER = """
import ctypes, json, os, time

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
FDS = (ctypes.c_int * 2)()
NAME = ctypes.create_string_buffer(b"r")
T0 = {t0!r}
SLOTS = {slots!r}
HALF = {half!r}

def read():
    # By system call: the counters' numbers, or None where the kernel refuses.
    got = []
    if libc.syscall(22, FDS) == 0:
        got.append(os.fstat(FDS[0]).st_ino)
        os.close(FDS[0])
        os.close(FDS[1])
    else:
        got.append(None)
    fd = libc.syscall(319, NAME, 0)
    if fd >= 0:
        got.append(os.fstat(fd).st_ino)
        os.close(fd)
    else:
        got.append(None)
    return got

def f(a, n):
    os.sched_setaffinity(0, {{min(os.sched_getaffinity(0))}})
    late = time.time() - T0
    moved = [[0] * SLOTS, [0] * SLOTS]
    readable = [False, False]
    last = read()
    while True:
        k = int((time.time() - T0) // HALF)
        if k >= SLOTS:
            break
        now = read()
        if k >= 0:
            for j in (0, 1):
                if now[j] is not None and last[j] is not None:
                    readable[j] = True
                    if 0 < now[j] - last[j] < 1 << 30:
                        moved[j][k] += now[j] - last[j] - 1
        else:
            time.sleep(0.001)
        last = now
    print(json.dumps({{"late": late, "readable": readable, "moved": moved}}))
    return a
"""


@pytest.mark.slow
def test_pipe_and_memfd_inode_counters_carry_nothing_between_concurrent_runs(
    sandbox: Sandbox,
) -> None:
    bits = balanced_secret(BITS)
    got = manchester_pair(sandbox, SENDER, RECEIVER, CHANNEL_LIMITS, bits, HALF)
    decoded = [manchester_decoded(moved, bits) for moved in got["moved"]]  # type: ignore[attr-defined]
    print("decoded (pipe, memfd)", decoded, "of", BITS, "bits; readable:", got["readable"])
    # At chance 32 of 64; 48 or more happens with probability ~1e-4.
    assert max(decoded) < 48, (decoded, got["readable"])
    assert got["readable"] == [False, False]
    assert_grader_still_works(sandbox)
