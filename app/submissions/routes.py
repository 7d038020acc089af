"""Submissions API: create (async, with optional wait), read, follow by server-sent events.
Regrading one is the gradebook's (app.gradebook.course_submissions): who may is the course's
rule."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import ValidationError
from sqlalchemy.orm import Session

from app.auth.deps import OptionalPrincipal
from app.auth.tokens import Principal
from app.core import metrics
from app.core.arrival import close_accepting, received_at
from app.core.bodies import BodyCap, read_capped
from app.core.config import Settings
from app.core.errors import ApiError, error_responses, first_error
from app.core.proxies import client_address
from app.core.threads import in_accepting_thread, in_thread
from app.db.base import utcnow
from app.problems.deps import ProblemDep
from app.submissions.deps import SubmissionServiceDep
from app.submissions.notices import ACTIVITY, COMPLETIONS
from app.submissions.repository import QUEUED
from app.submissions.schemas import QueuePlace, SubmissionCreate, SubmissionOut
from app.submissions.service import Accepted, Admission, SubmissionService, not_found

router = APIRouter(tags=["submissions"])

MAX_WAIT_SECONDS = 30.0

WaitQuery = Annotated[
    float,
    Query(ge=0, le=MAX_WAIT_SECONDS, description="Seconds to wait for the result (0-30)."),
]
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=255,
        pattern=r"^[\x21-\x7e]+$",
        description="Same key and same body: the same submission is returned.",
    ),
]

SSE_KEEPALIVE_SECONDS = 15.0
# The JSON body may escape every byte of the code as \uXXXX: six characters per byte.
BODY_SLACK = 6


_ERRORS = error_responses(
    {
        400: "Body is not UTF-8 or not JSON",
        404: "Unknown problem",
        409: "Idempotency-Key reused with a different body",
        413: "Code over the size limit",
        422: "Invalid body (empty code, unknown field...)",
        429: "Rate limited",
        503: "Queue full",
    },
    retry_after=(429, 503),
)


def client_of(request: Request, principal: Principal | None, settings: Settings) -> str:
    """Whom rate limits, idempotency keys and the fair queue's turns belong to: the account
    when one signed in (many clients may share an address behind a proxy), else the
    address (a trusted proxy's client's: app.core.proxies)."""
    if principal is not None:
        return f"user:{principal.user_id}"
    return f"ip:{client_address(request, settings)}"


def body_cap(max_code_bytes: int) -> BodyCap:
    """The largest body that can hold code of ``max_code_bytes`` (JSON-escaped, with the other
    fields)."""
    return BodyCap(
        max_code_bytes * BODY_SLACK + 4096,
        "code_too_large",
        f"the limit is {max_code_bytes} bytes",
        "code",
    )


def _parse_body(raw: bytes) -> SubmissionCreate:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(
            400, "invalid_encoding", f"the body is not UTF-8 (byte {exc.start})"
        ) from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise ApiError(400, "invalid_json", "the body is not JSON") from None
    try:
        return SubmissionCreate.model_validate(data)
    except ValidationError as exc:
        field, message = first_error(exc)
        raise ApiError(422, "invalid_request", message, field) from None


def _location(submission_id: str) -> str:
    return f"/api/submissions/{submission_id}"


@router.post(
    "/api/problems/{problem_id}/submissions",
    status_code=202,
    response_model=SubmissionOut,
    responses={
        200: {"model": SubmissionOut, "description": "Finished within ?wait"},
        **_ERRORS,
        **error_responses({401: "Anonymous practice is off and no account signed in"}),
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": SubmissionCreate.model_json_schema()},
            },
        }
    },
)
async def create_submission(
    request: Request,
    response: Response,
    problem: ProblemDep,
    service: SubmissionServiceDep,
    principal: OptionalPrincipal,
    wait: WaitQuery = 0,
    idempotency_key: IdempotencyKey = None,
) -> SubmissionOut:
    """Queue code for grading. 202 with the queued submission and a ``Location``; with
    ``?wait=N``, 200 and the result if grading finishes within N seconds. Anyone while
    anonymous practice is on (GRADER_ANONYMOUS_PRACTICE), else any signed-in account."""
    if principal is None and not service.settings.anonymous_practice:
        raise ApiError(
            401,
            "unauthenticated",
            "sign in to submit: this server does not take anonymous practice submissions",
            "Authorization",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return await accept_submission(
        request, response, problem.id, service, Submitter(principal), wait, idempotency_key
    )


@dataclass(frozen=True)
class Submitter:
    """Who submits (None: anonymous practice), and, for a graded attempt, the assignment's
    ``Admission``."""

    principal: Principal | None
    admit: Admission | None = None
    # Rows read while finding the submitter, kept alive for the rest of the accept's session.
    held: object = None


# Finds the submitter in a session of the accepting thread (an assignment route checks the
# caller's token, membership and the assignment there), raising ApiError to refuse.
Identify = Callable[[Session], Submitter]


@dataclass(frozen=True)
class _Taken:
    accepted: Accepted
    principal: Principal | None
    out: SubmissionOut | None  # the answer, unless it waits for the result


async def accept_submission(
    request: Request,
    response: Response,
    problem_id: str,
    service: SubmissionService,
    submitter: Submitter | Identify,
    wait: float,
    idempotency_key: str | None,
) -> SubmissionOut:
    """The one way a submission is accepted (practice, or in an assignment through the
    submitter's ``admit``): who submits, the capped body, idempotency, rate limits and queue
    cap, the insert and (unless it waits) the answer, in ONE call on a worker thread: at a
    deadline each hop between the event loop and a thread costs a wake-up on loaded cores
    (docs/deadlines.md). Then the optional wait. The answer is what the submitter may see of
    it (``SubmissionService.present``). Every time rule reads the request's arrival
    (``app.core.arrival``), not the moment of the insert."""
    began = time.perf_counter()
    arrived = received_at(request)
    oversize: ApiError | None = None
    raw = b""
    try:
        raw = await read_capped(request, body_cap(service.settings.max_code_bytes))
    except ApiError as exc:
        oversize = exc  # answered after the caller is known, as a dependency would have been
    except BaseException:
        close_accepting(request)
        raise
    deadline = time.monotonic() + wait
    new_id = str(uuid.uuid4())

    def take() -> _Taken:
        # One session for all of it: who submits, the admission and insert, the answer.
        with service.sessions() as session:
            try:
                who = submitter if isinstance(submitter, Submitter) else submitter(session)
                try:
                    if oversize is not None:
                        raise oversize
                    accepted = service.create(
                        problem_id,
                        _parse_body(raw),
                        client=client_of(request, who.principal, service.settings),
                        idempotency_key=idempotency_key,
                        submission_id=new_id,
                        user_id=who.principal.user_id if who.principal is not None else None,
                        admit=who.admit,
                        received_at=arrived,
                        session=session,
                    )
                except ApiError as exc:
                    metrics.rejected(exc.body.error.code)
                    raise
            finally:
                # Until the row is stored, graders step aside (opened by the middleware).
                close_accepting(request)
            row = accepted.submission
            if row.status != "done" and wait > 0:
                return _Taken(accepted, who.principal, None)  # answered once it waited
            out = service.present(row, who.principal, None, accepted.ahead, session=session)
            return _Taken(accepted, who.principal, out)

    # Watched before the row is dispatched: a result stored at any time after is noticed, so a
    # new submission (known to be queued) needs no database read before the first notice.
    with COMPLETIONS.watch(new_id) as notice:
        taken = await in_accepting_thread(take)
        accepted, principal, out = taken.accepted, taken.principal, taken.out
        submission = accepted.submission
        if not accepted.replayed:
            metrics.accepted(submission.mode, time.perf_counter() - began)
            metrics.arrived((utcnow() - arrived).total_seconds())
        response.headers["Location"] = _location(submission.id)
        if accepted.replayed:
            response.headers["Idempotent-Replayed"] = "true"
        if out is None:
            if not accepted.replayed:
                await notice.wait(min(service.wait_poll_seconds, wait))
            if notice.result is not None:
                out = await in_thread(
                    service.present, notice.result.row, principal, notice.result.report
                )
            else:
                out = await _wait_done(service, submission.id, deadline, principal)
    if out is None:
        out = await in_thread(service.present, submission, principal, None, accepted.ahead)
    if out.status == "done":
        response.status_code = 200
        if out.finished_at is not None and wait > 0 and not accepted.replayed:
            metrics.answered((utcnow() - out.finished_at).total_seconds())
    return out


async def _wait_done(
    service: SubmissionService, submission_id: str, deadline: float, principal: Principal | None
) -> SubmissionOut | None:
    while True:
        # A notice (this process's grader, or a worker's over Redis) ends the wait at once; the
        # poll is a safety net.
        with COMPLETIONS.watch(submission_id) as notice:
            done = await in_thread(service.is_done, submission_id)
            if done is not None:
                return await in_thread(service.present, done, principal)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            await notice.wait(min(service.wait_poll_seconds, remaining))
            if notice.result is not None:
                return await in_thread(
                    service.present, notice.result.row, principal, notice.result.report
                )


@router.get(
    "/api/submissions/{submission_id}",
    response_model=SubmissionOut,
    responses=error_responses({404: "Unknown submission"}),
)
async def get_submission(
    submission_id: str, service: SubmissionServiceDep, principal: OptionalPrincipal
) -> SubmissionOut:
    """A submission and its result, as the caller may see it. Anonymous practice: anyone with
    its id; an account's practice: that account and administrators; work in an assignment: the
    student (as the feedback policy cuts it) and the course's staff. Others get 404, as for an
    unknown id."""
    submission = await in_thread(service.get, submission_id)
    if submission is None:
        raise not_found(submission_id)
    return await in_thread(service.present, submission, principal)


@router.get(
    "/api/submissions/{submission_id}/events",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {"text/event-stream": {}},
            "description": "Events `status` (queued, running, done), `queue` (while queued: "
            "`ahead` and `estimate_seconds`, sent when they change), `phase` (a grading phase "
            "finished, with its seconds), then `result` (the submission, as GET returns it).",
        },
        **error_responses({404: "Unknown submission"}),
    },
)
async def submission_events(
    submission_id: str,
    service: SubmissionServiceDep,
    principal: OptionalPrincipal,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> StreamingResponse:
    """Server-sent events read from the database, so they work whichever process grades.
    Whoever may read the submission (as GET); the ``result`` event is the submission as GET
    shows it to the caller, and the others carry no score."""
    row = await in_thread(service.get, submission_id)
    if row is None:
        raise not_found(submission_id)
    # 404 to whoever may not read it; a cut view hides the run's time, too.
    shown = await in_thread(service.present, row, principal)
    after = int(last_event_id) if last_event_id and last_event_id.isdigit() else 0
    return StreamingResponse(
        _event_stream(service, submission_id, after, principal, timed=shown.view == "visible"),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _event_stream(
    service: SubmissionService,
    submission_id: str,
    after: int,
    principal: Principal | None,
    *,
    timed: bool = True,
) -> AsyncIterator[str]:
    """``timed``: phase events carry their seconds (a sandbox run's time includes the hidden
    cases', so a view cut by a feedback policy does not show it)."""
    last_sent = time.monotonic()
    status: str | None = None
    place: QueuePlace | None = None
    with ACTIVITY.watch(submission_id) as activity:
        while True:
            batch = await in_thread(service.events_after, submission_id, after)
            for event_id, kind, data in batch:
                after = event_id
                if kind == "status":
                    status = json.loads(data).get("status", status)
                if kind == "result":
                    row = await in_thread(service.get, submission_id)
                    if row is None or json.loads(data).get("run", row.run) != row.run:
                        continue  # the result of a run that a regrade has since replaced
                    shown = await in_thread(service.present, row, principal)
                    data = shown.model_dump_json()
                elif kind == "phase" and not timed:
                    data = json.dumps({"phase": json.loads(data).get("phase")})
                yield f"id: {event_id}\nevent: {kind}\ndata: {data}\n\n"
                last_sent = time.monotonic()
                if kind == "result":
                    return
            if status in (None, "queued"):
                # Not in the event log (it changes as others are graded): sent when it moved.
                now_at = await in_thread(_queue_place, service, submission_id)
                if now_at is not None and now_at != place:
                    place = now_at
                    yield f"event: queue\ndata: {now_at.model_dump_json()}\n\n"
                    last_sent = time.monotonic()
            if time.monotonic() - last_sent > SSE_KEEPALIVE_SECONDS:
                yield ": keep-alive\n\n"
                last_sent = time.monotonic()
            # Woken by notices (this process's commits, or other processes' over Redis); the
            # read every wait_poll_seconds is a safety net for a lost one.
            await activity.wait(service.wait_poll_seconds)


def _queue_place(service: SubmissionService, submission_id: str) -> QueuePlace | None:
    row = service.get(submission_id)
    return service.place(row) if row is not None and row.status == QUEUED else None
