"""Fair share in the scale-out mode: PostgreSQL, Redis, an API process and two Celery worker
processes. One client's flood delays another client by about one grading, the flood is graded
each exactly once and one at a time, and the two clients are graded side by side."""

from __future__ import annotations

import itertools
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.support.api import latency, overlapping, running_span, wait_done
from tests.support.codes import CORRECT, sleeper
from tests.support.services import AppProcess, PostgresCluster, celery_env, redis_server, serve

URL = "/api/problems/multi-head-attention/submissions"


def client_at(address: str) -> httpx.Client:
    """Requests from another loopback address: the API tells clients apart by address."""
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=30)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_flood_delays_another_client_by_one_grading_on_celery_workers(
    postgres: PostgresCluster, tmp_path: Path
):
    database_url = postgres.create_database("tensorjudge_fair_celery")
    with redis_server() as redis_url:
        env = celery_env(
            database_url,
            redis_url,
            tmp_path / "data",
            workers="1",
            wall_seconds="10",
            rate_limit="100000",
            sweep_seconds="1",
            poll_seconds="0.1",
        )
        server, base = serve(env, tmp_path / "api.log")
        workers = [AppProcess(["worker"], env, tmp_path / f"worker{i}.log").start() for i in (0, 1)]
        try:
            with client_at("127.0.0.2") as flooder, client_at("127.0.0.3") as honest:
                # Both workers take a first job before the flood, so it meets two of them.
                warm = [
                    honest.post(base + URL, json={"code": CORRECT + f"\n# warm {n}\n"})
                    for n in range(2)
                ]
                for response in warm:
                    wait_done(base, response.json()["id"], timeout=120)
                flood = []
                for n in range(10):
                    response = flooder.post(base + URL, json={"code": sleeper(1.0, n)})
                    assert response.status_code == 202, response.text
                    flood.append(response.json()["id"])
                response = honest.post(base + URL, json={"code": CORRECT})
                assert response.status_code == 202, response.text
                mine = response.json()["id"]
            result = wait_done(base, mine, timeout=120)
            flooded = [wait_done(base, sid, timeout=300) for sid in flood]
        except BaseException:
            print(server.log(), *(worker.log() for worker in workers))
            raise
        finally:
            for worker in workers:
                worker.stop()
            server.stop()

    waited = latency(result)
    started, finished = running_span(result)
    own = (finished - started).total_seconds()
    durations = sorted((end - start).total_seconds() for start, end in map(running_span, flooded))
    one_flood_grading = durations[len(durations) // 2]
    print(
        f"\n[fair celery] honest latency {waited:.2f} s (its own grading {own:.2f} s) "
        f"beside a flood of 10 x "
        f"{one_flood_grading:.2f} s gradings, 2 workers"
    )
    assert result["verdict"] == "accepted"
    assert waited < 1.5 * one_flood_grading, (waited, one_flood_grading)
    assert any(overlapping(running_span(result), running_span(b)) for b in flooded), "side by side"

    assert all(b["verdict"] == "accepted" and b["attempts"] == 1 for b in flooded)
    spans = sorted(map(running_span, flooded))
    together = [(a, b) for a, b in itertools.pairwise(spans) if overlapping(a, b)]
    assert not together, f"the flood's runs overlapped: {together}"
    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:
            gradings = conn.execute(
                text("SELECT submission_id, count(*) FROM gradings GROUP BY submission_id")
            ).all()
    finally:
        engine.dispose()
    counted = {sid: count for sid, count in gradings if sid in {*flood, mine}}
    assert counted == {sid: 1 for sid in [*flood, mine]}, "each graded exactly once"
