"""What the submission can print while it is shown (at import and during public cases) says
nothing of the hidden cases' sizes. A real sender and receiver: two jobs differ only in their
hidden cases (four tiny ones, then four of 4 MiB each); the submission reads what a process can read
of its supervisor (``/proc/<parent>/status``, ``statm``, ``stat``: resident memory, which grew
with every case the supervisor had read) and of its own address space (every shared mapping's
size: the region the cases are laid in). The student sees the same numbers for both jobs.

Found by session 10's red team: the supervisor read every case, hidden ones included, right
after forking the worker, and sized the shared region from the largest case of the job."""

from __future__ import annotations

import json

import numpy as np

from sandbox.protocol import RunRequest, Sandbox
from tests.sandbox.helpers import FAST, LOOK_TWICE, phased_request

RECEIVER = (
    """
import json, os, time

def _look(where):
    time.sleep(0.3)  # the supervisor had long read every case by then
    parent = os.getppid()
    seen = {"where": where}
    for name in ("status", "statm", "stat"):
        try:
            with open("/proc/%d/%s" % (parent, name)) as f:
                seen[name] = f.read()
        except OSError as exc:
            seen[name] = type(exc).__name__
    status = dict(l.split(":", 1) for l in seen.pop("status").splitlines() if ":" in l)
    seen["rss_kb"] = int(status["VmRSS"].split()[0]) if "VmRSS" in status else None
    statm = seen.pop("statm").split()
    seen["statm_rss_pages"] = int(statm[1]) if len(statm) > 1 else None
    stat = seen.pop("stat").rsplit(")", 1)[-1].split()
    seen["stat_rss_pages"] = int(stat[21]) if len(stat) > 21 else None
    shared = []
    with open("/proc/self/maps") as f:
        for line in f:
            span, perms = line.split()[:2]
            if perms[3] == "s":
                lo, hi = (int(x, 16) for x in span.split("-"))
                shared.append(hi - lo)
    seen["shared"] = sorted(shared)
    print("SEEN " + json.dumps(seen), flush=True)

"""
    + LOOK_TWICE
)

MIB = 1 << 20
UNITS = (("rss_kb", 1024), ("statm_rss_pages", 4096), ("stat_rss_pages", 4096))


def job(hidden_bytes: int) -> RunRequest:
    public = np.arange(12.0).reshape(3, 4)
    hidden = [(f"hidden-{i}", np.full(max(hidden_bytes // 8, 1), float(i)), True) for i in range(4)]
    limits = FAST.model_copy(update={"memory_mb": 512, "cpu_seconds": 4, "wall_seconds": 8})
    return phased_request(RECEIVER, [("public", public, False), *hidden], limits)


def seen(sandbox: Sandbox, request: RunRequest) -> list[dict[str, object]]:
    result = sandbox.run(request)
    assert result.status == "ok", (result.message, result.stderr)
    assert [c.name for c in result.cases if c.error is None] == [c.name for c in request.cases]
    lines = [line for line in result.stdout.splitlines() if line.startswith("SEEN ")]
    looks = [json.loads(line[5:]) for line in lines]
    assert [look["where"] for look in looks] == ["import", "public"], result.stdout
    return looks


def test_the_shown_phases_cannot_tell_the_hidden_cases_sizes(sandbox: Sandbox) -> None:
    small, large = job(8), job(4 * MIB)
    # Alternated, so a drift of the backend's memory over time does not pass for a signal.
    rounds = [(seen(sandbox, small), seen(sandbox, large)) for _ in range(2)]
    for tiny, big in rounds:
        for a, b in zip(tiny, big, strict=True):
            # The region is as large whatever the hidden cases hold.
            assert a["shared"] == b["shared"], (a, b)
            # The supervisor holds 16 MiB more once it has read the large job's hidden cases:
            # it must not have read them yet. Its memory otherwise varies by up to ~2 MiB
            # (Docker's runs; a few pages elsewhere).
            for key, unit in UNITS:
                if a[key] is None or b[key] is None:
                    assert a[key] == b[key], (key, a, b)
                    continue
                grew = (int(b[key]) - int(a[key])) * unit  # type: ignore[call-overload]
                assert abs(grew) < 4 * MIB, (key, a, b)
