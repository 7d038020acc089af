"""Accepting a submission: validation, idempotency, rate limit, back-pressure, then commit and
dispatch, in that order. The row is committed before any worker or broker hears about it."""

from __future__ import annotations

import hashlib
import logging
import math
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from app.auth.tokens import Principal
from app.core import events
from app.core.config import Settings
from app.core.errors import ApiError
from app.db.base import utcnow
from app.db.group_commit import commit_group
from app.grading.schemas import GradeReport
from app.submissions.access import may_read
from app.submissions.models import Submission
from app.submissions.repository import DONE, QUEUED, SubmissionRepository
from app.submissions.schemas import (
    QueuePlace,
    SubmissionCreate,
    SubmissionOut,
    submission_out,
)

log = logging.getLogger(__name__)

QUEUE_FULL_RETRY_AFTER_SECONDS = 5
# Waiters are woken by notices (the in-process grader's, or other processes' over Redis: see
# app.submissions.broadcast); their database poll is only a safety net for a lost notice.
SAFETY_POLL_SECONDS = 5.0
# The gradings the queue's pace is measured over (the newest, by primary key), and how long a
# measurement serves.
PACE_SAMPLE = 50
PACE_TTL_SECONDS = 2.0
_PACE: dict[int, tuple[float, float | None]] = {}


class Handoff(Protocol):
    """An idle grader of this process, set aside for one submission being accepted: given the
    submission claimed in the transaction that inserts it (``give``), or let go (``cancel``)."""

    worker: str  # the name the claim records
    lease: timedelta

    def give(self, submission: Submission, token: str) -> None: ...

    def cancel(self) -> None:
        """Let the grader go; nothing once given (or cancelled)."""
        ...


class Dispatcher(Protocol):
    """Tells the graders that a committed submission is waiting."""

    def dispatch(self, submission_id: str) -> None: ...

    def reserve(self) -> Handoff | None:
        """An idle grader for the submission about to be accepted, or None (none idle, or
        the graders are other processes)."""
        ...


# Opens a session (a sessionmaker), or lends the caller's own (``lend``).
Sessions = Callable[[], AbstractContextManager[Session]]


def lend(session: Session) -> Sessions:
    """``session`` where a ``Sessions`` is asked for: used, not closed."""
    return lambda: nullcontext(session)


class SubmissionView(Protocol):
    """What ``principal`` is shown of a submission: ``out`` as it is, a cut of it, or None
    (answered as 404, as for an unknown id). Registered at start-up by the packages that own
    the rules (e.g. an assignment's feedback policy), so this package imports none of them."""

    def __call__(
        self,
        sessions: Sessions,
        row: Submission,
        out: SubmissionOut,
        principal: Principal | None,
    ) -> SubmissionOut | None: ...


@dataclass(frozen=True)
class Owner:
    """Whose a new submission is, and in which assignment, as graded attempt number what."""

    user_id: int | None = None
    assignment_id: int | None = None
    graded_attempt: int | None = None


class Admission(Protocol):
    """Decides, in the transaction that inserts the new row, whose it is and which graded attempt
    it takes (raising ApiError to refuse it). The database refuses two rows taking the same
    attempt; the insert then asks again, so a race takes the next number or is refused.
    ``scope`` names where it is submitted (e.g. "assignment:7") for idempotency keys."""

    @property
    def scope(self) -> str: ...

    def __call__(self, session: Session, now: datetime, body: SubmissionCreate) -> Owner: ...


# Inserts refused because a concurrent submission took the same graded attempt, retried with a
# fresh admission; each retry sees the winner's committed row.
ATTEMPT_RETRIES = 8
# Why ``_create`` did not accept: try again.
_ATTEMPT_TAKEN = object()
_CLAIM_REFUSED = object()


@dataclass(frozen=True)
class Accepted:
    submission: Submission
    replayed: bool  # an Idempotency-Key retry: the submission already existed
    ahead: int | None = None  # queued before it when it was inserted (its place, roughly)


