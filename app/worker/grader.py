"""Grade one claimed submission and store the result under its lease; shared by both modes."""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy.orm import Session, sessionmaker

from app.core.config import Settings
from app.db.base import utcnow
from app.grading.schemas import GradeReport
from app.grading.verdicts import Verdict
from app.problems.loader import Problem
from app.submissions.models import Submission
from app.submissions.notices import COMPLETIONS, Completed
from app.submissions.repository import DONE, SubmissionRepository
from app.testcases.current import examples_set, grading_set
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
    name: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")
    _sandbox: Sandbox | None = None
    _leases: LeaseKeeper | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def sandbox(self) -> Sandbox:
        """Built on first use, so starting the API does not depend on the sandbox backend."""
        with self._lock:
            if self._sandbox is None:
                self._sandbox = self.make_sandbox(self.settings)
            return self._sandbox

    def close(self) -> None:
        """Release what the context started: the sandbox's long-lived processes (a fork server
        and its spares) and the lease renewals, so a stopped server leaves nothing running."""
        with self._lock:
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


def _run_pipeline(ctx: GradingContext, submission: Submission) -> tuple[GradeReport, int | None]:
    from app.assignments.cases import assignment_cases
    from app.grading.pipeline import grade_submission

    problem = ctx.problems.get(submission.problem_id)
    if problem is None:
        return internal_error(f"problem {submission.problem_id!r} is no longer served"), None
    # The folder's cases plus the instructors' stored cases at the current version; "Run
    # examples" runs its public part.
    test_set = examples_set if submission.mode == "examples" else grading_set
    personal = assignment_cases(ctx.settings, ctx.sessions, problem, submission)
    version, cases = personal or test_set(ctx.sessions, problem)

    # The sandbox phase is stored with the result (``_store``), in the one transaction that
    # finishes the submission: a commit of its own cost more than comparing and diagnosing.
    report = grade_submission(problem, submission.code, ctx.sandbox, cases=cases)
    return report, version


def grade_claimed(ctx: GradingContext, submission: Submission, token: str) -> bool:
    """Grade a submission this worker holds under ``token``; True if the result was stored.

    A failure of the grader itself (database, sandbox backend) hands the submission back to
    the queue, up to ``max_attempts`` gradings; so does a worker dying mid-grade. Past that,
    the submission is stored as ``internal_error`` so that it cannot crash workers forever.
    """
    limit = ctx.settings.max_attempts
    if submission.attempts > limit:
        message = f"grading was interrupted {limit} times; it was not graded"
        return _store(ctx, submission, token, internal_error(message), None)
    with ctx.leases.holding(submission.id, token):
        try:
            report, version = _run_pipeline(ctx, submission)
        except Exception as exc:
            log.exception("grading %s failed (attempt %d)", submission.id, submission.attempts)
            if submission.attempts < limit:
                with ctx.sessions() as session:
                    SubmissionRepository(session).release(submission.id, token, type(exc).__name__)
                    session.commit()
                return False
            report, version = internal_error(f"the grader failed: {type(exc).__name__}"), None
    return _store(ctx, submission, token, report, version)


def _store(
    ctx: GradingContext,
    submission: Submission,
    token: str,
    report: GradeReport,
    version: int | None,
) -> bool:
    report_json = report.model_dump_json()
    now = utcnow()
    with ctx.sessions() as session:
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
    return stored


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
        created_at=submission.created_at,
        started_at=submission.started_at,
        finished_at=finished_at,
    )


def claim_next_and_grade(ctx: GradingContext) -> bool:
    """One grading step of either mode: grade the next submission in fair order (see
    ``SubmissionRepository.claim_next``); False if no client with queued work was idle."""
    token = new_token()
    with ctx.sessions() as session:
        submission = SubmissionRepository(session).claim_next(token, ctx.name, ctx.lease)
        session.commit()
    if submission is None:
        return False
    grade_claimed(ctx, submission, token)
    return True


def next_claimable(ctx: GradingContext) -> str | None:
    """What a free worker would take now: asked after a grading, which may have freed its
    client's next submission."""
    with ctx.sessions() as session:
        return SubmissionRepository(session).next_claimable()
