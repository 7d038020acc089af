"""Class insight: what the students' latest graded attempts say about each problem, so an
instructor knows what to re-teach."""

from __future__ import annotations

from collections import Counter

from app.gradebook.schemas import CodeCount, InsightOut, ProblemInsight
from app.gradebook.scores import ACCEPTED, Gradebook


def class_insight(book: Gradebook) -> InsightOut:
    """Per problem: the diagnoses of each student's latest graded attempt (each code once per
    student), the most stuck first, and how many of those students have not had it accepted.
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
                if c.last_verdict != ACCEPTED:
                    stuck[code] += 1
        ranked = sorted(students, key=lambda code: (-stuck[code], -students[code], code))
        accepted = verdicts.get(ACCEPTED, 0)
        problems.append(
            ProblemInsight(
                problem_id=p.problem_id,
                title=p.title,
                attempted=len(graded),
                accepted=accepted,
                stuck=len(graded) - accepted,
                verdicts=dict(verdicts),
                diagnoses=[
                    CodeCount(code=c, title=titles[c], students=students[c], stuck=stuck[c])
                    for c in ranked
                ],
            )
        )
    return InsightOut(assignment_id=book.assignment.id, students=len(book.rows), problems=problems)
