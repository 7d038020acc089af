"""A class at its deadline: 300 students submitting in the last minutes before it, graded by the
real server (embedded workers, the real sandbox), then the gradebook read and rendered.

    .venv/bin/python bench/deadline.py [--students 300] [--per-student 2] [--timeout 170]
        [--due-in 3] [--only steady|rush]

Two runs, each on a fresh server: ``steady`` (the assignment due in ten minutes) and ``rush``
(the due date set ``--due-in`` seconds after the burst starts, so it falls inside it).

Each starts ``python -m app serve`` on 127.0.0.1 with a temporary data dir, makes a course with
``--students`` students (each with a personal access token) and a 5-problem assignment with a
later deadline (30 s after the due date, half credit), and has every student, each its own HTTP
client (connected first, as a class's open pages are), submit ``--per-student`` solutions (a
mix of correct ones and each problem's first fault) as fast as the server accepts them,
retrying a 503/429 after its Retry-After, through the assignment's own submission route (which
takes each graded attempt's number and checks the dates). A submission is *on time* when its
client started sending it before the due date (client and server share the clock): one that is
refused (409, or a 503/429) or whose stored time is after the due date is counted against the
server. It waits until every accepted
submission is graded and checks that nothing was lost: every accepted submission has exactly
one result, with the verdict its code deserves, and the gradebook counts every attempt. Then it
times the gradebook API (best and median of five) and, when Chromium is there, the gradebook
page.

Prints the figures and writes bench/results/deadline-latest.json. Exits 1 if anything was lost
or the gradebook is over a second.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import select  # noqa: E402
from sqlalchemy.orm import Session, sessionmaker  # noqa: E402

from app.assignments.models import Assignment, AssignmentProblem  # noqa: E402
from app.auth.accounts import create_user  # noqa: E402
from app.auth.sessions import COOKIE, start_session  # noqa: E402
from app.auth.tokens import issue_token  # noqa: E402
from app.core.config import Settings  # noqa: E402
from app.courses.models import Course, Membership  # noqa: E402
from app.db.base import utcnow  # noqa: E402
from app.db.engine import make_engine  # noqa: E402
from app.problems.loader import load_problems  # noqa: E402
from app.problems.solutions import solutions  # noqa: E402
from app.submissions.models import Grading, Submission  # noqa: E402

RESULTS = ROOT / "bench" / "results"
PROBLEMS = (
    "multi-head-attention", "causal-attention", "masked-attention", "grouped-query-attention",
    "softmax-backward",
)  # fmt: skip
BUDGET_SECONDS = 1.0
CHROMIUM = "/usr/bin/chromium"
READY_TIMEOUT_SECONDS = 180


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_server(root: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = dict(os.environ, GRADER_DATA_DIR=str(root / "data"), GRADER_HOST="127.0.0.1")
    log = (root / "server.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    # Ready, not only alive: a class meets a server that has been up, not one still priming its
    # sandbox (copying the runtime tree competes with every request for the first seconds).
    began = time.monotonic()
    deadline = began + READY_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {(root / 'server.log').read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                print(f"server ready in {time.monotonic() - began:.1f} s", flush=True)
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.terminate()
    raise SystemExit(f"server not ready in {READY_TIMEOUT_SECONDS} s")


# The time every time rule reads: the request's arrival where the tree stores it, else the insert.
ARRIVAL = getattr(Submission, "received_at", Submission.created_at)
LATE_WINDOW = timedelta(seconds=30)


def seed(sessions: sessionmaker[Session], students: int) -> dict[str, Any]:
    """A course, its instructor, ``students`` students with tokens, the assignment."""
    with sessions() as session:
        course = Course(title="Deadline class", join_code=None)
        session.add(course)
        session.flush()
        teacher = create_user(session, "teacher@class.example", "Teacher", "instructor")
        session.add(Membership(course_id=course.id, user_id=teacher.id, role="instructor"))
        _, teacher_token = issue_token(session, teacher.id, "bench")
        people: list[tuple[int, str]] = []
        for i in range(students):
            user = create_user(session, f"s{i:03d}@class.example", f"Student {i:03d}", "member")
            session.add(Membership(course_id=course.id, user_id=user.id, role="student",
                                   section=f"S{i % 10}"))  # fmt: skip
            _, token = issue_token(session, user.id, "bench")
            people.append((user.id, token))
        assignment = Assignment(
            course_id=course.id,
            title="Attention, due in ten minutes",
            due_at=utcnow() + timedelta(minutes=10),
            attempt_penalties="[0, 0.1]",
        )
        session.add(assignment)
        session.flush()
        set_due(session, assignment, assignment.due_at)
        for position, problem_id in enumerate(PROBLEMS):
            session.add(AssignmentProblem(assignment_id=assignment.id, problem_id=problem_id,
                                          points=10.0, position=position))  # fmt: skip
        secret, _ = start_session(session, teacher.id, timedelta(hours=1))
        session.commit()
        return {
            "course": course.id,
            "assignment": assignment.id,
            "teacher_token": teacher_token,
            "teacher_cookie": secret,
            "students": people,
        }


def plan(students: int, per_student: int) -> list[list[tuple[str, str]]]:
    """Each student's submissions, in order: (problem, kind); about a third wrong."""
    out = []
    for i in range(students):
        mine = []
        for k in range(per_student):
            problem = PROBLEMS[(i + k) % len(PROBLEMS)]
            mine.append((problem, "wrong" if (i + 2 * k) % 3 == 0 else "correct"))
        out.append(mine)
    return out


