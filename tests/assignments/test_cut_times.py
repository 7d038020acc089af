"""A cut report carries no time of the run (issue 35, item 6).

Two submissions that differ only in how long they sleep in each hidden case: under ``summary``
and ``hidden`` every surface a student reads (the create response with ``?wait``, GET, the
event stream, the CSV of their history, the client's views of the result) gives each the same
time fields, apart from the request's arrival (``received_at``) and its acceptance
(``created_at``), which the submission does not control. Staff, under no policy, still see
when the run started and finished.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

import pytest

from tests.assignments.conftest import Course
from tests.assignments.test_client_view import view
from tests.assignments.test_feedback import surfaces
from tests.support.codes import CORRECT

# Public examples have d_model 4 and 6; every folder hidden case has d_model 8 or more.
SLEEPS_IN_HIDDEN = CORRECT.replace(
    "    batch, n_q, d_model = Q.shape\n",
    "    batch, n_q, d_model = Q.shape\n"
    "    if d_model >= 8:\n        __import__('time').sleep(SECONDS)\n",
)
assert SLEEPS_IN_HIDDEN != CORRECT
ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?")
TIME_FIELDS = ("started_at", "finished_at", "timings")


def sleeper(seconds: float) -> str:
    return f"SECONDS = {seconds}\n" + SLEEPS_IN_HIDDEN


def times_in(text: str) -> set[datetime]:
    return {datetime.fromisoformat(t.replace("Z", "+00:00")) for t in ISO_TIME.findall(text)}


def phase_events(text: str) -> list[dict[str, Any]]:
    return [
        json.loads(block.split("data: ", 1)[1].split("\n", 1)[0])
        for block in text.split("event: phase\n")[1:]
    ]


def submit(course: Course, assignment_id: int, seconds: float) -> dict[str, Any]:
    response = course.submit(assignment_id, sleeper(seconds), wait=25)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["verdict"] == "accepted", body
    return body


@pytest.mark.parametrize(("feedback", "level"), [("summary", "summary"), ("hidden", "verdict")])
def test_a_cut_report_gives_the_run_no_time(course: Course, feedback: str, level: str) -> None:
    created = course.create(feedback=feedback, max_attempts=None)
    reported: list[dict[str, Any]] = []
    arrivals: set[datetime] = set()
    for seconds in (0.0, 0.1):
        body = submit(course, created["id"], seconds)
        assert body["view"] == level
        for field in ("received_at", "created_at"):
            arrivals.add(datetime.fromisoformat(body[field].replace("Z", "+00:00")))
        shown = surfaces(course, body["id"], "student", created["id"]) | {
            "wait": json.dumps(body),
            "client text": view.to_text(view.result_renderable(body)),
            "client line": view.summary_line(body),
        }
        for where, text in shown.items():
            # The only times anywhere are arrivals and acceptances (the CSV lists every
            # submission's).
            assert times_in(text) <= arrivals, (where, times_in(text), arrivals)
            assert "graded in" not in text, where
        assert all(set(p) == {"phase"} for p in phase_events(shown["events"]))
        got = json.loads(shown["json"])
        reported.append({k: got[k] for k in TIME_FIELDS})
    assert reported[0] == reported[1] == {"started_at": None, "finished_at": None, "timings": {}}
    # The course's staff see the run's times (what the cut above removes).
    staff = course.api.get(
        f"/api/submissions/{body['id']}", headers=course.people.headers("instructor")
    ).json()
    assert staff["finished_at"] is not None and staff["timings"]
