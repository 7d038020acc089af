"""Checks a running docker-compose stack through its published port (used by .ci/stack-test.sh).

Standard library only, so any python3 on the host runs it. It fetches the problem, grades a
correct and a wrong solution, then SIGKILLs a worker container while it grades, starts it again,
and checks that every submission still ends ``done`` with the right verdict.

    python3 deploy/stack_check.py --base http://127.0.0.1:PORT --compose "docker-compose -p P ..." \
        [--problem multi-head-attention]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.problems.solutions import solutions  # noqa: E402  (standard library only)

# Chosen with --problem: the reference is the correct solution, the reference with the first
# fault of faults.toml switched on the wrong one, whose fault the grader must name.
PROBLEM = "multi-head-attention"
CODES: dict[str, str] = {}
WRONG_CODE = ""
EXPECTED = {"correct": "accepted", "wrong": "wrong_answer", "slow": "accepted"}


def choose(problem_id: str) -> None:
    global PROBLEM, WRONG_CODE
    found = solutions(ROOT / "problems" / problem_id)
    PROBLEM, WRONG_CODE = problem_id, found.wrong_code
    # "slow": correct, but slow to import: long enough to kill its worker while it grades.
    CODES.update(
        correct=found.correct,
        wrong=found.wrong,
        # 6 s: the kill check sees it running through `docker-compose exec psql`, a second or
        # two per look on a loaded host, and must still find it running after its kill.
        slow="import time\ntime.sleep(6)\n" + found.correct,
    )


def log(message: str) -> None:
    print(f"stack-check: {message}", flush=True)


def request(
    method: str, url: str, body: Any = None, timeout: float = 60, token: str | None = None
) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def submit(base: str, kind: str, n: int, wait: float = 0) -> dict[str, Any]:
    code = CODES[kind] + f"\n# stack test submission {n}\n"
    url = f"{base}/api/problems/{PROBLEM}/submissions" + (f"?wait={wait}" if wait else "")
    status, body = request("POST", url, {"code": code})
    if status not in (200, 202):
        raise AssertionError(f"POST {kind} #{n}: {status} {body}")
    result: dict[str, Any] = body
    return result


def get(base: str, submission_id: str) -> dict[str, Any]:
    status, body = request("GET", f"{base}/api/submissions/{submission_id}")
    if status != 200:
        raise AssertionError(f"GET {submission_id}: {status} {body}")
    result: dict[str, Any] = body
    return result


def wait_done(base: str, submission_id: str, seconds: float) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        body = get(base, submission_id)
        if body["status"] == "done":
            return body
        if time.monotonic() > deadline:
            raise AssertionError(f"{submission_id} not done after {seconds} s: {body['status']}")
        time.sleep(0.5)


def sh(command: list[str]) -> str:
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()


def psql(compose: list[str], sql: str) -> str:
    client = ["psql", "-U", "tensorjudge", "-d", "tensorjudge", "-Atc", sql]
    return sh([*compose, "exec", "-T", "postgres", *client])


def check_problem(base: str) -> None:
    status, problem = request("GET", f"{base}/api/problems/{PROBLEM}")
    assert status == 200, (status, problem)
    assert problem["id"] == PROBLEM, problem["id"]
    status, page = 0, None
    with urllib.request.urlopen(f"{base}/", timeout=30) as response:
        status, page = response.status, response.read().decode()
    assert status == 200 and "/static/dist/" in page, "the web page does not load its assets"
    log(f"GET /api/problems/{PROBLEM}: 200, '{problem['title']}'; GET /: 200 with assets")
    status, wheel = request("GET", f"{base}/api/client")
    assert status == 200, ("the image serves no client wheel", status, wheel)
    with urllib.request.urlopen(f"{base}{wheel['path']}", timeout=30) as response:
        assert response.status == 200 and response.read(2) == b"PK", "the wheel is not a zip"
    log(f"GET {wheel['path']}: 200 (pip install <server>{wheel['path']})")


def check_verdicts(base: str) -> None:
    good = submit(base, "correct", 0, wait=30)
    good = good if good["status"] == "done" else wait_done(base, good["id"], 120)
    assert good["verdict"] == "accepted", good["verdict"]
    bad = submit(base, "wrong", 1, wait=30)
    bad = bad if bad["status"] == "done" else wait_done(base, bad["id"], 120)
    codes = [d["code"] for d in bad["diagnoses"]]
    assert bad["verdict"] == "wrong_answer", bad["verdict"]
    assert WRONG_CODE in codes, codes
    log(f"correct: {good['verdict']} (score {good['score']})")
    log(f"with the mistake {WRONG_CODE}: {bad['verdict']}, diagnoses {codes}")


def call(method: str, url: str, body: Any = None, token: str | None = None) -> Any:
    """The answer's body; anything but a 2xx fails the check, naming the request."""
    status, answer = request(method, url, body, token=token)
    if not 200 <= status < 300:
        raise AssertionError(f"{method} {url}: {status} {answer}")
    return answer


