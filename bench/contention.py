"""The contention-timing residue between two concurrent runs: what is left once no host-global
counter is readable (docs/sandbox-isolation.md, "What remains"). Measured, not closed: runs
share cores, caches and memory bandwidth.

    .venv/bin/python bench/contention.py [--sandbox fork|bwrap|docker] [--mode cpu|mem]
                                         [--bits 64] [--half 0.05] [--trials 3]

A sender holding a random secret (as many ones as zeros) and a receiver run side by side and
agree on a start time (the host's clock is both runs' clock). In each bit slot the sender works
through the half the bit names (Manchester coding: bit 1 = busy then idle) and sleeps through the
other: ``cpu`` spins (``sum(range(2000))``), ``mem`` streams a 32 MiB array (the last-level cache
and memory bandwidth). The receiver counts how many rounds of the same work it gets through in
each half; a bit decodes as 1 when the first half was the slower. Prints, per trial, the bits the
receiver got wrong, then the raw rate, the error rate and the capacity of that binary symmetric
channel, rate * (1 - H(error rate)).
"""

from __future__ import annotations

import argparse
import math
import os
import secrets
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from sandbox.protocol import CaseArgs, Limits, RunRequest, RunResult, Sandbox  # noqa: E402

LIMITS = Limits(
    cpu_seconds=40,
    wall_seconds=60,
    memory_mb=512,
    max_processes=8,
    output_bytes=64 * 1024,
    tmpfs_mb=4,
)

WORK = {
    "cpu": ("", "sum(range(2000))"),
    "mem": (
        "import numpy as np\nBUF = np.ones(4 << 20)\n",
        "np.add(BUF, 1.0, out=BUF)",
    ),
}

SENDER = """
import time
{setup}
T0 = {t0!r}
BITS = {bits!r}
HALF = {half!r}

def f(a, n):
    late = time.time() - T0
    for i, bit in enumerate(BITS):
        for half in (0, 1):
            start = T0 + (2 * i + half) * HALF
            end = start + HALF
            busy = (half == 0) == (bit == 1)
            while time.time() < start:
                time.sleep(0.001)
            while busy and time.time() < end:
                {work}
    print("late", late)
    return a
"""

RECEIVER = """
import time
{setup}
T0 = {t0!r}
SLOTS = {slots!r}
HALF = {half!r}

def f(a, n):
    late = time.time() - T0
    counts = [0] * SLOTS
    while True:
        now = time.time()
        k = int((now - T0) // HALF)
        if k >= SLOTS:
            break
        if k < 0:
            time.sleep(0.001)
            continue
        offset = now - T0 - k * HALF
        if 0.15 * HALF < offset < 0.9 * HALF:
            {work}
            counts[k] += 1
    print("late", late)
    print(" ".join(map(str, counts)))
    return a
"""


def make_sandbox(kind: str) -> Sandbox:
    from sandbox.backends.bwrap import BwrapSandbox

    if kind == "docker":
        from sandbox.backends.docker import DEFAULT_IMAGE, DockerSandbox

        return DockerSandbox(image=os.environ.get("GRADER_DOCKER_IMAGE", DEFAULT_IMAGE))
    bwrap = BwrapSandbox()
    if kind == "fork":
        from sandbox.backends.forkserver import ForkServerSandbox

        server = ForkServerSandbox(bwrap)
        server.wait_ready()
        return server
    return bwrap


def request(code: str) -> RunRequest:
    return RunRequest(
        code=code,
        function_name="f",
        param_names=["a", "n"],
        cases=[CaseArgs(name="c", args={"a": np.zeros(1), "n": 0})],
        limits=LIMITS,
    )


def balanced(n: int) -> list[int]:
    bits = [1] * (n // 2) + [0] * (n - n // 2)
    for i in range(n - 1, 0, -1):
        j = secrets.randbelow(i + 1)
        bits[i], bits[j] = bits[j], bits[i]
    return bits


def check(key: str, result: RunResult) -> None:
    if result.status != "ok" or result.cases[0].error is not None:
        raise SystemExit(f"{key}: {result.status} {result.message} {result.cases}")


def run_pair(sandbox: Sandbox, codes: dict[str, str]) -> dict[str, RunResult]:
    """Start every code at once; stop the bench if one failed or began after the agreed start
    (each prints ``late <seconds>`` first)."""
    results: dict[str, RunResult] = {}

    def go(key: str) -> None:
        results[key] = sandbox.run(request(codes[key]))

    threads = [threading.Thread(target=go, args=(key,)) for key in codes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for key, result in results.items():
        check(key, result)
        late = float(result.stdout.split("\n")[0].split()[1])
        if late > 0:
            raise SystemExit(f"{key} started {late:.2f} s late: raise the start delay")
    return results


def trial(sandbox: Sandbox, mode: str, n_bits: int, half: float) -> int:
    """One sender/receiver pair; how many bits the receiver got wrong."""
    bits = balanced(n_bits)
    t0 = time.time() + 4.0
    setup, work = WORK[mode]
    sender = SENDER.format(setup=setup, t0=t0, bits=bits, half=half, work=work)
    receiver = RECEIVER.format(setup=setup, t0=t0, slots=2 * n_bits, half=half, work=work)
    results = run_pair(sandbox, {"s": sender, "r": receiver})
    counts = [int(c) for c in results["r"].stdout.strip().splitlines()[-1].split()]
    decoded = [int(counts[2 * i] < counts[2 * i + 1]) for i in range(n_bits)]
    return sum(d != b for d, b in zip(decoded, bits, strict=True))


def entropy(p: float) -> float:
    return 0.0 if p in (0.0, 1.0) else -p * math.log2(p) - (1 - p) * math.log2(1 - p)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sandbox", choices=["fork", "bwrap", "docker"], default="fork")
    parser.add_argument("--mode", choices=sorted(WORK), default="cpu")
    parser.add_argument("--bits", type=int, default=64)
    parser.add_argument("--half", type=float, default=0.05, help="half a bit slot, seconds")
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    sandbox = make_sandbox(args.sandbox)
    try:
        errors = []
        for _ in range(args.trials):
            errors.append(trial(sandbox, args.mode, args.bits, args.half))
            print(f"trial: {errors[-1]} of {args.bits} bits wrong", flush=True)
    finally:
        close = getattr(sandbox, "close", None)
        if callable(close):
            close()
    rate = 1 / (2 * args.half)
    p = sum(errors) / (args.bits * len(errors))
    print(
        f"{args.sandbox} {args.mode}: {rate:.1f} bits/s raw, error rate {p:.3f}, "
        f"capacity {rate * (1 - entropy(p)):.2f} bits/s over {len(errors)} x {args.bits} bits"
    )


if __name__ == "__main__":
    main()