def queue_full() -> ApiError:
    """The answer when ``GRADER_QUEUE_MAX`` submissions are queued or running (new submissions
    and regrades alike)."""
    return ApiError(
        503,
        "queue_full",
        "too many submissions are waiting; retry later",
        headers={"Retry-After": str(QUEUE_FULL_RETRY_AFTER_SECONDS)},
    )


def not_found(submission_id: str) -> ApiError:
    return ApiError(
        404, "submission_not_found", f"no submission with id {submission_id!r}", "submission_id"
    )


def check_code(code: str, max_bytes: int) -> None:
    try:
        size = len(code.encode("utf-8"))
    except UnicodeEncodeError:
        raise ApiError(
            422, "invalid_code", "code is not valid UTF-8 (lone surrogate escape)", "code"
        ) from None
    if size > max_bytes:
        raise ApiError(
            413, "code_too_large", f"code is {size} bytes; the limit is {max_bytes}", "code"
        )
    if not code.strip():
        raise ApiError(422, "empty_code", "code is empty", "code")
    if "\x00" in code:
        raise ApiError(422, "invalid_code", "code contains a NUL character", "code")


def request_digest(problem_id: str, body: SubmissionCreate, scope: str | None = None) -> str:
    """``scope``: where it was submitted besides the problem (an assignment), so a key reused
    across the practice route and an assignment is a different request, not a replay."""
    parts = (problem_id, body.mode, body.code) + ((scope,) if scope else ())
    payload = "\x00".join(parts).encode("utf-8")
    return hashlib.sha256(payload).hexdigest()


