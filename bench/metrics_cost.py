"""What the metrics and the state-change log lines cost per grading, end to end and alone.

    .venv/bin/python bench/metrics_cost.py [--rounds 6] [--per-round 15]

End to end: one in-process server (embedded pool, the default sandbox backend, a multiprocess
metrics directory, JSON log lines to a file), the canonical correct submission graded serially
with ``?wait``, in rounds that alternate recording on and off (``app.core.metrics``'s recording
calls and ``app.core.events.state_changed`` replaced by no-ops), so drift on a shared machine falls
on both alike. Alone: the recording calls of one grading in a loop, without any grading.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

# This checkout's app/ and tests/, whichever checkout the interpreter's install points at.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from app.core import events, metrics
from app.core.config import Settings
from app.main import create_app
from tests.support.codes import CORRECT

RECORDERS = ("accepted", "rejected", "answered", "graded", "sandbox_failed", "retried")
STAGES = {s: 0.01 for s in ("prepare", "sandbox", "compare", "diagnose", "store", "queue")}


@contextmanager
def recording_off() -> Iterator[None]:
    saved: dict[str, Callable[..., Any]] = {name: getattr(metrics, name) for name in RECORDERS}
    saved_event = events.state_changed
    try:
        for name in RECORDERS:
            setattr(metrics, name, lambda *a, **k: None)
        events.state_changed = lambda *a, **k: None  # type: ignore[assignment]
        yield
    finally:
        for name, function in saved.items():
            setattr(metrics, name, function)
        events.state_changed = saved_event  # type: ignore[assignment]


def one_grading_of_records() -> None:
    sid, problem = "bba71629-5506-4da5-96e9-2e56b18ce5b6", "multi-head-attention"
    metrics.accepted("submit", 0.003)
    events.state_changed(sid, problem, "queued", mode="submit")
    events.state_changed(sid, problem, "running", attempt=1)
    metrics.graded(problem, "accepted", [], STAGES | {"end_to_end": 0.03})
    events.state_changed(sid, problem, "done", verdict="accepted", diagnoses=[], stages=STAGES)
    metrics.answered(0.001)


def alone(n: int = 20000) -> float:
    one_grading_of_records()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            one_grading_of_records()
        best = min(best, (time.perf_counter() - start) / n)
    return best


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--per-round", type=int, default=15)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tj-metrics-cost-"))
    settings = Settings(
        data_dir=work / "data",
        workers=1,
        rate_limit=100_000,
        metrics_dir=work / "metrics",
        log_format="json",
    )
    times: dict[str, list[float]] = {"on": [], "off": []}
    with TestClient(create_app(settings)) as client:
        handler = logging.FileHandler(work / "events.log")
        events.log.handlers = [handler]
        handler.setFormatter(events.JsonFormatter())
        url = "/api/problems/multi-head-attention/submissions?wait=30"
        for _ in range(3):  # warm: the sandbox primed, the first gradings' one-time costs paid
            assert client.post(url, json={"code": CORRECT}).status_code == 200
        for round_ in range(args.rounds * 2):
            which = "on" if round_ % 2 == 0 else "off"
            context = recording_off() if which == "off" else _nothing()
            with context:
                for _ in range(args.per_round):
                    start = time.perf_counter()
                    response = client.post(url, json={"code": CORRECT})
                    times[which].append(time.perf_counter() - start)
                    assert response.status_code == 200, response.text
    for which in ("on", "off"):
        p50 = statistics.median(times[which]) * 1000
        print(f"recording {which:3}: p50 {p50:.2f} ms over {len(times[which])} gradings")
    difference = statistics.median(times["on"]) - statistics.median(times["off"])
    print(f"difference of the medians: {difference * 1000:+.2f} ms")
    events.log.handlers = [logging.NullHandler()]
    print(f"the recording calls of one grading alone (multiprocess): {alone() * 1e6:.1f} us")
    metrics.configure(None)
    print(f"the recording calls of one grading alone (one process):  {alone() * 1e6:.1f} us")
    return 0


@contextmanager
def _nothing() -> Iterator[None]:
    yield


if __name__ == "__main__":
    sys.exit(main())