def set_due(session: Session, assignment: Assignment, due: Any) -> None:
    """Due at ``due``, then half credit for ``LATE_WINDOW`` (a late one is accepted, so an
    on-time one counted late shows)."""
    assignment.due_at = due
    assignment.late_deadlines = json.dumps(
        [{"until": (due + LATE_WINDOW).isoformat(), "credit": 0.5}]
    )


async def submit_all(
    url: str,
    world: dict[str, Any],
    work: list[list[tuple[str, str]]],
    codes: dict[str, Any],
    before_burst: Any,
) -> dict[str, Any]:
    """Every student at once, each its own client (connected before the burst); their
    submissions one after another. ``before_burst()`` runs once every client is connected and
    returns the due date (epoch seconds)."""
    sent: list[dict[str, Any]] = []
    latencies: list[float] = []
    retries = 0
    connected = asyncio.Event()
    ready = 0
    answered_at: list[float] = []

    async def student(index: int) -> None:
        nonlocal retries, ready
        user_id, token = world["students"][index]
        headers = {"Authorization": f"Bearer {token}"}
        limits = httpx.Limits(max_connections=1)
        async with httpx.AsyncClient(
            base_url=url, headers=headers, timeout=60, limits=limits
        ) as client:
            (await client.get("/healthz")).raise_for_status()
            ready += 1
            if ready == len(work):
                connected.set()
            await connected.wait()
            for n, (problem, kind) in enumerate(work[index], start=1):
                code = getattr(codes[problem], kind) + f"\n# student {index} attempt {n}\n"
                first_sent = time.time()
                statuses = []
                while True:
                    start = time.perf_counter()
                    r = await client.post(
                        f"/api/courses/{world['course']}/assignments/{world['assignment']}"
                        f"/problems/{problem}/submissions",
                        json={"code": code},
                        headers={"Idempotency-Key": f"s{index}-a{n}"},
                    )
                    latencies.append(time.perf_counter() - start)
                    answered_at.append(time.perf_counter())
                    statuses.append(r.status_code)
                    if r.status_code in (429, 503):
                        retries += 1
                        await asyncio.sleep(float(r.headers.get("Retry-After", "1")))
                        continue
                    break
                entry = {"user_id": user_id, "problem": problem, "kind": kind, "attempt": n,
                         "sent": first_sent, "statuses": statuses, "body": r.json()}  # fmt: skip
                if r.status_code == 202:
                    entry["id"] = r.json()["id"]
                sent.append(entry)

    tasks = [asyncio.create_task(student(i)) for i in range(len(work))]
    await connected.wait()
    due = await asyncio.to_thread(before_burst)
    print("burst begins", flush=True)  # a profiler attached to the server starts here
    began = time.perf_counter()
    began_wall = time.time()
    await asyncio.gather(*tasks)
    return {
        "sent": sent,
        "latencies": latencies,
        "retries": retries,
        "began": began,
        "began_wall": began_wall,
        "due": due,
        "all_answered_s": max(answered_at) - began,
    }


