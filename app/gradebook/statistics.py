"""Statistics of an assignment per problem, from the students' graded attempts: the score
distribution, attempts and time until accepted, pass rates per test case (a hidden case by its
index only) and per requirement, the most common diagnoses and pairs of diagnoses among the
latest attempts, and how the diagnoses of the last seven days compare with the seven before."""

from __future__ import annotations

import csv
import io
import statistics as stats
from collections import Counter
from collections.abc import Mapping
from datetime import datetime, timedelta
from itertools import combinations

from app.gradebook.exports import safe
from app.gradebook.schemas import (
    CaseRate,
    DiagnosisTrend,
    PairCount,
    ProblemStatistics,
    StatisticsOut,
)
from app.gradebook.scores import ACCEPTED, Gradebook
from app.grading.schemas import GradeReport

BINS = 10
WEEK = timedelta(days=7)
TOP = 10


def _bin(fraction: float) -> int:
    return min(BINS - 1, max(0, int(fraction * BINS)))


def compute_statistics(
    book: Gradebook,
    latest_reports: Mapping[str, GradeReport],
    attempt_diagnoses: Mapping[str, list[tuple[str, str]]],
    cut: set[str],
    now: datetime,
) -> StatisticsOut:
    """``latest_reports``: the latest graded attempts' reports by submission id;
    ``attempt_diagnoses``: the diagnoses of the attempts of the last two weeks; ``cut``: the
    problems whose reports are cut for the reader (no cases, requirements or diagnoses)."""
    start = book.assignment.release_at or book.assignment.created_at
    problems = []
    for index, p in enumerate(book.problems):
        cells = [r.cells[index] for r in book.rows]
        graded = [c for c in cells if c.last_verdict is not None or c.adjusted]
        histogram = [0] * BINS
        for c in graded:
            histogram[_bin(c.points / c.max_points if c.max_points else 0.0)] += 1
        mine = sorted(
            (a for a in book.attempts if a.problem_id == p.problem_id),
            key=lambda a: (a.user_id, a.number),
        )
        first_accepted: dict[int, tuple[int, datetime]] = {}
        for a in mine:
            if a.verdict == ACCEPTED and a.user_id not in first_accepted:
                first_accepted[a.user_id] = (a.number, a.received_at)
        tries = [n for n, _ in first_accepted.values()]
        hours = [max(0.0, (at - start).total_seconds() / 3600) for _, at in first_accepted.values()]
        cases: dict[int, list[int]] = {}
        names: dict[int, str] = {}
        requirements: dict[str, list[int]] = {}
        titles: dict[str, str] = {}
        pairs: Counter[tuple[str, str]] = Counter()
        codes: Counter[str] = Counter()
        shown = p.problem_id not in cut
        for c in cells:
            report = latest_reports.get(c.last_submission_id or "") if shown else None
            if report is not None:
                for i, case in enumerate(report.tests):
                    passed, total = cases.setdefault(i, [0, 0])
                    cases[i] = [passed + (case.status == "passed"), total + 1]
                    names.setdefault(i, case.name if case.visibility == "public" else "")
                for r in report.requirements:
                    if r.status == "not_checked":
                        continue
                    passed, total = requirements.setdefault(r.id, [0, 0])
                    requirements[r.id] = [passed + (r.status == "passed"), total + 1]
                    titles.setdefault(r.id, r.title)
            if shown:
                found = sorted({code for code, _ in c.diagnoses})
                codes.update(found)
                pairs.update(combinations(found, 2))
        recent: Counter[str] = Counter()
        before: Counter[str] = Counter()
        if shown:
            for a in mine:
                seen = {code for code, _ in attempt_diagnoses.get(a.submission_id, [])}
                if now - WEEK <= a.received_at <= now:
                    recent.update(seen)
                elif now - 2 * WEEK <= a.received_at < now - WEEK:
                    before.update(seen)
        problems.append(
            ProblemStatistics(
                problem_id=p.problem_id,
                title=p.title,
                max_points=p.points,
                students=len(cells),
                graded=len(graded),
                histogram=histogram,
                accepted=len(first_accepted),
                attempts_until_accepted=dict(sorted(Counter(tries).items())),
                median_attempts_until_accepted=stats.median(tries) if tries else None,
                median_hours_to_first_accepted=round(stats.median(hours), 2) if hours else None,
                stuck=sum(1 for c in cells if c.stuck),
                cases=[
                    CaseRate(
                        index=i,
                        hidden=not names[i],
                        name=names[i] or None,
                        passed=cases[i][0],
                        total=cases[i][1],
                    )
                    for i in sorted(cases)
                ],
                requirements=[
                    CaseRate(
                        index=n, hidden=False, name=f"{rid}: {titles[rid]}", passed=v[0], total=v[1]
                    )
                    for n, (rid, v) in enumerate(sorted(requirements.items()))
                ],
                diagnoses=[
                    PairCount(codes=[code], students=n) for code, n in codes.most_common(TOP)
                ],
                pairs=[
                    PairCount(codes=list(pair), students=n) for pair, n in pairs.most_common(TOP)
                ],
                week=[
                    DiagnosisTrend(
                        code=code, last_7_days=recent[code], previous_7_days=before[code]
                    )
                    for code in sorted(set(recent) | set(before), key=lambda k: (-recent[k], k))
                ],
            )
        )
    return StatisticsOut(assignment_id=book.assignment.id, problems=problems, generated_at=now)


def statistics_csv(out: StatisticsOut) -> str:
    """Long form: one row per (problem, measure, key)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(["problem_id", "measure", "key", "value", "total"])
    for p in out.problems:
        rows: list[list[object]] = [
            [p.problem_id, "students", "", p.students, ""],
            [p.problem_id, "graded", "", p.graded, ""],
            [p.problem_id, "accepted", "", p.accepted, p.graded],
            [p.problem_id, "stuck", "", p.stuck, p.graded],
            [
                p.problem_id,
                "median_attempts_until_accepted",
                "",
                p.median_attempts_until_accepted,
                "",
            ],
            [
                p.problem_id,
                "median_hours_to_first_accepted",
                "",
                p.median_hours_to_first_accepted,
                "",
            ],
        ]
        for i, n in enumerate(p.histogram):
            rows.append([p.problem_id, "histogram", f"{i * 10}-{(i + 1) * 10}%", n, p.graded])
        for k, n in p.attempts_until_accepted.items():
            rows.append([p.problem_id, "attempts_until_accepted", k, n, p.accepted])
        for c in p.cases:
            key = f"hidden #{c.index + 1}" if c.hidden else f"#{c.index + 1} {c.name}"
            rows.append([p.problem_id, "case_pass", key, c.passed, c.total])
        for r in p.requirements:
            rows.append([p.problem_id, "requirement_pass", r.name, r.passed, r.total])
        for d in p.diagnoses:
            rows.append([p.problem_id, "diagnosis", d.codes[0], d.students, p.graded])
        for d in p.pairs:
            rows.append([p.problem_id, "diagnosis_pair", " + ".join(d.codes), d.students, p.graded])
        for t in p.week:
            rows.append([p.problem_id, "diagnosis_last_7_days", t.code, t.last_7_days, ""])
            rows.append([p.problem_id, "diagnosis_previous_7_days", t.code, t.previous_7_days, ""])
        for row in rows:
            writer.writerow([safe(v) for v in row])
    return buffer.getvalue()