class SubmissionService:
    def __init__(
        self,
        settings: Settings,
        sessions: sessionmaker[Session],
        dispatcher: Dispatcher,
        view: SubmissionView | None = None,
    ) -> None:
        self.settings = settings
        self.sessions = sessions
        self.dispatcher = dispatcher
        self.view = view

    def present(
        self,
        row: Submission,
        principal: Principal | None,
        report: GradeReport | None = None,
        ahead: int | None = None,
        session: Session | None = None,
    ) -> SubmissionOut:
        """The submission as ``principal`` may see it (404 when they may not): who may read
        practice is ``may_read``'s to say, who may read course work the course's rules'
        (``self.view``), which also say how much of either a reader is shown. ``session``:
        read in it (the caller's, still open) rather than in a new one."""
        out = submission_out(row, report)
        if row.status == QUEUED:
            out.queue = self.place(row, ahead)
        if row.assignment_id is None and not may_read(principal, row):
            raise not_found(row.id)
        if self.view is None:
            if row.assignment_id is None:
                return out
            raise not_found(row.id)  # no course rules registered: nobody reads course work
        shown = self.view(self.sessions if session is None else lend(session), row, out, principal)
        if shown is None:
            raise not_found(row.id)
        return shown

    def listed(self, row: Submission, principal: Principal) -> SubmissionOut:
        """The submission as a list's reader sees it: the list's route decided who may read
        it (staff, instructors), the registered view how much of each report they are shown
        (a feedback policy that follows them from where they are a student)."""
        out = submission_out(row)
        shown = self.view(self.sessions, row, out, principal) if self.view is not None else out
        return out if shown is None else shown

    def place(self, row: Submission, ahead: int | None = None) -> QueuePlace:
        """Where queued ``row`` stands (``ahead``: known already, as the insert counted it),
        and about how long until it is graded (the ones ahead and itself, at the recent
        pace)."""
        if ahead is None:
            with self.sessions() as session:
                ahead = SubmissionRepository(session).queued_ahead(row)
        pace = self._pace()
        estimate = None if pace is None else round((ahead + 1) / pace, 1)
        return QueuePlace(ahead=ahead, estimate_seconds=estimate)

    def _pace(self) -> float | None:
        """The recent grading pace, read at most every ``PACE_TTL_SECONDS`` per process and
        database: a rush's answers would otherwise each read it."""
        key = id(self.sessions)
        now = time.monotonic()
        cached = _PACE.get(key)
        if cached is not None and now - cached[0] < PACE_TTL_SECONDS:
            return cached[1]
        with self.sessions() as session:
            pace = SubmissionRepository(session).grading_pace(PACE_SAMPLE)
        _PACE[key] = (now, pace)
        return pace

    @property
    def wait_poll_seconds(self) -> float:
        """How often ``?wait`` requests and event streams read the database between notices."""
        return max(self.settings.poll_seconds, SAFETY_POLL_SECONDS)

    def get(self, submission_id: str) -> Submission | None:
        with self.sessions() as session:
            return SubmissionRepository(session).get(submission_id)

    def is_done(self, submission_id: str) -> Submission | None:
        submission = self.get(submission_id)
        return submission if submission is not None and submission.status == DONE else None

    def events_after(self, submission_id: str, after: int) -> list[tuple[int, str, str]]:
        """(number, kind, JSON data) of the submission's events numbered above ``after``."""
        with self.sessions() as session:
            events = SubmissionRepository(session).events_after(submission_id, after)
            return [(e.seq, e.kind, e.data) for e in events]

    def regrade(self, submission_id: str) -> int:
        """Queue a finished submission for grading again on the current test set; its new run.

        The row goes back to ``queued`` with ``run`` + 1 and is dispatched like a new
        submission; the previous result stays in the ``gradings`` table. The queue cap is
        checked by the requeue's own UPDATE, like a new submission's admission, so a script
        cannot queue more than ``GRADER_QUEUE_MAX``."""
        with self.sessions() as session:
            repo = SubmissionRepository(session)
            submission = repo.requeue_for_regrade(submission_id, max_active=self.settings.queue_max)
            if submission is not None:
                session.commit()
                run = submission.run
            else:
                existing = repo.get(submission_id)
                if existing is None:
                    raise not_found(submission_id)
                # Still being graded outranks a full queue: retrying later would not help.
                if existing.status == DONE:
                    raise queue_full()
                raise ApiError(
                    409,
                    "submission_not_done",
                    "the submission is still being graded",
                    "submission_id",
                )
        self._dispatch(submission_id)
        return run

    def create(
        self,
        problem_id: str,
        body: SubmissionCreate,
        *,
        client: str,
        idempotency_key: str | None,
        submission_id: str | None = None,
        user_id: int | None = None,
        admit: Admission | None = None,
        received_at: datetime | None = None,
        session: Session | None = None,
    ) -> Accepted:
        """``submission_id``: the id a new row gets (a caller that watches for its completion
        before it is dispatched chooses it); a fresh UUID by default. ``admit``: see
        ``Admission``; without it the row belongs to no account or assignment.
        ``received_at``: when the request arrived (now by default): the time every rule reads
        (rate windows, an assignment's dates), stored beside the insert's ``created_at``.
        ``session``: the caller's, still open (its reads took no write lock), else a new one."""
        arrived = received_at or utcnow()
        # A grader idle now takes the submission in its inserting transaction (one commit and
        # one thread wake-up less than queueing it), unless that would pass someone by.
        direct = True
        for _ in range(ATTEMPT_RETRIES):
            handoff = self.dispatcher.reserve() if direct else None
            try:
                accepted = self._create(
                    problem_id,
                    body,
                    client=client,
                    idempotency_key=idempotency_key,
                    submission_id=submission_id,
                    user_id=user_id,
                    admit=admit,
                    handoff=handoff,
                    arrived=arrived,
                    sessions=self.sessions if session is None else lend(session),
                )
            finally:
                if handoff is not None:
                    handoff.cancel()  # no-op once given
            if isinstance(accepted, Accepted):
                return accepted
            direct = accepted is not _CLAIM_REFUSED
        raise ApiError(
            409, "attempt_conflict", "too many concurrent submissions; retry", "graded_attempt"
        )

    def _create(
        self,
        problem_id: str,
        body: SubmissionCreate,
        *,
        client: str,
        idempotency_key: str | None,
        submission_id: str | None,
        user_id: int | None,
        admit: Admission | None,
        handoff: Handoff | None,
        arrived: datetime,
        sessions: Sessions,
    ) -> Accepted | object:
        """``_ATTEMPT_TAKEN``: a concurrent submission took the same graded attempt;
        ``_CLAIM_REFUSED``: a concurrent claim gave the client a running submission first.
        Either way, try again (the second time queued). ``handoff``: given the submission
        inserted claimed, else left to the caller to cancel."""
        check_code(body.code, self.settings.max_code_bytes)
        digest = request_digest(problem_id, body, admit.scope if admit is not None else None)
        with sessions() as session:
            repo = SubmissionRepository(session)
            if idempotency_key is not None:
                existing = repo.find_by_idempotency_key(client, idempotency_key)
                if existing is not None:
                    return Accepted(_same_request(existing, digest), replayed=True)
            window = timedelta(seconds=self.settings.rate_window_seconds)
            now = arrived
            counts = repo.admission_counts(client, now - window)
            self._check_rate(counts.recent, counts.oldest, now)
            owner = admit(session, now, body) if admit is not None else Owner(user_id=user_id)
            # The cap protects the service from practice traffic; a graded attempt the
            # assignment admitted (on time, attempts left) is queued whatever the queue holds.
            if counts.active >= self.settings.queue_max and owner.graded_attempt is None:
                raise queue_full()
            submission = Submission(
                id=submission_id or str(uuid.uuid4()),
                problem_id=problem_id,
                mode=body.mode,
                code=body.code,
                code_sha256=hashlib.sha256(body.code.encode("utf-8")).hexdigest(),
                client=client,
                user_id=owner.user_id,
                assignment_id=owner.assignment_id,
                graded_attempt=owner.graded_attempt,
                idempotency_key=idempotency_key,
                request_sha256=digest,
                status=QUEUED,
                attempts=0,
                run=1,
                received_at=arrived,
                created_at=utcnow(),
            )
            # Claimed at once only where the fair order would take it next: nothing queued
            # (the first claimable kinds: a dead worker's run is re-queued first by the sweep)
            # and its client with nothing running (a client's runs never overlap).
            token = None
            if handoff is not None and counts.queued == 0 and not counts.client_running:
                token = str(uuid.uuid4())

            def insert(into: Session) -> None:
                writes = SubmissionRepository(into)
                if token is not None and handoff is not None:
                    writes.add_claimed(submission, token, handoff.worker, handoff.lease)
                else:
                    writes.add(submission)

            try:
                # The reads above took no lock (SQLite); the write transaction starts here,
                # committed with the other accepts waiting for the write turn then.
                commit_group(self.sessions).commit(session, insert)
            except IntegrityError:
                # A concurrent retry with the same key won the insert: answer with its row.
                session.rollback()
                existing = None
                if idempotency_key is not None:
                    existing = repo.find_by_idempotency_key(client, idempotency_key)
                if existing is not None:
                    return Accepted(_same_request(existing, digest), replayed=True)
                if token is not None:
                    return _CLAIM_REFUSED
                if owner.graded_attempt is not None:
                    return _ATTEMPT_TAKEN
                raise
        events.state_changed(submission.id, problem_id, QUEUED, mode=submission.mode)
        if token is not None and handoff is not None:
            handoff.give(submission, token)
        else:
            self._dispatch(submission.id)
        return Accepted(submission, replayed=False, ahead=counts.queued)

    def _dispatch(self, submission_id: str) -> None:
        try:
            self.dispatcher.dispatch(submission_id)
        except Exception:
            # The row is committed as queued; the sweeper (celery) or the pool's polling
            # (embedded) still finds it, so the client gets its 202 either way.
            log.exception("could not dispatch submission %s; it stays queued", submission_id)

    def _check_rate(self, count: int, oldest: datetime | None, now: datetime) -> None:
        window = timedelta(seconds=self.settings.rate_window_seconds)
        if count < self.settings.rate_limit:
            return
        wait = (oldest + window - now).total_seconds() if oldest is not None else 1.0
        raise ApiError(
            429,
            "rate_limited",
            f"at most {self.settings.rate_limit} submissions per "
            f"{self.settings.rate_window_seconds:g} s; retry later",
            headers={"Retry-After": str(max(1, math.ceil(wait)))},
        )


def _same_request(existing: Submission, digest: str) -> Submission:
    if existing.request_sha256 != digest:
        raise ApiError(
            409,
            "idempotency_key_reused",
            "this Idempotency-Key was already used for a different request",
            "Idempotency-Key",
        )
    return existing