def wait_graded(
    sessions: sessionmaker[Session], ids: list[str], timeout: float
) -> list[tuple[str, str, Any, Any, str | None]]:
    deadline = time.monotonic() + timeout
    while True:
        with sessions() as session:
            rows = session.execute(
                select(Submission.id, Submission.status, Submission.created_at,
                       Submission.finished_at, Submission.verdict)
                .where(Submission.id.in_(ids))
            ).all()  # fmt: skip
        done = sum(1 for r in rows if r[1] == "done")
        if done == len(ids):
            return [tuple(r) for r in rows]  # type: ignore[misc]
        if time.monotonic() > deadline:
            raise SystemExit(f"only {done} of {len(ids)} graded after {timeout:.0f} s")
        time.sleep(0.5)


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def server_cpu(pid: int) -> dict[str, float]:
    """CPU seconds the server has used, in all and on its event loop (its main thread): on a
    machine others load too, what accepting costs the server is its own CPU time, not the wall
    time it waited for a core. (Python does not name its threads for the OS, so the other
    threads, request threads and graders, are not told apart here.)"""

    def seconds(stat: Path) -> float:
        fields = stat.read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS

    return {
        "all": seconds(Path(f"/proc/{pid}/stat")),
        "event_loop": seconds(Path(f"/proc/{pid}/task/{pid}/stat")),
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def time_gradebook(url: str, world: dict[str, Any]) -> tuple[list[float], dict[str, Any]]:
    path = f"/api/courses/{world['course']}/assignments/{world['assignment']}/gradebook"
    headers = {"Authorization": f"Bearer {world['teacher_token']}"}
    runs = []
    body: dict[str, Any] = {}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
        for _ in range(5):
            start = time.perf_counter()
            r = client.get(path)
            runs.append(time.perf_counter() - start)
            r.raise_for_status()
            body = r.json()
    return runs, body


def page_render(url: str, world: dict[str, Any], students: int) -> dict[str, float] | str:
    """The gradebook page in headless Chromium: its own marks for the API read and the render."""
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} missing"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return "playwright not installed"
    path = f"/courses/{world['course']}/assignments/{world['assignment']}/gradebook"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=["--no-sandbox", "--disable-gpu"])  # fmt: skip
        try:
            context = browser.new_context(base_url=url, viewport={"width": 1366, "height": 900})
            context.add_cookies([{"name": COOKIE, "value": world["teacher_cookie"], "url": url}])
            page = context.new_page()
            out: dict[str, float] = {}
            # The first load starts a cold browser (and fetches the page's scripts); the second
            # is what an instructor reloading the gradebook waits for.
            for label in ("cold", "warm"):
                start = time.perf_counter()
                page.goto(path)
                page.locator("#gradebook-table tbody tr").nth(students - 1).wait_for(timeout=30_000)
                wall = time.perf_counter() - start
                fetch_ms, render_ms, total_ms = page.evaluate(
                    """() => {
                    const t = (name) => performance.getEntriesByName(name)[0].startTime;
                    return [t("gradebook-fetched") - t("gradebook-fetch-start"),
                            t("gradebook-rendered") - t("gradebook-fetched"),
                            t("gradebook-rendered")];
                }"""
                )
                out |= {
                    f"{label}_api_read_ms": round(fetch_ms),
                    f"{label}_render_ms": round(render_ms),
                    f"{label}_navigation_to_table_ms": round(total_ms),
                    f"{label}_wall_s": round(wall, 2),
                }
            return out
        finally:
            browser.close()


