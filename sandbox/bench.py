"""Per-run latency of each local sandbox backend on a trivial correct submission.

    .venv/bin/python -m sandbox.bench [runs]

Prints the median and spread of wall time per run (start, numpy import, one call, teardown),
one run at a time, 20 ms apart.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

from sandbox.backends.bwrap import BwrapSandbox
from sandbox.backends.forkserver import ForkServerSandbox
from sandbox.backends.pool import WarmPoolSandbox
from sandbox.backends.process import ProcessSandbox
from sandbox.protocol import CaseArgs, RunRequest, Sandbox

REQUEST = RunRequest(
    code="def f(a, n):\n    return a * n\n",
    function_name="f",
    param_names=["a", "n"],
    cases=[CaseArgs(name="c", args={"a": np.ones((4, 8)), "n": 2})],
)


# Between runs, as between a client's submissions: what is prepared ahead of demand gets ready.
PAUSE = 0.02


def measure(sandbox: Sandbox, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        time.sleep(PAUSE)
        start = time.perf_counter()
        result = sandbox.run(REQUEST)
        times.append(time.perf_counter() - start)
        assert result.status == "ok", result.message
    return times


def main(argv: list[str]) -> None:
    runs = int(argv[0]) if argv else 20
    bwrap = BwrapSandbox()
    backends: dict[str, Sandbox] = {
        "bwrap": bwrap,
        "bwrap-warm": WarmPoolSandbox(bwrap, size=1, limits=REQUEST.limits),
        "bwrap-fork": ForkServerSandbox(bwrap),
        "fork-0": ForkServerSandbox(bwrap, spares=0),  # each run forked when it arrives
        "process": ProcessSandbox(),
    }
    for label, sandbox in backends.items():
        measure(sandbox, 2)  # warm the page cache
        if isinstance(sandbox, WarmPoolSandbox):
            sandbox.prewarm(REQUEST.limits)
            t = []
            for _ in range(runs):  # one run at a time from a ready sandbox: the in-sandbox time
                sandbox.prewarm(REQUEST.limits)
                t += measure(sandbox, 1)
            t.sort()
        else:
            t = sorted(measure(sandbox, runs))
        print(
            f"{label:10s} runs={runs} median={statistics.median(t) * 1000:.0f} ms "
            f"min={t[0] * 1000:.0f} ms p90={t[int(0.9 * (runs - 1))] * 1000:.0f} ms"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
