"""Grading a class, in real Chromium on a served app: one journey through the insight panel
of a 60-student assignment (issue 39's "done when"), and the checks that journey leaves out.

The class, every program in it graded for real by the served app's own sandbox (14 gradings),
each student's attempts then stored with the real report of their exact code, as a worker
leaves it:

- 46 students hand in one of six realistic wrong programs of the grading corpus (7 or 8 each,
  names and comments aside the same code: what more than 10 % of a class write alike is
  how it is commonly written, not evidence); the first three of each group were wrong twice;
- 6 hand in their own version of one of six independently written correct solutions
  (tests/similarity/solutions.py), each after a wrong first attempt;
- 2 hand in planted copies of one of those (every name changed, their own statements moved,
  comments rewritten: ``planted_copy``);
- 6 never submit.

Screenshots in tests/artifacts/web/; docs/images/ holds copies (docs/courses.md)."""

from __future__ import annotations

import csv
import io
import random
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect
from sqlalchemy.orm import Session, sessionmaker

from app.core.config import Settings
from app.db.base import utcnow
from app.db.engine import make_engine
from app.submissions.models import Submission
from tests.gradebook.factories import MHA, attempt_row, make_assignment
from tests.similarity.solutions import INDEPENDENT, own_version, planted_copy
from tests.support.browser_session import World, signed_in
from tests.support.codes import corpus_source
from tests.support.people import People, add_student, seed_people
from tests.web.conftest import browser, serving, web_assets  # noqa: F401
from tests.web.helpers import element_shot, shot

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]
HOUR = timedelta(hours=1)
DAY = 24 * HOUR
# Realistic wrong answers (tests/grading/corpus) and how many students hand each in last.
WRONG = {
    "reshape_order_consistent": 8,  # heads split as (d_k, h)
    "no_scale": 8,
    "missing_wo": 8,
    "scale_dmodel": 7,
    "softmax_wrong_axis": 8,
    "pair_missing_wo_scale_dmodel": 7,
}
TARGET = "reshape-order"  # the diagnosis the instructor writes to
SOURCE = "correct_reshape"  # the most common way to write it, and the copies' source
COPIES = ("planted_copy_1", "planted_copy_2")
NEVER = 6


@dataclass
class Graded:
    verdict: str
    score: float
    report: str


@dataclass
class ClassWorld(World):
    # Student key -> the program their latest attempt is a version of.
    latest: dict[str, str]
    # Student key -> their best grader score (the assignment scores the best attempt).
    best: dict[str, float]


def grade_for_real(url: str, people: People, programs: dict[str, str]) -> dict[str, str]:
    """Each program graded once by the served app's sandbox (practice, as the instructor): the
    submission ids."""

    def one(code: str) -> str:
        with httpx.Client(base_url=url, headers=people.headers("instructor"), timeout=60) as web:
            r = web.post(f"/api/problems/{MHA}/submissions?wait=30", json={"code": code})
            assert r.status_code in (200, 202), r.text
            found = r.json()
            for _ in range(600):
                if found["status"] == "done":
                    return str(found["id"])
                time.sleep(0.2)
                found = web.get(f"/api/submissions/{found['id']}").json()
        raise AssertionError(f"not graded: {found}")

    with ThreadPoolExecutor(4) as pool:
        return dict(zip(programs, pool.map(one, programs.values()), strict=True))


def graded_of(sessions: sessionmaker[Session], submission_id: str) -> Graded:
    with sessions() as session:
        row = session.get(Submission, submission_id)
        assert row is not None and row.report and row.verdict and row.score is not None
        return Graded(row.verdict, row.score, row.report)


