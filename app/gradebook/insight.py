"""Class insight: what the students' latest graded attempts say about each problem, so an
instructor knows what to re-teach."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

from app.gradebook.schemas import CodeCount, InsightOut, ProblemInsight, RushMinute, RushOut
from app.gradebook.scores import ACCEPTED, Gradebook

# The window the rush is shown over, around the assignment's due date.
RUSH_BEFORE = timedelta(minutes=30)
RUSH_AFTER = timedelta(minutes=10)
MINUTE = timedelta(minutes=1)


def rush(book: Gradebook, queued_now: int) -> RushOut:
    """Per minute around the due date, the graded attempts that arrived; their wait to a
    verdict (every attempt of the assignment)."""
    due = book.assignment.due_at
    start = due - RUSH_BEFORE
    minutes = int((RUSH_BEFORE + RUSH_AFTER) / MINUTE)
    counts = [0] * minutes
    waits = []
    for a in book.attempts:
        slot = int((a.received_at - start) / MINUTE)
        if 0 <= slot < minutes:
            counts[slot] += 1
        if a.finished_at is not None:
            waits.append((a.finished_at - a.received_at).total_seconds())
    waits.sort()

    def at(q: float) -> float | None:
        return round(waits[min(len(waits) - 1, int(q * len(waits)))], 2) if waits else None

    return RushOut(
        due_at=due,
        per_minute=[
            RushMinute(minute=start + i * MINUTE, submissions=n) for i, n in enumerate(counts)
        ],
        wait_p50_seconds=at(0.5),
        wait_p95_seconds=at(0.95),
        queued_now=queued_now,
    )


def class_insight(book: Gradebook) -> InsightOut:
    """Per problem: the diagnoses of each student's latest graded attempt (each code once per
    student), the most stuck first, and how many of those students are stuck (``Cell.stuck``).
    A mistake a student has since fixed no longer counts: only the latest attempt does."""
    problems = []
    for index, p in enumerate(book.problems):
        graded = [r.cells[index] for r in book.rows if r.cells[index].last_verdict is not None]
        verdicts = Counter(c.last_verdict for c in graded if c.last_verdict)
        students: Counter[str] = Counter()
        stuck: Counter[str] = Counter()
        titles: dict[str, str] = {}
        for c in graded:
            for code, title in dict(c.diagnoses).items():
                titles.setdefault(code, title)
                students[code] += 1
                if c.stuck:
                    stuck[code] += 1
        ranked = sorted(students, key=lambda code: (-stuck[code], -students[code], code))
        accepted = verdicts.get(ACCEPTED, 0)
        problems.append(
            ProblemInsight(
                problem_id=p.problem_id,
                title=p.title,
                attempted=len(graded),
                accepted=accepted,
                stuck=sum(1 for c in graded if c.stuck),
                verdicts=dict(verdicts),
                diagnoses=[
                    CodeCount(code=c, title=titles[c], students=students[c], stuck=stuck[c])
                    for c in ranked
                ],
            )
        )
    return InsightOut(assignment_id=book.assignment.id, students=len(book.rows), problems=problems)
