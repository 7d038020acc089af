"""Network failures and back-pressure against real servers: a lost answer is retried with the
same Idempotency-Key (one submission), 429/503 Retry-After are obeyed, nothing waits forever."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from tensorjudge_client import Judge, JudgeError, ServerUnreachable
from tensorjudge_client.transport import retry_after_seconds

from tests.client.conftest import PROBLEM, Grader, create_token, start_grader
from tests.client.proxy import cutting_proxy, silent_server
from tests.support.codes import CORRECT, SLOW_CORRECT, variant

pytestmark = pytest.mark.timeout(300)


def submissions_since(grader: Grader, since: datetime) -> int:
    stats = httpx.get(
        f"{grader.url}/api/problems/{PROBLEM}/stats",
        params={"since": since.isoformat()},
        headers={"Authorization": f"Bearer {grader.token}"},
        timeout=30,
    )
    stats.raise_for_status()
    count: int = stats.json()["submissions"]
    return count


def test_an_answer_lost_mid_submit_is_retried_into_one_submission(
    tmp_path: Path, client_wheel_dir: Path
):
    # A server of its own: the count below must not see other tests' submissions.
    server = start_grader(tmp_path)
    try:
        server.token = create_token(server.data_dir, "lost-answer")
        port = urlsplit(server.url).port
        assert port is not None
        with cutting_proxy(port, b"POST ") as proxy, Judge(proxy.url) as judge:
            result = judge.submit(PROBLEM, variant("correct", 1616))
            assert proxy.cut == 1, "the proxy lost the first answer"
            posts = [r for r in proxy.requests if r.startswith(b"POST ")]
            assert len(posts) == 2, "the client sent the POST again"
            keys = {
                line
                for r in posts
                for line in r.split(b"\r\n")
                if line.lower().startswith(b"idempotency-key:")
            }
            assert len(keys) == 1, f"both tries carry the same Idempotency-Key: {keys}"
        assert result.accepted
        since = datetime(2000, 1, 1, tzinfo=UTC)
        assert submissions_since(server, since) == 1, "the retry created no second submission"
    finally:
        server.process.stop()


def test_without_retries_the_lost_answer_is_a_clear_error(grader: Grader):
    port = urlsplit(grader.url).port
    assert port is not None
    with cutting_proxy(port, b"POST ") as proxy, Judge(proxy.url, retries=0) as judge:
        with pytest.raises(ServerUnreachable, match="cannot reach the TensorJudge server"):
            judge.submit(PROBLEM, variant("correct", 1617))
        assert proxy.cut == 1


def test_a_cut_event_stream_resumes_where_it_stopped(grader: Grader):
    port = urlsplit(grader.url).port
    assert port is not None
    events: list[tuple[str, dict[str, object]]] = []
    # Slow to import: the stream is cut after its first status event, long before the result.
    code = SLOW_CORRECT + "\n# resumed stream\n"
    with (
        cutting_proxy(port, b"GET /api/submissions/", cut_after=b"event: status") as proxy,
        Judge(proxy.url) as judge,
    ):
        result = judge.submit(
            PROBLEM, code, on_event=lambda kind, data: events.append((kind, data))
        )
    assert result.accepted
    assert proxy.cut == 1
    streams = [r.lower() for r in proxy.requests if b"/events" in r.split(b"\r\n")[0]]
    assert len(streams) == 2, streams
    assert b"last-event-id:" not in streams[0]
    assert re.search(rb"\r\nlast-event-id: \d+\r\n", streams[1]), "resumed after the last event"
    statuses = [data["status"] for kind, data in events if kind == "status"]
    assert statuses.count("running") == 1, f"no event is seen twice: {statuses}"


def test_each_status_is_shown_once_in_order(grader: Grader):
    # An idle grader takes a submission as it is accepted, so its answer may already say
    # "running" while its event stream starts from "queued": shown once each, never backwards.
    statuses: list[str] = []

    def seen(kind: str, data: dict[str, object]) -> None:
        if kind == "status":
            statuses.append(str(data["status"]))

    with Judge(grader.url) as judge:
        result = judge.submit(PROBLEM, variant("correct", 2718), on_event=seen)
    assert result.accepted
    order = ["queued", "running", "done"]
    assert statuses == sorted(set(statuses), key=order.index), statuses


def test_every_request_has_a_timeout():
    with silent_server() as url, Judge(url, timeout=1, retries=1) as judge:
        started = time.monotonic()
        with pytest.raises(ServerUnreachable, match="timed out"):
            judge.problems()
        assert time.monotonic() - started < 10


class Sleeps:
    """The client's waits, recorded while still really waiting."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)
        time.sleep(seconds)


def test_429_retry_after_is_honoured(tmp_path: Path, client_wheel_dir: Path):
    server = start_grader(tmp_path, rate_limit="1", rate_window_seconds="3")
    try:
        with Judge(server.url) as judge:
            sleeps = Sleeps()
            judge.http.sleep = sleeps
            assert judge.submit(PROBLEM, variant("correct", 1)).accepted
            started = time.monotonic()
            second = judge.submit(PROBLEM, variant("correct", 2))
            assert second.accepted
            assert sleeps.seconds and 1 <= sleeps.seconds[0] <= 3, sleeps.seconds
            assert time.monotonic() - started >= sleeps.seconds[0]
        with Judge(server.url) as impatient:
            impatient.http.max_retry_wait = 0.5
            with pytest.raises(JudgeError, match="rate limited") as refused:
                impatient.submit(PROBLEM, variant("correct", 3))
            assert refused.value.status == 429
    finally:
        server.process.stop()


def test_503_queue_full_retry_after_is_honoured(tmp_path: Path, client_wheel_dir: Path):
    server = start_grader(tmp_path, queue_max="1", workers="1")
    try:
        token = create_token(server.data_dir, "queue-filler")
        # Another client (a token) fills the one place in the queue for about three seconds.
        first = httpx.post(
            f"{server.url}/api/problems/{PROBLEM}/submissions",
            json={"code": SLOW_CORRECT},
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        assert first.status_code == 202
        with Judge(server.url) as judge:
            sleeps = Sleeps()
            judge.http.sleep = sleeps
            result = judge.submit(PROBLEM, CORRECT)
        assert result.accepted
        assert 5 in sleeps.seconds, f"waited {sleeps.seconds}, not the server's Retry-After: 5"
    finally:
        server.process.stop()


def test_retry_after_is_read_as_seconds_or_as_a_date():
    assert retry_after_seconds(httpx.Response(429, headers={"Retry-After": "3"})) == 3.0
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=20), usegmt=True)
    assert 15 < retry_after_seconds(httpx.Response(503, headers={"Retry-After": later})) <= 20
    assert retry_after_seconds(httpx.Response(503, headers={"Retry-After": "soon"})) == 1.0
