"""The embedded pool takes queued work when it becomes claimable, not at its next poll: with the
poll interval at its 10 s maximum, a submission queued behind its own client's running one, and
a submission handed back to the queue by a failing grader, are each taken within a second."""

from __future__ import annotations

import itertools

from tests.submissions.conftest import MakeClient
from tests.support.api import running_span, wait_done
from tests.support.codes import CORRECT, sleeper

URL = "/api/problems/multi-head-attention/submissions"
POLL_SECONDS = 10


def test_a_clients_next_submission_starts_when_its_running_one_ends(make_client: MakeClient):
    # Two workers: the second submission's dispatch wakes the idle one, which finds the client
    # busy; the end of the first grading is what makes it claimable.
    api = make_client(poll_seconds=POLL_SECONDS, workers=2, wall_seconds=10.0)
    ids = [api.post(URL, json={"code": sleeper(0.5, n)}).json()["id"] for n in range(3)]
    done = [wait_done(api, submission_id, timeout=60) for submission_id in ids]
    assert [d["verdict"] for d in done] == ["accepted"] * 3
    spans = [running_span(d) for d in done]
    for (_, ended), (started, _) in itertools.pairwise(spans):
        gap = (started - ended).total_seconds()
        assert 0 <= gap < 1, f"the next submission waited {gap:.2f} s for a poll"


def test_a_retried_submission_is_taken_again_without_a_poll(make_client: MakeClient):
    # A real infrastructure failure: the docker backend with no Docker engine behind it.
    api = make_client(
        poll_seconds=POLL_SECONDS,
        sandbox="docker",
        docker_url="unix:///nonexistent/docker.sock",
        max_attempts=3,
    )
    submission_id = api.post(URL, json={"code": CORRECT}).json()["id"]
    done = wait_done(api, submission_id, timeout=POLL_SECONDS * 0.5)
    assert done["verdict"] == "internal_error"
    assert done["attempts"] == 3
