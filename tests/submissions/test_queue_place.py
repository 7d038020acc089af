"""Students see the queue: a queued submission's answer, its GET and its event stream say how
many are ahead of it (and, once gradings have a pace, about how long); graders step aside while
submissions are being accepted (app/submissions/pressure.py)."""

from __future__ import annotations

import threading
from pathlib import Path

from fastapi.testclient import TestClient

from app.main import create_app
from app.submissions.pressure import PRESSURE, Pressure
from tests.instructors.conftest import make_settings
from tests.support.codes import sleeper

PATH = "/api/problems/multi-head-attention/submissions"


def test_a_queued_submission_says_how_many_are_ahead(tmp_path: Path) -> None:
    # One client's runs never overlap: its second and third wait behind its first.
    settings = make_settings(tmp_path / "data", workers=1, wall_seconds=10.0)
    with TestClient(create_app(settings)) as api:
        answers = [api.post(PATH, json={"code": sleeper(3.0, n)}).json() for n in range(3)]
        third = answers[2]
        assert third["status"] == "queued", third
        assert third["queue"]["ahead"] == 1, third
        read = api.get(f"/api/submissions/{third['id']}").json()
        assert read["status"] == "queued" and read["queue"]["ahead"] == 1, read
        with api.stream("GET", f"/api/submissions/{third['id']}/events") as stream:
            lines = []
            for line in stream.iter_lines():
                lines.append(line)
                if line.startswith("event: queue"):
                    break
        assert "event: queue" in lines, lines
        # Every mark of "being accepted" was closed (a leak would slow every grading).
        assert PRESSURE.accepting == 0


def test_graders_step_aside_while_a_submission_is_accepted() -> None:
    pressure = Pressure()
    with pressure.accepting_one():
        assert pressure.yield_to_acceptance(0.05) is False  # still accepting: gave up waiting
    assert pressure.yield_to_acceptance(0.05) is True
    done = threading.Event()
    entered = threading.Event()

    def accept() -> None:
        with pressure.accepting_one():
            entered.set()
            done.wait(5)

    thread = threading.Thread(target=accept)
    thread.start()
    entered.wait(5)
    threading.Timer(0.1, done.set).start()
    assert pressure.yield_to_acceptance(5.0) is True  # woken as soon as it was stored
    thread.join(5)