def check_course(base: str, compose: list[str]) -> None:
    """A course on the stack: accounts, a course, an assignment with the summary policy, a
    student who joins by code and submits in it, and the gradebook that counts it."""
    created = sh([*compose, "exec", "-T", "api", "python", "-m", "app", "tokens", "create",
                  "--role", "admin", "--name", "stack-admin"])  # fmt: skip
    admin = created.splitlines()[-1].strip()
    password = "stack-check-password"
    tokens = {}
    for who, role in (("teacher", "instructor"), ("student", "member")):
        email = f"{who}@stack.example"
        body = {"email": email, "name": who.title(), "role": role, "password": password}
        call("POST", f"{base}/api/admin/users", body, admin)
        exchanged = call("POST", f"{base}/api/auth/token", {"email": email, "password": password})
        tokens[who] = exchanged["secret"]
    course = call("POST", f"{base}/api/courses", {"title": "Stack course"}, tokens["teacher"])
    due = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
    assignment = call(
        "POST",
        f"{base}/api/courses/{course['id']}/assignments",
        {
            "title": "Homework",
            "problems": [{"problem_id": PROBLEM, "points": 10}],
            "due_at": due,
            "feedback": "summary",
        },
        tokens["teacher"],
    )
    call("POST", f"{base}/api/courses/join", {"code": course["join_code"]}, tokens["student"])
    where = f"{base}/api/courses/{course['id']}/assignments/{assignment['id']}"
    done = call(
        "POST",
        f"{where}/problems/{PROBLEM}/submissions?wait=30",
        {"code": CODES["correct"]},
        tokens["student"],
    )
    done = done if done["status"] == "done" else wait_done(base, done["id"], 120)
    assert done["verdict"] == "accepted", done["verdict"]
    book = call("GET", f"{where}/gradebook", token=tokens["teacher"])
    log(f"course: the student's graded attempt shows {done.get('view')!r}; gradebook: {book}")
    assert done.get("view") == "summary", done.get("view")
    assert "10" in json.dumps(book), book


def worker_containers(compose: list[str]) -> list[str]:
    return [line for line in sh([*compose, "ps", "-q", "worker"]).splitlines() if line]


def still_running(compose: list[str], hostname: str, jobs: dict[str, str]) -> list[str]:
    """The submissions a killed worker was grading: its rows stay 'running' until the lease
    expires (seconds), so read right after the kill they are exactly the interrupted ones."""
    rows = psql(
        compose,
        f"SELECT id FROM submissions WHERE status = 'running' AND worker LIKE '%{hostname}:%'",
    )
    interrupted = [row for row in rows.splitlines() if row in jobs]
    assert interrupted, "the worker had finished everything before it was killed"
    return interrupted


def check_worker_kill(base: str, compose: list[str], count: int) -> None:
    kinds = ["slow", "wrong", "slow", "correct"]
    jobs: dict[str, str] = {}
    for n in range(count):
        kind = kinds[n % len(kinds)]
        jobs[submit(base, kind, 100 + n)["id"]] = kind
    victim = worker_containers(compose)[0]
    hostname = sh(["docker", "inspect", "-f", "{{.Config.Hostname}}", victim])
    pid = sh(["docker", "inspect", "-f", "{{.State.Pid}}", victim])  # asked now: no delay later
    # Wait until the victim is grading something, then SIGKILL it mid-grade.
    deadline = time.monotonic() + 120
    interrupted: list[str] = []
    while not interrupted:
        if time.monotonic() > deadline:
            raise AssertionError(f"worker {hostname} never started grading")
        rows = psql(
            compose,
            f"SELECT id FROM submissions WHERE status = 'running' AND worker LIKE '%{hostname}:%'",
        )
        # A slow one (6 s of sleep before grading starts): it is still running at the kill.
        interrupted = [row for row in rows.splitlines() if jobs.get(row) == "slow"]
        time.sleep(0.2)
    killed_at = time.monotonic()
    if os.geteuid() == 0:
        # A crash: the worker's main process dies by SIGKILL from outside (as the kernel's OOM
        # killer would); the restart policy must bring the container back by itself.
        os.kill(int(pid), signal.SIGKILL)
        interrupted = still_running(compose, hostname, jobs)
        log(f"SIGKILLed worker {hostname} (host pid {pid}) while it graded {interrupted}")
        while True:
            state = sh(["docker", "inspect", "-f", "{{.State.Status}} {{.RestartCount}}", victim])
            if state.startswith("running") and not state.endswith(" 0"):
                break
            if time.monotonic() > killed_at + 30:
                raise AssertionError(f"the restart policy did not restart {hostname}: {state}")
            time.sleep(0.2)
        log(f"its restart policy restarted it in {time.monotonic() - killed_at:.1f} s")
    else:
        # Without root: SIGKILL through the engine (which then counts it as stopped by hand, so
        # the restart policy does not apply), then start it again.
        sh(["docker", "kill", victim])
        interrupted = still_running(compose, hostname, jobs)
        sh(["docker", "start", victim])
        log(f"restarted worker {hostname} (SIGKILL, no grace) while it graded {interrupted}")
    results = {sid: wait_done(base, sid, 300) for sid in jobs}
    wrong = {
        sid: (jobs[sid], r["verdict"])
        for sid, r in results.items()
        if r["verdict"] != EXPECTED[jobs[sid]]
    }
    assert not wrong, f"wrong verdicts after the kill: {wrong}"
    total = psql(
        compose, "SELECT count(*), count(*) FILTER (WHERE status = 'done') FROM submissions"
    )
    assert total == f"{len(jobs) + 2}|{len(jobs) + 2}", f"rows (all|done): {total}"
    retried = {sid: results[sid]["attempts"] for sid in interrupted}
    log(
        f"all {len(jobs)} submissions done with the right verdicts "
        f"{time.monotonic() - killed_at:.1f} s after the kill; "
        f"attempts of the interrupted ones: {retried}"
    )
    assert all(a >= 2 for a in retried.values()), "an interrupted submission was not re-graded"


