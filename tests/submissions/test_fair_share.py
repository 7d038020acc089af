"""Fair share in the embedded mode, through the real API and sandbox with two workers: one
client's flood delays another client by about one grading, and a client's runs never overlap
while different clients' do."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from app.main import create_app
from tests.submissions.conftest import grader_settings
from tests.support.api import latency, overlapping, running_span, wait_done
from tests.support.codes import CORRECT, sleeper

URL = "/api/problems/multi-head-attention/submissions"


@contextmanager
def two_clients(tmp_path: Path, workers: int) -> Iterator[tuple[TestClient, TestClient]]:
    """Two clients (two addresses) of one embedded server."""
    settings = grader_settings(tmp_path / "data", None, workers=workers, wall_seconds=10.0)
    with TestClient(create_app(settings), client=("10.0.0.1", 1000)) as flooder:
        # One grading from a third address first: the sandbox is built on first use (seconds
        # on a loaded machine), which would be counted in whichever grading came first.
        warm = TestClient(flooder.app, client=("10.0.0.3", 1000)).post(
            f"{URL}?wait=30", json={"code": CORRECT}
        )
        assert warm.status_code == 200 and warm.json()["verdict"] == "accepted", warm.text
        yield flooder, TestClient(flooder.app, client=("10.0.0.2", 1000))


@pytest.fixture
def app_clients(tmp_path: Path) -> Iterator[tuple[TestClient, TestClient]]:
    """Two clients of one embedded server with two grading workers."""
    with two_clients(tmp_path, workers=2) as clients:
        yield clients


def submit(api: TestClient, code: str) -> str:
    response = api.post(URL, json={"code": code})
    assert response.status_code == 202, response.text
    submission_id: str = response.json()["id"]
    return submission_id


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_flood_delays_another_client_by_at_most_one_grading(
    app_clients: tuple[TestClient, TestClient],
):
    flooder, honest = app_clients
    flood = [submit(flooder, sleeper(1.0, n)) for n in range(12)]
    mine = submit(honest, CORRECT)
    result = wait_done(honest, mine, timeout=120)
    flooded = [wait_done(flooder, sid, timeout=120) for sid in flood]

    waited = latency(result)
    started, finished = running_span(result)
    own = (finished - started).total_seconds()
    durations = [(end - start).total_seconds() for start, end in map(running_span, flooded)]
    one_flood_grading = sorted(durations)[len(durations) // 2]
    print(
        f"\n[fair] honest latency {waited:.2f} s (its own grading {own:.2f} s) "
        f"beside a flood of 12 x "
        f"{one_flood_grading:.2f} s gradings, 2 workers"
    )
    assert result["verdict"] == "accepted"
    # Before fair share it waited for the whole flood: ~12 gradings / 2 workers.
    assert waited < 1.5 * one_flood_grading, (waited, one_flood_grading)
    assert sum(running_span(b)[1] < finished for b in flooded) <= 2, "overtaken by the flood"

    # Nothing lost: the whole flood is graded, each exactly once, one at a time.
    assert all(b["verdict"] == "accepted" and b["attempts"] == 1 for b in flooded)
    with flooder.app.state.sessions() as session:  # type: ignore[attr-defined]
        gradings = session.execute(
            text("SELECT submission_id, count(*) FROM gradings GROUP BY submission_id")
        ).all()
    counts = dict(gradings)
    assert {sid: counts.get(sid) for sid in [*flood, mine]} == {sid: 1 for sid in [*flood, mine]}
    assert len(counts) == len(flood) + 2  # and the warm-up's
    spans = sorted(map(running_span, flooded))
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans)), spans


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_clients_runs_never_overlap_while_two_clients_run_side_by_side(
    app_clients: tuple[TestClient, TestClient],
):
    first, second = app_clients
    # All of the first client's, then all of the second's: first in, first out would run the
    # first client's two oldest together.
    ids = {
        "first": [submit(first, sleeper(0.7, n)) for n in range(3)],
        "second": [submit(second, sleeper(0.7, 10 + n)) for n in range(3)],
    }
    spans = {
        who: sorted(running_span(wait_done(first, sid, timeout=120)) for sid in sids)
        for who, sids in ids.items()
    }
    for who, own in spans.items():
        together = [(a, b) for a, b in itertools.pairwise(own) if overlapping(a, b)]
        assert not together, f"{who}: two runs overlapped: {together}"
    assert any(overlapping(a, b) for a in spans["first"] for b in spans["second"]), spans


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_with_one_worker_a_newcomer_waits_for_one_flood_grading_not_the_flood(tmp_path: Path):
    # No idle worker to spare: the newcomer is served in the round being graded, so it waits
    # for the flood's running grading and no more.
    with two_clients(tmp_path, workers=1) as (flooder, honest):
        flood = [submit(flooder, sleeper(1.0, n)) for n in range(6)]
        result = wait_done(honest, submit(honest, CORRECT), timeout=120)
        flooded = [wait_done(flooder, sid, timeout=120) for sid in flood]
    waited = latency(result)
    started, finished = running_span(result)
    own = (finished - started).total_seconds()
    spans = sorted(map(running_span, flooded))
    first = (spans[0][1] - spans[0][0]).total_seconds()
    print(
        f"\n[fair 1 worker] honest latency {waited:.2f} s (its own grading {own:.2f} s) "
        f"beside a flood of 6 gradings of ~1 s (the first, running when it came: {first:.2f} s)"
    )
    assert result["verdict"] == "accepted"
    assert sum(end <= finished for _, end in spans) == 1, "served right after the first"
    # Taken as soon as that one ended; before fair queueing it waited for all six.
    assert (started - spans[0][1]).total_seconds() < 0.5, (started, spans[0])
    assert waited < first + own + 0.5, (waited, first, own)
    assert all(b["verdict"] == "accepted" for b in flooded)