@pytest.fixture(scope="module")
def world(web_assets: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClassWorld]:  # noqa: F811
    root = tmp_path_factory.mktemp("class-journey")
    env = {"GRADER_SIMILARITY_POLL_SECONDS": "0.2", "GRADER_RATE_LIMIT": "10000"}
    with serving(root, **env) as server:
        engine = make_engine(Settings(data_dir=root / "data"))
        sessions = sessionmaker(engine, expire_on_commit=False)
        people = seed_people(sessions)
        rng = random.Random(39)
        programs = {name: corpus_source(f"{name}.py") for name in WRONG}
        programs |= {
            f"correct_{k}": own_version(code, rng, printing=False)
            for k, code in INDEPENDENT.items()
        }
        for key in COPIES:
            programs[key] = planted_copy(programs[SOURCE], rng)
        ids = grade_for_real(server.url, people, programs)
        graded = {name: graded_of(sessions, sid) for name, sid in ids.items()}
        for name in programs:
            expected = "wrong_answer" if name in WRONG else "accepted"
            assert graded[name].verdict == expected, (name, graded[name].verdict)
        now = utcnow()
        a = make_assignment(
            sessions, people.courses["course"], [(MHA, 10.0)],
            title="Attention", release_at=now - 12 * DAY, due_at=now + 2 * DAY,
        )  # fmt: skip
        latest: dict[str, str] = {}
        best: dict[str, float] = {}
        rows = []
        wrong_names = list(WRONG)

        def attempt(key: str, program: str, n: int, at: timedelta) -> None:
            row = attempt_row(a, people.users[key], MHA, n, now - at, 0.0, code=programs[program])
            result = graded[program]
            row.verdict, row.score, row.report = result.verdict, result.score, result.report
            rows.append(row)
            latest[key] = program
            best[key] = max(best.get(key, 0.0), result.score)

        # Wrong last: the first three of each group wrong twice (stuck), last week or before.
        serial = 0
        for name, count in WRONG.items():
            for i in range(count):
                key = f"{name}_{i}"
                add_student(sessions, people, key)
                serial += 1
                if i < 3:
                    attempt(key, wrong_names[(serial + 1) % len(wrong_names)], 1, 9 * DAY)
                    attempt(key, name, 2, 8 * DAY if i == 0 else 2 * DAY)
                else:
                    attempt(key, name, 1, (1 + i % 5) * DAY)
        # Right last, after one wrong attempt; the planted copies at once.
        for k in INDEPENDENT:
            key = f"correct_{k}"
            add_student(sessions, people, key)
            attempt(key, wrong_names[len(key) % len(wrong_names)], 1, 10 * DAY)
            attempt(key, key, 2, 3 * DAY)
        for key in COPIES:
            add_student(sessions, people, key)
            attempt(key, key, 1, 2 * DAY)
        for i in range(NEVER):
            add_student(sessions, people, f"absent_{i}")
        with sessions() as session:
            session.add_all(rows)
            session.commit()
        try:
            yield ClassWorld(server.url, sessions, people, a, latest, best)
        finally:
            engine.dispose()


def urls(world: World) -> str:
    return f"/courses/{world.people.courses['course']}/assignments/{world.assignment}"