def prometheus_query(prometheus: str, query: str) -> float:
    """The value of an instant query that yields one number (0 when it yields nothing)."""
    url = f"{prometheus}/api/v1/query?" + urllib.parse.urlencode({"query": query})
    with urllib.request.urlopen(url, timeout=10) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    result = body["data"]["result"]
    return float(result[0]["value"][1]) if result else 0.0


def check_prometheus(prometheus: str, workers: int) -> None:
    """Prometheus scrapes the API and every worker, has the alert rules, and the counters of the
    gradings above moved (the API's and the workers' own)."""
    deadline = time.monotonic() + 120
    queries = {
        "api target up": ('sum(up{job="api"})', 1),
        "worker targets up": ('sum(up{job="worker"})', workers),
        "accepted (API)": ("sum(tensorjudge_submissions_accepted_total)", 1),
        "verdicts (workers)": ('sum(tensorjudge_verdicts_total{job="worker"})', 1),
        "sandbox stage (workers)": (
            'sum(tensorjudge_grading_stage_seconds_count{job="worker",stage="sandbox"})',
            1,
        ),
        "queue depth series": ("count(tensorjudge_queue_depth)", 1),
    }
    missing = dict(queries)
    while missing and time.monotonic() < deadline:
        for what, (query, least) in list(missing.items()):
            if prometheus_query(prometheus, query) >= least:
                del missing[what]
        if missing:
            time.sleep(2)
    assert not missing, f"Prometheus never showed: {sorted(missing)}"
    with urllib.request.urlopen(f"{prometheus}/api/v1/rules", timeout=10) as response:
        rules = json.load(response)["data"]["groups"]
    names = {rule["name"] for group in rules for rule in group["rules"]}
    expected = {
        "TensorJudgeQueueGrowing",
        "TensorJudgeOldestSubmissionStale",
        "TensorJudgeSandboxFailures",
    }
    assert expected <= names, names
    accepted = prometheus_query(prometheus, "sum(tensorjudge_submissions_accepted_total)")
    verdicts = prometheus_query(prometheus, "sum(tensorjudge_verdicts_total)")
    log(f"prometheus: {accepted:.0f} accepted, {verdicts:.0f} verdicts, rules {sorted(names)}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True, help="the API's published URL")
    parser.add_argument("--compose", required=True, help="the docker-compose command line")
    parser.add_argument("--count", type=int, default=12, help="submissions around the kill")
    parser.add_argument(
        "--problem", default="multi-head-attention", help="the problem to grade (a folder id)"
    )
    parser.add_argument("--prometheus", default=None, help="Prometheus's URL, when it runs")
    parser.add_argument("--workers", type=int, default=2, help="worker containers it scrapes")
    args = parser.parse_args()
    choose(args.problem)
    compose = shlex.split(args.compose)
    started = time.monotonic()
    check_problem(args.base)
    check_verdicts(args.base)
    log(f"first two gradings took {time.monotonic() - started:.1f} s")
    if args.prometheus:
        # Before the kill, while every worker runs: each is a scrape target that must be up.
        check_prometheus(args.prometheus, args.workers)
    check_worker_kill(args.base, compose, args.count)
    # After the kill check, which counts every submission row.
    check_course(args.base, compose)
    log(f"passed in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
