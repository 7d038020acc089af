"""``/metrics`` after real gradings: the API process grading itself (embedded), and an API with a
Celery worker process sharing the metrics directory, whose counts the API's scrape must include.
The JSON log lines of the same gradings are read from the processes' logs."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.codes import CORRECT, WRONG
from tests.support.services import (
    AppProcess,
    PostgresCluster,
    celery_env,
    free_port,
    redis_server,
    serve,
    wait_for,
)

TOKEN = "scrape-token-for-the-tests"
SUBMIT = "/api/problems/multi-head-attention/submissions"


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(scraped: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str):
    return scraped.get((name, frozenset(labels.items())), 0.0)


def scrape(base: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    response = httpx.get(f"{base}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return samples(response.text)


def graded(base: str, code: str) -> dict[str, object]:
    response = httpx.post(f"{base}{SUBMIT}?wait=30", json={"code": code}, timeout=60)
    assert response.status_code == 200, response.text
    body: dict[str, object] = response.json()
    return body


def log_lines(path: Path) -> list[dict[str, object]]:
    found = []
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("{") and '"logger":"tensorjudge.submissions"' in line:
            found.append(json.loads(line))
    return found


def declared_too_large(base: str) -> int:
    """Status of a submission declaring a body far over the server's ceiling, none of it sent
    (the ceiling answers from the headers alone)."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(
            f"POST {SUBMIT} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {10**12}\r\n\r\n".encode()
        )
        status_line = conn.makefile("rb").readline().decode()
    return int(status_line.split()[1])


def check_logs(path: Path, submission_id: str, verdict: str) -> None:
    lines = [line for line in log_lines(path) if line["submission"] == submission_id]
    assert [line["state"] for line in lines] == ["queued", "running", "done"] or [
        line["state"] for line in lines
    ] == ["running", "done"]
    done = lines[-1]
    assert done["problem"] == "multi-head-attention"
    assert done["verdict"] == verdict
    stages = done["stages"]
    assert isinstance(stages, dict)
    assert {"queue", "prepare", "sandbox", "compare", "diagnose", "store", "end_to_end"} <= set(
        stages
    )
    assert all(seconds >= 0 for seconds in stages.values())


@pytest.mark.timeout(180)
def test_embedded_metrics_count_gradings_and_refusals(tmp_path: Path):
    metrics_port = free_port()
    env = {
        "GRADER_DATA_DIR": str(tmp_path / "data"),
        "GRADER_METRICS_DIR": str(tmp_path / "metrics"),
        "GRADER_METRICS_TOKEN": TOKEN,
        "GRADER_METRICS_PORT": str(metrics_port),
        "GRADER_LOG_FORMAT": "json",
        "GRADER_WORKERS": "1",
    }
    log = tmp_path / "api.log"
    server, base = serve(env, log)
    try:
        before = scrape(base)
        assert value(before, "tensorjudge_queue_depth") == 0
        ok = graded(base, CORRECT)
        wrong = graded(base, WRONG)
        refused = httpx.post(f"{base}{SUBMIT}", json={"code": ""})
        assert refused.status_code == 422
        assert declared_too_large(base) == 413
        after = scrape(base)

        assert value(after, "tensorjudge_submissions_accepted_total", mode="submit") == 2
        assert value(after, "tensorjudge_submissions_rejected_total", reason="empty_code") == 1
        assert value(after, "tensorjudge_requests_refused_total", reason="body_too_large") == 1
        problem = "multi-head-attention"
        for verdict in ("accepted", "wrong_answer"):
            assert value(after, "tensorjudge_verdicts_total", problem=problem, verdict=verdict) == 1
        diagnosed = {
            dict(labels)["code"]
            for (name, labels), count in after.items()
            if name == "tensorjudge_diagnoses_total" and count > 0
        }
        assert diagnosed, "the wrong submission's diagnosis is counted"
        for stage in ("accept", "queue", "prepare", "sandbox", "compare", "diagnose", "store"):
            assert value(after, "tensorjudge_grading_stage_seconds_count", stage=stage) == 2, stage
        assert value(after, "tensorjudge_grading_stage_seconds_count", stage="answer") == 2
        assert value(after, "tensorjudge_grading_stage_seconds_sum", stage="sandbox") > 0
        assert value(after, "tensorjudge_queue_depth") == 0
        assert value(after, "tensorjudge_queue_oldest_age_seconds") == 0

        # The same figures on the metrics port, without credentials.
        port = samples(httpx.get(f"http://127.0.0.1:{metrics_port}/metrics").text)
        assert value(port, "tensorjudge_submissions_accepted_total", mode="submit") == 2

        check_logs(log, str(ok["id"]), "accepted")
        check_logs(log, str(wrong["id"]), "wrong_answer")
        assert "def multi_head_attention" not in log.read_text(), "no code in the logs"
    finally:
        server.stop()


def test_metrics_refuse_other_callers(tmp_path: Path):
    env = {"GRADER_DATA_DIR": str(tmp_path / "data"), "GRADER_METRICS_TOKEN": TOKEN}
    server, base = serve(env, tmp_path / "api.log")
    try:
        assert httpx.get(f"{base}/metrics").status_code == 401
        wrong = httpx.get(f"{base}/metrics", headers={"Authorization": "Bearer not-the-token"})
        assert wrong.status_code == 403
        assert wrong.json()["error"]["code"] == "forbidden"
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_celery_worker_counts_reach_the_api_scrape(postgres: PostgresCluster, tmp_path: Path):
    database_url = postgres.create_database("tensorjudge_metrics")
    with redis_server() as redis_url:
        worker_port = free_port()
        env = celery_env(
            database_url,
            redis_url,
            tmp_path / "data",
            workers="1",
            metrics_dir=str(tmp_path / "metrics"),
            metrics_token=TOKEN,
            log_format="json",
        )
        server, base = serve(env, tmp_path / "api.log")
        worker_log = tmp_path / "worker.log"
        worker = AppProcess(
            ["worker"], env | {"GRADER_METRICS_PORT": str(worker_port)}, worker_log
        ).start()
        try:
            wait_for(
                lambda: httpx.get(f"http://127.0.0.1:{worker_port}/metrics").status_code == 200,
                60,
                "the worker's metrics port",
            )
            ok = graded(base, CORRECT)
            wrong = graded(base, WRONG)
            after = scrape(base)
            problem = "multi-head-attention"
            # Gradings happen only in the worker process: the API's scrape sums its files.
            for verdict in ("accepted", "wrong_answer"):
                assert (
                    value(after, "tensorjudge_verdicts_total", problem=problem, verdict=verdict)
                    == 1
                )
            assert value(after, "tensorjudge_grading_stage_seconds_count", stage="sandbox") == 2
            # Counted in the API process.
            assert value(after, "tensorjudge_submissions_accepted_total", mode="submit") == 2
            assert value(after, "tensorjudge_grading_stage_seconds_count", stage="accept") == 2
            # The worker's own port: the same directory, so the same totals.
            own = samples(httpx.get(f"http://127.0.0.1:{worker_port}/metrics").text)
            assert (
                value(own, "tensorjudge_verdicts_total", problem=problem, verdict="accepted") == 1
            )
            check_logs(worker_log, str(ok["id"]), "accepted")
            check_logs(worker_log, str(wrong["id"]), "wrong_answer")
            queued = [
                line for line in log_lines(tmp_path / "api.log") if line["submission"] == ok["id"]
            ]
            assert [line["state"] for line in queued] == ["queued"]
        finally:
            worker.stop()
            server.stop()
