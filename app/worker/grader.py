"""Grade one claimed submission and store the result under its lease; shared by both modes."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy.orm import Session, sessionmaker

from app.core import events, metrics
from app.core.config import Settings
from app.db.base import utcnow
from app.db.engine import write_turn
from app.grading.schemas import GradeReport
from app.grading.verdicts import Verdict
from app.problems.loader import Problem
from app.submissions.models import Submission
from app.submissions.notices import COMPLETIONS, Completed
from app.submissions.pressure import PRESSURE
from app.submissions.repository import DONE, SubmissionRepository
from app.worker.leases import LeaseKeeper
from sandbox.protocol import Sandbox

log = logging.getLogger(__name__)


@dataclass
class GradingContext:
    """What a grading process holds: settings, database sessions, problems and a sandbox."""

    settings: Settings
    sessions: sessionmaker[Session]
    problems: dict[str, Problem]
    make_sandbox: Callable[[Settings], Sandbox]
    # Written in the transaction that stores a graded attempt (an LMS's score outbox): they
    # commit or roll back with it. Set by the wiring, so this package imports none of them.
    after_grading: tuple[Callable[[Session, Submission], None], ...] = ()
    name: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")
    _sandbox: Sandbox | None = None
    _leases: LeaseKeeper | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _closed: bool = False

    @property
    def sandbox(self) -> Sandbox:
        """Built on first use (or by ``prime`` in the background), so starting the API does not
        depend on the sandbox backend."""
        with self._lock:
            if self._closed:
                # A priming still under way when the server stopped: nothing would close it.
                raise RuntimeError("the grading context is closed")
            if self._sandbox is None:
                self._sandbox = self.make_sandbox(self.settings)
            return self._sandbox

    def prime(self) -> None:
        """Build the sandbox backend now and wait until it can run (a fork server up), so the
        first submission does not pay for it and readiness can say when it is done."""
        sandbox = self.sandbox
        wait_ready = getattr(getattr(sandbox, "inner", sandbox), "wait_ready", None)
        if wait_ready is not None and not wait_ready():
            raise TimeoutError("the sandbox backend did not become ready")

    def close(self) -> None:
        """Release what the context started: the sandbox's long-lived processes (a fork server
        and its spares) and the lease renewals, so a stopped server leaves nothing running."""
        with self._lock:
            self._closed = True
            sandbox, self._sandbox = self._sandbox, None
            leases, self._leases = self._leases, None
        close = getattr(sandbox, "close", None)
        if close is not None:
            close()
        if leases is not None:
            leases.stop()

    @property
    def leases(self) -> LeaseKeeper:
        """Renews the lease of every submission being graded, so only a dead or stuck worker
        loses its submission."""
        with self._lock:
            if self._leases is None:
                self._leases = LeaseKeeper(self.settings, self.sessions)
            return self._leases

    @property
    def lease(self) -> timedelta:
        return timedelta(seconds=self.settings.lease_seconds)


def new_token() -> str:
    return str(uuid.uuid4())


def internal_error(message: str) -> GradeReport:
    return GradeReport(
        verdict=Verdict.INTERNAL_ERROR,
        score=0.0,
        requirements=[],
        diagnoses=[],
        tests=[],
        error=message,
    )


def _run_pipeline(
    ctx: GradingContext, submission: Submission, stages: dict[str, float], claimed: float
) -> tuple[GradeReport, int | None]:
    from app.assignments.cases import submission_cases
    from app.grading.pipeline import grade_submission

    problem = ctx.problems.get(submission.problem_id)
    if problem is None:
        return internal_error(f"problem {submission.problem_id!r} is no longer served"), None
    # The folder's cases plus the stored cases of the submission's scope (the catalog's; its
    # course's too in an assignment) at the current version; "Run examples" runs its public part.
    version, cases = submission_cases(ctx.settings, ctx.sessions, problem, submission)

    sandbox = ctx.sandbox
    stages["prepare"] = time.perf_counter() - claimed
    raw: dict[str, float] = {}
    # The sandbox phase is stored with the result (``_store``), in the one transaction that
    # finishes the submission: a commit of its own cost more than comparing and diagnosing.
    report = grade_submission(problem, submission.code, sandbox, cases=cases, raw_timings=raw)
    stages.update((k, raw[k]) for k in ("sandbox", "compare", "diagnose") if k in raw)
    return report, version


def grade_claimed(
    ctx: GradingContext, submission: Submission, token: str, claimed: float | None = None
) -> bool:
    """Grade a submission this worker holds under ``token``; True if the result was stored.

    A failure of the grader itself (database, sandbox backend) hands the submission back to
    the queue, up to ``max_attempts`` gradings; so does a worker dying mid-grade. Past that,
    the submission is stored as ``internal_error`` so that it cannot crash workers forever.
    """
    claimed = time.perf_counter() if claimed is None else claimed
    stages: dict[str, float] = {}
    limit = ctx.settings.max_attempts
    if submission.attempts > limit:
        message = f"grading was interrupted {limit} times; it was not graded"
        return _store(ctx, submission, token, internal_error(message), None, stages)
    with ctx.leases.holding(submission.id, token):
        try:
            report, version = _run_pipeline(ctx, submission, stages, claimed)
        except Exception as exc:
            log.exception("grading %s failed (attempt %d)", submission.id, submission.attempts)
            kind = type(exc).__name__
            metrics.sandbox_failed(kind)
            if submission.attempts < limit:
                with ctx.sessions() as session, write_turn(session.get_bind()):
                    SubmissionRepository(session).release(submission.id, token, kind)
                    session.commit()
                metrics.retried()
                events.state_changed(
                    submission.id,
                    submission.problem_id,
                    "retry",
                    reason=kind,
                    attempt=submission.attempts,
                )
                return False
            report, version = internal_error(f"the grader failed: {kind}"), None
    if report.verdict == Verdict.INTERNAL_ERROR and "sandbox" in stages:
        metrics.sandbox_failed("internal_error")  # the backend's own failure, reported
    # The result's transaction takes the database's write lock: submissions being accepted by
    # this process first (app.submissions.pressure; never waits in a worker process).
    PRESSURE.yield_to_acceptance()
    return _store(ctx, submission, token, report, version, stages)


def _store(
    ctx: GradingContext,
    submission: Submission,
    token: str,
    report: GradeReport,
    version: int | None,
    stages: dict[str, float],
) -> bool:
    report_json = report.model_dump_json()
    began = time.perf_counter()
    now = utcnow()
    with ctx.sessions() as session, write_turn(session.get_bind()):
        repo = SubmissionRepository(session)
        stored = repo.finish(
            submission,
            token,
            verdict=report.verdict.value,
            score=report.score,
            report_json=report_json,
            test_set_version=version,
            phases={k: v for k, v in report.timings.items() if k != "total"},
            finished_at=now,
        )
        if stored:
            if submission.graded_attempt is not None:
                for hook in ctx.after_grading:
                    hook(session, submission)
            session.commit()
            # Wakes this process's ?wait requests now, with the row as just committed, so they
            # need not read it back. A waiter that starts watching after this check reads the
            # committed row.
            if COMPLETIONS.watched(submission.id):
                row = _as_stored(submission, report, report_json, version, now)
                COMPLETIONS.wake([submission.id], Completed(row, report))
        else:
            session.rollback()
            log.warning("lease of %s was lost; its result is discarded", submission.id)
    if stored:
        _record(submission, report, stages, time.perf_counter() - began, now)
    else:
        metrics.lease_lost()
        events.state_changed(submission.id, submission.problem_id, "lease_lost")
    return stored


def _record(
    submission: Submission,
    report: GradeReport,
    stages: dict[str, float],
    store_seconds: float,
    finished_at: datetime,
) -> None:
    """The stored result's metrics and log line: once per grading, after its commit."""
    stages["store"] = store_seconds
    if submission.started_at is not None:
        stages["queue"] = (submission.started_at - submission.created_at).total_seconds()
    stages["end_to_end"] = (finished_at - submission.created_at).total_seconds()
    codes = [d.code for d in report.diagnoses]
    metrics.graded(submission.problem_id, report.verdict.value, codes, stages)
    events.state_changed(
        submission.id,
        submission.problem_id,
        "done",
        verdict=report.verdict.value,
        diagnoses=codes,
        attempt=submission.attempts,
        stages={k: round(v, 6) for k, v in stages.items()},
    )