def run(
    students: int, per_student: int, timeout: float, due_in: float | None, page: bool = True
) -> dict[str, Any]:
    """One burst on a fresh server. ``due_in``: the due date that many seconds after the burst
    starts (None: ten minutes ahead, as seeded)."""
    settings = Settings()
    loaded = load_problems(settings.problems_dir, settings.extra_problem_dirs)
    codes = {p: solutions(loaded[p].directory) for p in PROBLEMS}
    expected = {"correct": "accepted", "wrong": "wrong_answer"}
    with tempfile.TemporaryDirectory(prefix="tj-deadline-") as tmp:
        root = Path(tmp)
        proc, url = start_server(root)
        engine = make_engine(Settings(data_dir=root / "data"))
        try:
            sessions = sessionmaker(engine, expire_on_commit=False)
            world = seed(sessions, students)
            work = plan(students, per_student)
            print(f"{students} students, {students * per_student} submissions, server {url}, "
                  f"due {f'in {due_in:g} s' if due_in is not None else 'in 10 min'}",
                  flush=True)  # fmt: skip

            def before_burst() -> float:
                if due_in is None:
                    with sessions() as session:
                        assignment = session.get(Assignment, world["assignment"])
                        assert assignment is not None
                        return assignment.due_at.timestamp()
                due = utcnow() + timedelta(seconds=due_in)
                with sessions() as session:
                    assignment = session.get(Assignment, world["assignment"])
                    assert assignment is not None
                    set_due(session, assignment, due)
                    session.commit()
                return due.timestamp()

            cpu_before: list[dict[str, float]] = []

            def burst_starts() -> float:
                due = before_burst()
                cpu_before.append(server_cpu(proc.pid))
                return due

            burst = asyncio.run(submit_all(url, world, work, codes, burst_starts))
            cpu_after = server_cpu(proc.pid)
            cpu = {k: round(cpu_after[k] - cpu_before[0][k], 2) for k in cpu_after}
            began = burst["began"]
            accepted_s = time.perf_counter() - began
            sent = burst["sent"]
            accepted = [a for a in sent if "id" in a]
            ids = [a["id"] for a in accepted]
            rows = wait_graded(sessions, ids, timeout)
            wall = time.perf_counter() - began
            with sessions() as session:
                gradings = session.scalars(
                    select(Grading.submission_id).where(Grading.submission_id.in_(ids))
                ).all()
                arrival: dict[str, Any] = dict(
                    session.execute(
                        select(Submission.id, ARRIVAL).where(Submission.id.in_(ids))
                    ).all()
                )
            by_id = {r[0]: r for r in rows}
            wrong_verdicts = [a for a in accepted if by_id[a["id"]][4] != expected[a["kind"]]]
            to_verdict = [(r[3] - r[2]).total_seconds() for r in rows]
            first = min(r[2] for r in rows)
            last = max(r[3] for r in rows)
            due = burst["due"]
            on_time = [a for a in sent if a["sent"] < due]
            refused_on_time = [a for a in on_time if a["statuses"][-1] != 202]
            overloaded_on_time = [a for a in on_time if {429, 503} & set(a["statuses"])]
            counted_late = [a for a in on_time if "id" in a and arrival[a["id"]].timestamp() > due]
            graded_by = max(r[3] for r in rows).timestamp() - burst["began_wall"]
            api_runs, book = time_gradebook(url, world)
            counted = sum(c["attempts_used"] for s in book["students"] for c in s["cells"])
            render = page_render(url, world, students) if page else "skipped"
            server_log = (root / "server.log").read_text(errors="replace")
        finally:
            engine.dispose()
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
    planned = students * per_student
    latencies = burst["latencies"]
    stamp_lags = [
        arrival[a["id"]].timestamp() - a["sent"] for a in accepted if a["statuses"] == [202]
    ]
    figures: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cpus": os.cpu_count(),
        "load_average_at_start": LOAD_AT_START[0],
        "load_average_at_end": os.getloadavg()[0],
        "students": students,
        "due_in_s": due_in,
        "submissions_planned": planned,
        "submissions_accepted": len(accepted),
        "sent_before_due": len(on_time),
        "on_time_refused": len(refused_on_time),
        "on_time_refused_by_status": _by_status(refused_on_time),
        "on_time_answered_429_503": len(overloaded_on_time),
        "on_time_counted_late": len(counted_late),
        # How far past the due date those were stamped (the server's stamp minus the due date).
        "counted_late_ms_after_due": [
            round((arrival[a["id"]].timestamp() - due) * 1000, 1) for a in counted_late
        ],
        # The client's send (its first try) to the server's stamp: how late stamps run.
        "send_to_stamp_ms": {
            "p50": round(percentile(stamp_lags, 0.5) * 1000, 1) if stamp_lags else None,
            "p99": round(percentile(stamp_lags, 0.99) * 1000, 1) if stamp_lags else None,
        },
        "retries_after_429_503": burst["retries"],
        "graded": sum(1 for r in rows if r[1] == "done"),
        "gradings_rows": len(gradings),
        "wrong_verdicts": len(wrong_verdicts),
        "attempts_in_gradebook": counted,
        "all_answered_in_s": round(burst["all_answered_s"], 2),
        "all_accepted_in_s": round(accepted_s, 2),
        "all_graded_in_s": round(graded_by, 2),
        "wall_s": round(wall, 2),
        "graded_per_s": round(len(rows) / max((last - first).total_seconds(), 1e-9), 1),
        # The server's own CPU from the burst's start until every request was answered.
        "server_cpu_s_until_all_answered": cpu,
        "server_cpu_ms_per_request": round(cpu["all"] * 1000 / max(len(latencies), 1), 2),
        "accept_latency_ms": {
            "p50": round(percentile(latencies, 0.5) * 1000, 1),
            "p95": round(percentile(latencies, 0.95) * 1000, 1),
            "p99": round(percentile(latencies, 0.99) * 1000, 1),
        },
        "submit_to_verdict_s": {
            "p50": round(percentile(to_verdict, 0.5), 2),
            "p95": round(percentile(to_verdict, 0.95), 2),
        },
        "gradebook_api_s": {
            "best": round(min(api_runs), 3),
            "median": round(statistics.median(api_runs), 3),
        },
        "gradebook_page": render,
        "server_errors_logged": server_log.count("Traceback"),
    }
    lost = len(accepted) - figures["graded"]
    figures["lost"] = lost
    figures["ok"] = (
        lost == 0
        and len(gradings) == len(accepted)
        and not wrong_verdicts
        and counted == len(accepted)
        and not refused_on_time
        and not counted_late
        and min(api_runs) < BUDGET_SECONDS
    )
    return figures


def _by_status(entries: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for entry in entries:
        error = entry["body"].get("error", {}) if isinstance(entry["body"], dict) else {}
        key = f"{entry['statuses'][-1]} {error.get('code', '')}".strip()
        out[key] = out.get(key, 0) + 1
    return out


LOAD_AT_START = os.getloadavg()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--per-student", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=170.0, help="seconds to wait for grading")
    parser.add_argument(
        "--due-in", type=float, default=3.0, help="rush: the due date this long into the burst"
    )
    parser.add_argument("--only", choices=("steady", "rush"), default=None)
    parser.add_argument("--no-page", action="store_true", help="skip the gradebook page")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    for name, due_in in (("steady", None), ("rush", args.due_in)):
        if args.only not in (None, name):
            continue
        global LOAD_AT_START
        LOAD_AT_START = os.getloadavg()
        results[name] = run(
            args.students, args.per_student, args.timeout, due_in,
            page=name == "steady" and not args.no_page,
        )  # fmt: skip
        print(json.dumps({name: results[name]}, indent=2), flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "deadline-latest.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0 if all(r["ok"] for r in results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
