"""Host-global allocators as a channel between two concurrent runs: a sender moves a counter the
kernel shares between all runs, a receiver reads where the counter is now.

    .venv/bin/python bench/allocators.py [--sandbox fork|bwrap|docker]
                                         [--source pipe|procfs|pidfs|shmem|cookie]
                                         [--coding manchester|value|sequential]
                                         [--bits 64] [--half 0.05] [--step 512] [--trials 3]

Sources (each readable without a denied call, unless the seccomp policy says otherwise):

- ``pipe``: ``get_next_ino()``, the inode number of every pipe, socket and procfs inode on the
  host (per-CPU batches of 1024 taken from one shared counter): ``os.fstat`` of a new pipe.
- ``pidfs``: the inode number of a pidfd (``pidfd_open``), one global 64-bit counter advanced by
  every pid the host allocates, in any pid namespace: the sender starts threads.
- ``cookie``: a socket's cookie (``getsockopt(SO_COOKIE)``), one host-wide 64-bit counter in
  per-CPU batches of 4096, taken the first time a socket's cookie is asked for.
- ``procfs``: ``get_next_ino()`` again, through procfs, which the worker's filter cannot refuse:
  the sender starts threads that list their ``/proc/thread-self`` (~50 new inodes each), the
  receiver starts a thread and reads its ``/proc/thread-self`` directory's inode number.
- ``shmem``: the inode number of the kernel's internal tmpfs (``memfd_create``, shared anonymous
  mappings), per-CPU batches from one counter: ``os.fstat`` of a new memfd.

Codings:

- ``manchester`` (concurrent; as in bench/contention.py): in the half its bit names the sender
  allocates as fast as it can; the receiver pins itself to one CPU, samples the counter in a loop
  and sums, per half, how far it moved beyond the receiver's own allocations.
- ``value`` (concurrent): in each slot of ``2 * half`` seconds the sender allocates ``v * step``
  objects for a random ``v`` of ``--symbol-bits`` bits; the receiver reads the counter at each
  slot's start (on every CPU it may use, the highest: the per-CPU batches lag the shared counter)
  and rounds the difference.
- ``sequential``: a reader run, a sender run that allocates ``v * step`` objects, a reader run,
  one after the other on one worker; ``v`` is read from the two readers' difference, in units
  of what a sender of one step moved it by (measured before, as is what an idle sender moves).

Prints, per trial, the bits wrong, then the raw rate, the error rate and the capacity of that
binary symmetric channel, rate * (1 - H(error rate)) (for ``sequential``, bits per sender run).
"""

from __future__ import annotations

import argparse
import itertools
import secrets
import time

from contention import SENDER, balanced, check, entropy, make_sandbox, request, run_pair

from sandbox.protocol import Sandbox

# How each source is moved by the sender and read by the receiver (one new object per read). A
# refused call moves nothing and reads 0 (the worker's filter refuses pipes and memfds).
SOURCES = {
    "pipe": (
        "def move():\n    try:\n        r, w = os.pipe()\n    except OSError:\n        return\n"
        "    os.close(r)\n    os.close(w)\n",
        "def read():\n    try:\n        r, w = os.pipe()\n    except OSError:\n        return 0\n"
        "    ino = os.fstat(r).st_ino\n    os.close(r)\n    os.close(w)\n    return ino\n",
    ),
    "shmem": (
        "def move():\n    try:\n        os.close(os.memfd_create('m'))\n    except OSError:\n"
        "        pass\n",
        "def read():\n    try:\n        fd = os.memfd_create('r')\n    except OSError:\n"
        "        return 0\n    ino = os.fstat(fd).st_ino\n    os.close(fd)\n    return ino\n",
    ),
    # The same counter as pipes' (get_next_ino), through procfs: each new thread's /proc entries
    # take their numbers from it when first looked up (a listing looks up ~50).
    "procfs": (
        "def move():\n    t = threading.Thread(target=os.listdir, args=('/proc/thread-self',))\n"
        "    t.start()\n    t.join()\n",
        "def read():\n    got = []\n"
        "    t = threading.Thread(target=lambda: got.append(os.stat('/proc/thread-self').st_ino))\n"
        "    t.start()\n    t.join()\n    return got[0]\n",
    ),
    "cookie": (
        "import socket\n\n"
        "def move():\n    with socket.socket(socket.AF_UNIX) as s:\n"
        "        s.getsockopt(socket.SOL_SOCKET, 57, 8)\n",
        "import socket\n\n"
        "def read():\n    with socket.socket(socket.AF_UNIX) as s:\n"
        "        return int.from_bytes(s.getsockopt(socket.SOL_SOCKET, 57, 8), 'little')\n",
    ),
    "pidfs": (
        "def move():\n    t = threading.Thread(target=int)\n    t.start()\n    t.join()\n",
        "def read():\n    pid = os.fork()\n    if pid == 0:\n        os._exit(0)\n"
        "    fd = os.pidfd_open(pid)\n    ino = os.fstat(fd).st_ino\n    os.close(fd)\n"
        "    os.waitpid(pid, 0)\n    return ino\n",
    ),
}