def _as_stored(
    submission: Submission,
    report: GradeReport,
    report_json: str,
    version: int | None,
    finished_at: datetime,
) -> Submission:
    """A detached copy of the row as ``finish`` left it (the fields a response shows)."""
    return Submission(
        id=submission.id,
        problem_id=submission.problem_id,
        mode=submission.mode,
        user_id=submission.user_id,
        assignment_id=submission.assignment_id,
        graded_attempt=submission.graded_attempt,
        status=DONE,
        attempts=submission.attempts,
        run=submission.run,
        test_set_version=version,
        verdict=report.verdict.value,
        score=report.score,
        report=report_json,
        received_at=submission.received_at,
        created_at=submission.created_at,
        started_at=submission.started_at,
        finished_at=finished_at,
    )


def claim_and_grade(ctx: GradingContext) -> bool | None:
    """One grading step of either mode: grade the next submission in fair order (see
    ``SubmissionRepository.claim_next``). None if no client with queued work was idle, else
    whether the result was stored (False: it went back to the queue, or its lease was lost)."""
    token = new_token()
    with ctx.sessions() as session, write_turn(session.get_bind()):
        submission = SubmissionRepository(session).claim_next(token, ctx.name, ctx.lease)
        session.commit()
    if submission is None:
        return None
    claimed = time.perf_counter()
    events.state_changed(
        submission.id, submission.problem_id, "running", attempt=submission.attempts
    )
    return grade_claimed(ctx, submission, token, claimed)


def next_claimable(ctx: GradingContext) -> str | None:
    """What a free worker would take now: asked after a grading, which may have freed its
    client's next submission."""
    with ctx.sessions() as session:
        return SubmissionRepository(session).next_claimable()
