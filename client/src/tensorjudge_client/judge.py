"""``Judge``: one server, through its public HTTP API only."""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from httpx_sse import EventSource

from tensorjudge_client import view
from tensorjudge_client.credentials import stored_token
from tensorjudge_client.errors import JudgeError, unreachable
from tensorjudge_client.models import (
    Assignment,
    Attempts,
    Course,
    Problem,
    ProblemSummary,
    Records,
    Result,
)
from tensorjudge_client.source import function_source
from tensorjudge_client.transport import (
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    DEFAULT_URL,
    Transport,
    backoff,
    server_url,
)
from tensorjudge_client.view import queue_text

# Called with each event of a submission's stream: ("status", {"status": "running", ...}),
# ("phase", {"phase": "sandbox", "seconds": 0.3}), then ("result", {...}).
EventHandler = Callable[[str, dict[str, Any]], None]
DEFAULT_WAIT = 600.0
Solution = Callable[..., Any] | str
# An assignment by its id (its course is looked up among mine) or as ``judge.assignments()``
# listed it.
AssignmentRef = int | Assignment


def default_token(url: str) -> str | None:
    """``TJ_TOKEN``, else the token ``tj login`` stored for ``url``."""
    return os.environ.get("TJ_TOKEN") or stored_token(url)


def _path(*parts: str | int) -> str:
    return "/" + "/".join(quote(str(p), safe="") if i % 2 else str(p) for i, p in enumerate(parts))


def _segment(part: str | int) -> str:
    return "/" + quote(str(part), safe="")


def _cases(problem_id: str, course: int | None) -> str:
    """The catalog's cases of a problem (its administrators'), or a course's own."""
    scope = ("api",) if course is None else ("api/courses", course)
    return _path(*scope, "problems", problem_id) + "/test-cases"


def _assignment(course: int, assignment: int) -> str:
    return _path("api/courses", course, "assignments", assignment)


def _listing(course: int | None) -> str:
    return "/api/submissions" if course is None else _path("api/courses", course) + "/submissions"