RECEIVER = """
import os, threading, time
{read}
T0 = {t0!r}
SLOTS = {slots!r}
HALF = {half!r}

def f(a, n):
    os.sched_setaffinity(0, {{min(os.sched_getaffinity(0))}})
    late = time.time() - T0
    moved = [0] * SLOTS
    last = read()
    while True:
        now = time.time()
        k = int((now - T0) // HALF)
        if k >= SLOTS:
            break
        if k < 0:
            time.sleep(0.001)
            last = read()
            continue
        ino = read()
        if 0 < ino - last < 1 << 30:
            moved[k] += ino - last - 1
        last = ino
    print("late", late)
    print(" ".join(map(str, moved)))
    return a
"""


# The counter where it is furthest: a run may be on any CPU, each holding its own batch.
HIGHEST = """
CPUS = sorted(os.sched_getaffinity(0))  # before highest() pins the run to one of them

def highest():
    got = []
    for cpu in CPUS:
        os.sched_setaffinity(0, {cpu})
        got.append(read())
    return max(got)
"""

VALUE_SENDER = """
import os, threading, time
{move}
T0 = {t0!r}
VALUES = {values!r}
SLOT = {slot!r}
STEP = {step!r}

def f(a, n):
    late = time.time() - T0
    for i, v in enumerate(VALUES):
        start = T0 + (i + 0.1) * SLOT
        while time.time() < start:
            time.sleep(0.001)
        for _ in range(v * STEP):
            move()
    print("late", late)
    return a
"""

VALUE_RECEIVER = """
import os, threading, time
{read}
{highest}
T0 = {t0!r}
SLOTS = {slots!r}
SLOT = {slot!r}

def f(a, n):
    late = time.time() - T0
    marks = []
    for i in range(SLOTS + 1):
        start = T0 + i * SLOT
        while time.time() < start:
            time.sleep(0.001)
        marks.append(highest())
    print("late", late)
    print(" ".join(map(str, marks)))
    return a
"""

READER = """
import os, threading
{read}
{highest}

def f(a, n):
    print(highest())
    return a
"""

MOVER = """
import os, threading
{move}

def f(a, n):
    for _ in range({count}):
        move()
    return a
"""


PREAMBLE = 4


def wrong_bits(got: list[int], sent: list[int], width: int) -> int:
    return sum(((g ^ v) >> j) & 1 for g, v in zip(got, sent, strict=True) for j in range(width))


