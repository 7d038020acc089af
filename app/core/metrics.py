"""The service's Prometheus metrics: what they are, how a process records them, how they are read.

Every process (API, Celery worker) calls ``configure`` once at start. With a metrics directory
the values live in per-process files there (prometheus-client's multiprocess mode), so one scrape
of any process sharing the directory sums the API and the workers of its host; without one they
stay in this process.

Recording is one call per event, made after the work it measures (never inside the sandbox
run): an increment or an observation is a dictionary update and, in multiprocess mode, an
mmap write, a few microseconds each.

Labels are bounded: problem ids (the served catalog), verdicts, diagnosis codes (the problems'
error models), stage names and reasons fixed in code. Never a submission id or user text.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest, values
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
ENV_DIR = "PROMETHEUS_MULTIPROC_DIR"
NAMESPACE = "tensorjudge"

# Grading is tens of milliseconds; a queue wait or a slow problem can reach the wall limit.
STAGE_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.02,
    0.035,
    0.05,
    0.075,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)

# The stages of one submission, in order: accepted -> stored -> claimed -> sandbox start ->
# sandbox run -> compare -> diagnose -> result stored -> answered.
STAGES = (
    "arrival",  # the request's arrival (its body's last byte) to the row committed
    "accept",  # request body read to the row committed (the API)
    "queue",  # row created to claimed by a worker
    "prepare",  # claimed to the sandbox run starting (cases, the run request)
    "sandbox",  # the sandbox run: every case and probe
    "compare",  # outputs compared with the expected ones
    "diagnose",  # the probes' diagnosis and its wording
    "store",  # the result's transaction
    "answer",  # result stored to a waiting request answered (?wait)
    "end_to_end",  # row created to result stored
)


@dataclass(frozen=True)
class _Metrics:
    """The metric objects, and their labelled children by label values: prometheus-client's own
    ``labels()`` validates and locks on every call, a third of the recording cost."""

    accepted: Counter
    rejected: Counter
    refused: Counter
    stage: Histogram
    verdicts: Counter
    diagnoses: Counter
    sandbox_failures: Counter
    lease_expiries: Counter
    retries: Counter
    leases_lost: Counter
    children: dict[tuple[str, tuple[str, ...]], Any] = field(default_factory=dict)

    def child(self, name: str, *labels: str) -> Any:
        key = (name, labels)
        found = self.children.get(key)
        if found is None:
            found = self.children[key] = getattr(self, name).labels(*labels)
        return found


def _create() -> _Metrics:
    # Not registered in prometheus-client's global registry: ``exposition`` builds the registry a
    # scrape reads (this process's metrics, or every process's files).
    def counter(name: str, doc: str, labels: Iterable[str] = ()) -> Counter:
        return Counter(name, doc, labelnames=tuple(labels), namespace=NAMESPACE, registry=None)

    return _Metrics(
        accepted=counter(
            "submissions_accepted", "Submissions accepted for grading, by mode.", ["mode"]
        ),
        rejected=counter(
            "submissions_rejected",
            "Submissions refused at the door, by reason (the error code answered).",
            ["reason"],
        ),
        refused=counter(
            "requests_refused",
            "Requests of any route answered before the application ran, by reason (the error "
            "code answered): a declared body over the ceiling.",
            ["reason"],
        ),
        stage=Histogram(
            "grading_stage_seconds",
            "Time a submission spends in each stage of its grading.",
            labelnames=("stage",),
            namespace=NAMESPACE,
            buckets=STAGE_BUCKETS,
            registry=None,
        ),
        verdicts=counter(
            "verdicts", "Stored results, by problem and verdict.", ["problem", "verdict"]
        ),
        diagnoses=counter(
            "diagnoses", "Diagnosis codes in stored results, by problem.", ["problem", "code"]
        ),
        sandbox_failures=counter(
            "sandbox_failures",
            "Gradings the sandbox or the grader failed (not the submission), by kind.",
            ["kind"],
        ),
        lease_expiries=counter(
            "lease_expiries",
            "Running submissions handed back to the queue because their lease expired.",
        ),
        retries=counter(
            "grading_retries", "Gradings that failed and were handed back to the queue."
        ),
        leases_lost=counter(
            "leases_lost", "Results discarded because another worker held the lease by then."
        ),
    )


_lock = threading.Lock()
_metrics: _Metrics | None = None
_directory: Path | None = None
_extra: list[Collector] = []


def configure(directory: Path | None) -> None:
    """Where this process's metrics live: ``directory`` (shared with the other processes of the
    host) or this process. Files of processes that are gone are removed when no other process
    writes there any more (a whole deployment restarting), so totals start again from zero
    together; while one lives they stay, so the totals it reports never go down."""
    global _metrics, _directory
    with _lock:
        if _metrics is not None and directory == _directory:
            return
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)
            _clean(directory)
            os.environ[ENV_DIR] = str(directory)
            # A value class of its own: files are opened in ``directory``, not a previous one.
            values.ValueClass = values.MultiProcessValue()  # type: ignore[no-untyped-call]
        else:
            os.environ.pop(ENV_DIR, None)
            values.ValueClass = values.MutexValue
        _directory = directory
        _metrics = _create()


def _clean(directory: Path) -> None:
    own = os.getpid()
    files = list(directory.glob("*.db"))
    others = {_pid_of(f) for f in files} - {own, None}
    if any(_alive(pid) for pid in others if pid is not None):
        return
    for file in files:
        if _pid_of(file) != own:
            file.unlink(missing_ok=True)


def _pid_of(file: Path) -> int | None:
    tail = file.stem.rsplit("_", 1)[-1]
    return int(tail) if tail.isdigit() else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _get() -> _Metrics:
    if _metrics is None:
        configure(None)
    assert _metrics is not None
    return _metrics


def add_collector(collector: Collector) -> None:
    """A collector computed at scrape time (the queue, from the database), read by this process's
    ``exposition`` only: it is not shared through the directory."""
    with _lock:
        _extra.append(collector)


def remove_collector(collector: Collector) -> None:
    with _lock:
        if collector in _extra:
            _extra.remove(collector)


def exposition() -> bytes:
    """The Prometheus text format of every process sharing this one's directory (or of this
    process), plus the scrape-time collectors."""
    metrics = _get()
    registry = CollectorRegistry(auto_describe=True)
    if _directory is not None:
        MultiProcessCollector(registry, path=str(_directory))  # type: ignore[no-untyped-call]
    else:
        for metric in (
            metrics.accepted,
            metrics.rejected,
            metrics.refused,
            metrics.stage,
            metrics.verdicts,
            metrics.diagnoses,
            metrics.sandbox_failures,
            metrics.lease_expiries,
            metrics.retries,
            metrics.leases_lost,
        ):
            registry.register(metric)
    with _lock:
        extra = list(_extra)
    for collector in extra:
        registry.register(collector)
    return generate_latest(registry)


# --- recording: one call per event -------------------------------------------------------------


def accepted(mode: str, seconds: float) -> None:
    metrics = _get()
    metrics.child("accepted", mode).inc()
    metrics.child("stage", "accept").observe(seconds)


def arrived(seconds: float) -> None:
    """A submission stored this long after its request arrived (the wait a rush costs)."""
    _get().child("stage", "arrival").observe(max(0.0, seconds))


def rejected(reason: str) -> None:
    _get().child("rejected", reason).inc()


def refused(reason: str) -> None:
    _get().child("refused", reason).inc()


def answered(seconds: float) -> None:
    _get().child("stage", "answer").observe(max(0.0, seconds))


def graded(
    problem: str,
    verdict: str,
    codes: Iterable[str],
    stages: Mapping[str, float],
) -> None:
    """A stored result: its verdict, its diagnosis codes and its stages' durations."""
    metrics = _get()
    metrics.child("verdicts", problem, verdict).inc()
    for code in codes:
        metrics.child("diagnoses", problem, code).inc()
    for stage, seconds in stages.items():
        metrics.child("stage", stage).observe(max(0.0, seconds))


def sandbox_failed(kind: str) -> None:
    _get().child("sandbox_failures", kind).inc()


def leases_expired(count: int) -> None:
    if count:
        _get().lease_expiries.inc(count)


def retried() -> None:
    _get().retries.inc()


def lease_lost() -> None:
    _get().leases_lost.inc()