class Judge:
    """A TensorJudge server. ``url``: default ``TJ_URL``, else the local server; ``token``:
    a personal access token, default ``TJ_TOKEN``, else the one ``tj login`` stored for this
    server (anonymous practice needs none)."""

    def __init__(
        self,
        url: str | None = None,
        *,
        token: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
    ) -> None:
        self.url = server_url(url or os.environ.get("TJ_URL") or DEFAULT_URL)
        self.http = Transport(
            self.url,
            token=token if token is not None else default_token(self.url),
            timeout=timeout,
            retries=retries,
        )
        self._problems: dict[str, Problem] = {}
        self._courses_of: dict[int, int] = {}  # assignment id -> its course's id

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Judge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Judge({self.url!r})"

    # -- account ---------------------------------------------------------------------------------

    def me(self) -> dict[str, Any] | None:
        """The account this client's token belongs to (None when anonymous)."""
        found = self.http.json("GET", "/api/auth/me")
        user = found.get("user") if isinstance(found, dict) else None
        return user if isinstance(user, dict) else None

    def create_token(self, email: str, password: str, name: str) -> dict[str, Any]:
        """A new personal access token for email and password: {"token": {...}, "secret"}."""
        found = self.http.json(
            "POST",
            "/api/auth/token",
            json={"email": email, "password": password, "name": name},
            idempotent=False,
        )
        if not isinstance(found, dict) or not isinstance(found.get("secret"), str):
            raise JudgeError("the server's answer has no token")
        return found

    def revoke_token(self, token_id: int) -> None:
        self.http.request("DELETE", _path("api/account/tokens", token_id), idempotent=True)

    # -- problems --------------------------------------------------------------------------------

    def problems(self) -> Records[ProblemSummary]:
        """Every problem: ``p.id``, ``p.title``, ``p.difficulty``, ``p.summary`` (or
        ``p["id"]``); shown as a table."""
        found = self.http.json("GET", "/api/problems")
        rows = [p for p in found if isinstance(p, dict)] if isinstance(found, list) else []
        return Records("Problems", [ProblemSummary(p) for p in rows])

    def problem(self, problem_id: str) -> Problem:
        problem = Problem(self.http.json("GET", _path("api/problems", problem_id)))
        self._problems[problem_id] = problem
        return problem

    # -- submissions -----------------------------------------------------------------------------

    def code_for(self, problem_id: str, solution: Solution) -> str:
        """The code sent for ``solution``: text as it is; a function as its source with what it
        uses, plus an alias when it is not named like the problem's entry point."""
        if isinstance(solution, str):
            return solution
        code = function_source(solution)
        problem = self._problems.get(problem_id) or self.problem(problem_id)
        entry = problem.function_name
        name = getattr(solution, "__name__", None)
        if entry and name and name != entry:
            code += f"\n\n{entry} = {name}\n"
        return code

    def submit(
        self,
        problem_id: str,
        solution: Solution,
        *,
        examples_only: bool = False,
        on_event: EventHandler | None = None,
        wait: float = DEFAULT_WAIT,
        assignment: AssignmentRef | None = None,
        course: int | None = None,
        force: bool = False,
    ) -> Result:
        """Grade ``solution`` (a function or code text) and wait for the result. With
        ``assignment`` it is a graded attempt there (``examples_only`` never costs one), shown
        as the assignment's feedback policy allows; code identical to an earlier graded attempt
        is refused (``identical_resubmission``, nothing spent) unless ``force``. Network
        failures are retried with the same ``Idempotency-Key``: one submission, however many
        tries."""
        code = self.code_for(problem_id, solution)
        body: dict[str, object] = {"code": code, "mode": "examples" if examples_only else "submit"}
        if force:
            body["force"] = True
        key = f"tj-{uuid.uuid4()}"
        scope = (
            "/api/problems"
            if assignment is None
            else _assignment(*self._where(assignment, course)) + "/problems"
        )
        created = self.http.json(
            "POST",
            scope + _segment(problem_id) + "/submissions",
            json=body,
            headers={"Idempotency-Key": key},
            idempotent=True,
        )
        status = str(created.get("status", "queued"))
        if on_event is None:
            on_event = _queue_notice()  # a notebook or script still sees where it stands
        on_event("status", {"status": status})
        if isinstance(created.get("queue"), dict):
            on_event("queue", created["queue"])
        if status == "done":
            return Result(created)
        return self.follow(str(created["id"]), on_event=on_event, wait=wait, shown=status)

    def run(
        self,
        problem_id: str,
        solution: Solution,
        *,
        on_event: EventHandler | None = None,
        wait: float = DEFAULT_WAIT,
        assignment: AssignmentRef | None = None,
        course: int | None = None,
    ) -> Result:
        """The page's "Run examples": graded on the public cases only (in ``assignment``: its
        public cases, never an attempt)."""
        return self.submit(
            problem_id,
            solution,
            examples_only=True,
            on_event=on_event,
            wait=wait,
            assignment=assignment,
            course=course,
        )

    def result(self, submission_id: str) -> Result:
        return Result(self.http.json("GET", _path("api/submissions", submission_id)))

    def follow(
        self,
        submission_id: str,
        *,
        on_event: EventHandler | None = None,
        wait: float = DEFAULT_WAIT,
        shown: str | None = None,
    ) -> Result:
        """Reads the submission's event stream until its result, reconnecting after a dropped
        connection where it left off (``Last-Event-ID``). ``shown``: the status the caller has
        shown already (the submission's answer said it): the stream tells its story from the
        start, and its statuses up to that one are not passed on again."""
        deadline = time.monotonic() + wait
        path = _path("api/submissions", submission_id) + "/events"
        last_id = ""
        failures = 0
        while time.monotonic() < deadline:
            headers = {"Accept": "text/event-stream", "Cache-Control": "no-cache"}
            if last_id:
                headers["Last-Event-ID"] = last_id
            try:
                with self.http.stream(path, headers) as response:
                    for event in EventSource(response).iter_sse():
                        failures = 0  # the connection works again: a later cut starts afresh
                        last_id = event.id or last_id
                        try:
                            data = json.loads(event.data) if event.data else {}
                        except ValueError:
                            continue
                        if event.event == "result":
                            return Result(data)
                        if event.event == "status" and shown is not None:
                            status = data.get("status") if isinstance(data, dict) else None
                            if _no_later(status, shown):
                                shown = None if status == shown else shown
                                continue
                            shown = None
                        if on_event is not None and isinstance(data, dict):
                            on_event(event.event, data)
                        if time.monotonic() > deadline:
                            break
            except httpx.TransportError as exc:
                failures += 1
                if failures > self.http.retries:
                    raise unreachable(self.url, exc) from exc
                self.http.sleep(backoff(failures - 1))
                continue
            # The stream ended without a result (a proxy cut it): the stored state decides.
            current = self.result(submission_id)
            if current.get("status") == "done":
                return current
            self.http.sleep(backoff(0))
        raise JudgeError(
            f"no result for submission {submission_id} after {wait:g} s; "
            f"read it later with `tj result {submission_id}`"
        )

    # -- my courses and assignments (a token) ---------------------------------------------------

    def courses(self) -> Records[Course]:
        """The courses I am in, with my role there."""
        found = self.http.json("GET", "/api/courses", params={"limit": 200})
        items = found.get("items") if isinstance(found, dict) else None
        rows = [c for c in items if isinstance(c, dict)] if isinstance(items, list) else []
        return Records("My courses", [Course(c) for c in rows])

    def assignments(self, course: int | None = None) -> Records[Assignment]:
        """The assignments of ``course``, or of all my courses, by due date; for a student
        the released ones, each with their own due date, credit now and attempts."""
        ids = [course] if course is not None else [c.course_id for c in self.courses()]
        found: list[Assignment] = []
        for course_id in ids:
            rows = self.http.json("GET", _path("api/courses", course_id) + "/assignments")
            for row in rows if isinstance(rows, list) else []:
                if isinstance(row, dict):
                    found.append(Assignment(row))
                    self._courses_of[int(row["id"])] = course_id
        return Records("Assignments", found, row=view.assignment_row)

    def assignment(self, assignment: AssignmentRef, *, course: int | None = None) -> Assignment:
        return Assignment(self.http.json("GET", _assignment(*self._where(assignment, course))))

    def attempts(
        self,
        assignment: AssignmentRef,
        problem_id: str | None = None,
        *,
        course: int | None = None,
    ) -> Records[Attempts]:
        """My attempts used and left on ``problem_id`` (default: each problem of the
        assignment), the credit a submission earns now and its rule (on time, late with its
        credit, closed), and the feedback I will be shown."""
        where = self._where(assignment, course)
        if problem_id is not None:
            problems = [problem_id]
        elif isinstance(assignment, Assignment):
            problems = assignment.problem_ids
        else:
            problems = self.assignment(assignment, course=where[0]).problem_ids
        found = [
            Attempts(
                self.http.json("GET", _assignment(*where) + "/problems" + _segment(p) + "/attempts")
            )
            for p in problems
        ]
        return Records("Attempts", found, row=view.attempts_row)

    def _where(self, assignment: AssignmentRef, course: int | None) -> tuple[int, int]:
        """(course id, assignment id); the course found among mine when not given."""
        if isinstance(assignment, Assignment):
            return assignment.course_id, assignment.assignment_id
        if course is not None:
            return course, assignment
        if assignment not in self._courses_of:
            self.assignments()
        if assignment not in self._courses_of:
            raise JudgeError(
                f"no assignment {assignment} in your courses (is it released yet?)", status=404
            )
        return self._courses_of[assignment], assignment

    # -- instructor submissions (TJ_TOKEN) -------------------------------------------------------

    def submissions(
        self,
        *,
        limit: int = 50,
        cursor: str | None = None,
        course: int | None = None,
        **filters: Any,
    ) -> dict[str, Any]:
        """Practice submissions, or with ``course`` that course's (for its staff), newest
        first: ``{"items": [...], "next_cursor": ...}``. ``filters``: problem, verdict,
        diagnosis, since, until (ISO 8601), user_id, mode, status."""
        params = {k: v for k, v in filters.items() if v is not None}
        params["limit"] = limit
        if cursor:
            params["cursor"] = cursor
        found: dict[str, Any] = self.http.json("GET", _listing(course), params=params)
        return found

    def regrade(self, submission_id: str) -> dict[str, Any]:
        """Grade a finished submission again on the current test set."""
        queued: dict[str, Any] = self.http.json(
            "POST", _path("api/submissions", submission_id) + "/regrade", idempotent=False
        )
        return queued

    def regrade_matching(self, *, course: int | None = None, **filters: Any) -> dict[str, Any]:
        """Every submission the filters match (as ``submissions`` takes them), graded again;
        refused (422) when more match than the server's cap."""
        params = {k: v for k, v in filters.items() if v is not None}
        counts: dict[str, Any] = self.http.json(
            "POST",
            "/api/regrades" if course is None else _listing(course) + "/regrade",
            params=params,
            idempotent=False,
        )
        return counts

    # -- stored test cases (TJ_TOKEN): the catalog's (admins), or ``course``'s own (its staff) --

    def cases(self, problem_id: str, *, course: int | None = None) -> dict[str, Any]:
        listing: dict[str, Any] = self.http.json("GET", _cases(problem_id, course))
        return listing

    def add_case(
        self,
        problem_id: str,
        file: str | Path,
        *,
        name: str | None = None,
        visibility: str | None = None,
        weight: float | None = None,
        course: int | None = None,
    ) -> dict[str, Any]:
        """From a ``.npz`` (one array per parameter, optionally ``expected``) or a ``.json``
        file (a whole POST body, or just the inputs); the keywords override the file's. With
        ``course``, the case is that course's own (it grades only the course's assignments)."""
        path = Path(file)
        fields = {
            k: v
            for k, v in (("name", name), ("visibility", visibility), ("weight", weight))
            if v is not None
        }
        url = _cases(problem_id, course)
        if path.suffix.lower() == ".npz":
            if "name" not in fields:
                fields["name"] = path.stem
            added: dict[str, Any] = self.http.json(
                "POST",
                url,
                files={"file": (path.name, path.read_bytes(), "application/octet-stream")},
                data={k: str(v) for k, v in fields.items()},
            )
            return added
        try:
            body = json.loads(path.read_text())
        except ValueError as exc:
            raise JudgeError(f"{path} is neither an .npz nor valid JSON: {exc}") from None
        if not isinstance(body, dict):
            raise JudgeError(f"{path}: expected a JSON object")
        if "inputs" not in body:
            body = {"inputs": body}
        body.setdefault("name", path.stem)
        body.update(fields)
        added = self.http.json("POST", url, json=body)
        return added

    def remove_case(
        self, problem_id: str, case: str | int, *, course: int | None = None
    ) -> dict[str, Any]:
        """By id or by the name of a stored case (of the catalog, or of ``course``)."""
        case_id = self._case_id(problem_id, case, course)
        removed: dict[str, Any] = self.http.json(
            "DELETE", _cases(problem_id, course) + f"/{case_id}"
        )
        return removed

    def _case_id(self, problem_id: str, case: str | int, course: int | None) -> int:
        if isinstance(case, int) or case.isdigit():
            return int(case)
        for row in self.cases(problem_id, course=course).get("cases", []):
            if row.get("name") == case and row.get("id") is not None:
                return int(row["id"])
        raise JudgeError(
            f"no stored test case named {case!r} in {problem_id} (built-in cases live in the "
            "problem folder and cannot be removed here)",
            status=404,
        )


# A submission's statuses in the order it goes through them (a retry starts again at queued).
LIFECYCLE = {"queued": 0, "running": 1, "done": 2}


def _queue_notice() -> EventHandler:
    """Prints a queued submission's place (on stderr) each time it changes, nothing else."""
    last = ""

    def notice(kind: str, data: dict[str, Any]) -> None:
        nonlocal last
        if kind == "queue":
            text = queue_text(data)
            if text != last:
                last = text
                print(text, file=sys.stderr, flush=True)

    return notice


def _no_later(status: object, shown: str) -> bool:
    """Whether ``status`` comes no later than ``shown`` in a submission's life."""
    return (
        isinstance(status, str)
        and status in LIFECYCLE
        and shown in LIFECYCLE
        and LIFECYCLE[status] <= LIFECYCLE[shown]
    )