def value_trial(
    sandbox: Sandbox, source: str, n_bits: int, half: float, step: int, width: int
) -> int:
    """Concurrent, ``width`` bits per slot; how many of the ``n_bits`` bits came out wrong."""
    # Four first slots both ends agree are 0 calibrate what the receiver's own reads move (other
    # load only adds: the least of them).
    values = [0] * PREAMBLE + [secrets.randbelow(1 << width) for _ in range(n_bits // width)]
    symbols = len(values)
    t0 = time.time() + 4.0
    move, read = SOURCES[source]
    codes = {
        "s": VALUE_SENDER.format(move=move, t0=t0, values=values, slot=2 * half, step=step),
        "r": VALUE_RECEIVER.format(read=read, highest=HIGHEST, t0=t0, slots=symbols, slot=2 * half),
    }
    results = run_pair(sandbox, codes)
    marks = [int(c) for c in results["r"].stdout.strip().splitlines()[-1].split()]
    moved = [b - a for a, b in itertools.pairwise(marks)]
    base = min(moved[:PREAMBLE])
    got = [min((1 << width) - 1, max(0, round((m - base) / step))) for m in moved]
    return wrong_bits(got[PREAMBLE:], values[PREAMBLE:], width)


def sequential_trial(sandbox: Sandbox, source: str, step: int, width: int) -> int:
    """A reader, a sender, a reader on one worker; how many of ``width`` bits came out wrong."""
    move, read = SOURCES[source]

    def reader() -> int:
        result = sandbox.run(request(READER.format(read=read, highest=HIGHEST)))
        check("reader", result)
        return int(result.stdout.strip().splitlines()[-1])

    def sender(count: int) -> None:
        check("sender", sandbox.run(request(MOVER.format(move=move, count=count))))

    start = reader()
    sender(0)
    base = reader() - start  # what a reader and an idle run move the counter by
    # What one step moves it by (a procfs move takes ~50 numbers, a pipe one).
    start = reader()
    sender(step)
    unit = max(1, reader() - start - base)
    value = secrets.randbelow(1 << width)
    start = reader()
    sender(value * step)
    got = min((1 << width) - 1, max(0, round((reader() - start - base) / unit)))
    return wrong_bits([got], [value], width)


def trial(sandbox: Sandbox, source: str, n_bits: int, half: float) -> int:
    """One sender/receiver pair; how many bits the receiver got wrong."""
    bits = balanced(n_bits)
    t0 = time.time() + 4.0
    move, read = SOURCES[source]
    # The Manchester sender of bench/contention.py, its work one allocation.
    sender = SENDER.format(
        setup=f"import os, threading\n{move}", work="move()", t0=t0, bits=bits, half=half
    )
    receiver = RECEIVER.format(read=read, t0=t0, slots=2 * n_bits, half=half)
    results = run_pair(sandbox, {"s": sender, "r": receiver})
    moved = [int(c) for c in results["r"].stdout.strip().splitlines()[-1].split()]
    decoded = [int(moved[2 * i] > moved[2 * i + 1]) for i in range(n_bits)]
    return sum(d != b for d, b in zip(decoded, bits, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sandbox", choices=["fork", "bwrap", "docker"], default="fork")
    parser.add_argument("--source", choices=sorted(SOURCES), default="pipe")
    parser.add_argument("--bits", type=int, default=64)
    parser.add_argument("--half", type=float, default=0.05, help="half a bit slot, seconds")
    parser.add_argument(
        "--coding", choices=["manchester", "value", "sequential"], default="manchester"
    )
    parser.add_argument("--step", type=int, default=512, help="objects per unit of a value")
    parser.add_argument("--symbol-bits", type=int, default=4, help="bits per value")
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    sandbox = make_sandbox(args.sandbox)
    width = args.symbol_bits
    if args.coding == "sequential":
        args.bits = width
    try:
        errors = []
        for _ in range(args.trials):
            if args.coding == "manchester":
                errors.append(trial(sandbox, args.source, args.bits, args.half))
            elif args.coding == "value":
                errors.append(
                    value_trial(sandbox, args.source, args.bits, args.half, args.step, width)
                )
            else:
                errors.append(sequential_trial(sandbox, args.source, args.step, width))
            print(f"trial: {errors[-1]} of {args.bits} bits wrong", flush=True)
    finally:
        close = getattr(sandbox, "close", None)
        if callable(close):
            close()
    p = sum(errors) / (args.bits * len(errors))
    if args.coding == "sequential":
        print(
            f"{args.sandbox} {args.source} sequential: {width} bits per sender run, error rate "
            f"{p:.3f}, capacity {width * (1 - entropy(p)):.2f} bits per sender run over "
            f"{len(errors)} runs"
        )
        return
    rate = (width if args.coding == "value" else 1) / (2 * args.half)
    print(
        f"{args.sandbox} {args.source} {args.coding}: {rate:.1f} bits/s raw, error rate {p:.3f}, "
        f"capacity {rate * (1 - entropy(p)):.2f} bits/s over {len(errors)} x {args.bits} bits"
    )


if __name__ == "__main__":
    main()