def test_an_instructor_grades_the_class_from_the_insight_panel(
    browser: Browser,  # noqa: F811
    world: ClassWorld,
) -> None:
    students = {k for k in world.people.users if k in world.latest or k.startswith("absent_")}
    assert len(students) == 60
    affected = sorted(k for k, p in world.latest.items() if p == "reshape_order_consistent")
    page_url = urls(world)
    page = signed_in(browser, world, "instructor", timeout_ms=60_000, downloads=True)
    page.goto(f"{page_url}/gradebook")
    problem = page.locator(f'#insight .insight-problem[data-problem="{MHA}"]')
    expect(problem).to_contain_text("54 attempted · 8 accepted")

    # One comment for the diagnosis, from the panel.
    item = problem.locator(f'li[data-code="{TARGET}"]')
    expect(item).to_contain_text(f"of {len(affected)}")
    item.locator("button.hint-open").click()
    item.locator("textarea.hint-text").fill(
        "Split the model width as **(h, d_k)**: `x.reshape(b, n, h, d_k)`, then move the heads "
        "forward. Your split reads it as (d_k, h). <script>window.pwned = 1</script>"
    )
    item.locator("button.hint-save").click()
    expect(item.locator(".hint-status")).to_contain_text(
        f"Saved: the {len(affected)} students with it read it now"
    )
    shot(page, "feedback-hint-from-insight")

    # The histogram, the headline figures and this week against last.
    page.locator("#load-statistics").click()
    stats = page.locator(f'#insight .insight-stats[data-problem="{MHA}"]')
    expect(stats.locator("svg rect.bar")).to_have_count(10)
    histogram = [0] * 10
    for score in world.best.values():
        histogram[min(9, int(score * 10))] += 1
    drawn = ", ".join(f"{i * 10}–{(i + 1) * 10} % {n}" for i, n in enumerate(histogram))
    expect(stats.locator("svg")).to_have_attribute(
        "aria-label", f"Scores of 54 students (share of 10 points): {drawn}"
    )
    week = stats.locator("table.insight-week")
    expect(week.locator(f'tr[data-code="{TARGET}"]')).to_be_visible()
    element_shot(stats, "insight-statistics")

    # The statistics CSV.
    with page.expect_download() as download:
        page.locator("#export-statistics").click()
    text = Path(download.value.path()).read_text(encoding="utf-8")
    table = list(csv.reader(io.StringIO(text)))
    assert table[0] == ["problem_id", "measure", "key", "value", "total"]
    assert [MHA, "accepted", "", "8", "54"] in table
    assert [MHA, "diagnosis", TARGET, str(len(affected)), "54"] in table
    assert [r[3] for r in table if r[1] == "histogram"] == [str(n) for n in histogram]
    assert page.errors == []  # type: ignore[attr-defined]

    # The similarity report: the planted copies first, with their evidence.
    problem.locator("a.insight-similarity").click()
    page.wait_for_url(f"**{page_url}/problems/{MHA}/similarity")
    page.locator("#sim-compute").click()
    rows = page.locator("#sim-pairs tbody tr")
    expect(rows.first).to_be_visible()
    trio = {"Correct Reshape", "Planted Copy 1", "Planted Copy 2"}
    listed = [
        set(rows.nth(i).locator("td").nth(1).inner_text().split(" · ")) for i in range(rows.count())
    ]
    assert all(pair <= trio for pair in listed[:3]), listed[:5]
    for i in range(3):
        expect(rows.nth(i).locator('[data-kind="code"]')).to_contain_text("distinctive code")
    # An independent correct pair may be listed, below the copies and never marked.
    report = page.request.get(f"/api{page_url}/problems/{MHA}/similarity").json()
    correct = {world.people.users[f"correct_{k}"] for k in INDEPENDENT}
    independent = [p for p in report["pairs"] if {p["a_user_id"], p["b_user_id"]} <= correct]
    assert all(p["rank"] > 3 and not p["flagged"] for p in independent), independent
    assert [p["flagged"] for p in report["pairs"][:3]] == [True] * 3
    rows.first.get_by_role("button", name="Side by side").click()
    expect(page.locator("#sim-pair-heading")).to_contain_text("Pair 1")
    assert page.locator("#sim-pair li.sim-shared").count() >= 10
    shot(page, "similarity-report", full_page=True)
    assert page.errors == []  # type: ignore[attr-defined]
    page.context.close()

    # The hint on an affected student's page, and not on another's.
    mine = signed_in(browser, world, affected[0])
    mine.goto(page_url)
    hint = mine.locator(f'#my-feedback [data-hint="{TARGET}"]')
    expect(hint).to_contain_text("Instructor")
    expect(hint.locator("strong")).to_have_text("(h, d_k)")
    expect(hint).to_contain_text("<script>window.pwned = 1</script>")  # shown as text
    assert mine.evaluate("() => window.pwned === undefined")
    shot(mine, "feedback-hint-student-view")
    mine.context.close()
    for other in ("no_scale_3", "correct_einsum"):
        page = signed_in(browser, world, other)
        page.goto(page_url)
        expect(page.locator("#total")).to_be_visible()
        expect(page.locator(f'[data-hint="{TARGET}"]')).to_have_count(0)
        page.context.close()


def test_comment_reaches_the_student_note_does_not(browser: Browser, world: ClassWorld) -> None:  # noqa: F811
    page_url = urls(world)
    page = signed_in(browser, world, "ta", timeout_ms=60_000)
    page.goto(f"{page_url}/gradebook")
    who = world.people.users["no_scale_4"]
    page.locator(f'button.gb-cell[data-user="{who}"][data-problem="{MHA}"]').click()
    panel = page.locator("#adjust-panel")
    expect(panel.locator('label[for="adjust-comment"]')).to_contain_text("staff only")
    panel.locator(".feedback-editor-comment textarea").fill("Nice *scaling* idea; check the mask.")
    panel.locator('.feedback-editor-comment button[data-save="comment"]').click()
    expect(panel.locator(".feedback-editor-comment [role=status]")).to_have_text("Saved.")
    panel.locator(".feedback-editor-note textarea").fill("Discussed in office hours")
    panel.locator('.feedback-editor-note button[data-save="note"]').click()
    expect(panel.locator(".feedback-editor-note [role=status]")).to_have_text("Saved.")
    shot(page, "feedback-adjust-dialog")
    page.context.close()

    mine = signed_in(browser, world, "no_scale_4")
    mine.goto(page_url)
    box = mine.locator(f'#my-feedback [data-problem="{MHA}"]').first
    expect(box).to_contain_text("Ta")
    expect(box.locator("em")).to_have_text("scaling")
    expect(mine.locator("main")).not_to_contain_text("office hours")
    mine.context.close()


def test_a_student_gets_no_similarity_report(browser: Browser, world: ClassWorld) -> None:  # noqa: F811
    page_url = urls(world)
    page = signed_in(browser, world, COPIES[0])
    page.goto(f"{page_url}/problems/{MHA}/similarity")
    expect(page.get_by_role("alert")).to_be_visible()
    expect(page.locator("#sim-pairs")).to_have_count(0)
    page.context.close()
