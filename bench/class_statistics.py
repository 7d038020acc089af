"""The statistics of a 300-student, 5-problem assignment (2 graded attempts each, full-size
reports: tests/gradebook/factories.seed_class) read the way the route reads them, on a migrated
SQLite database.

    .venv/bin/python bench/class_statistics.py [--students 300] [--rounds 10]

Prints the median time, over rounds, of the whole computation (what every request did before
the cache, ``app/gradebook/statistics_cache.py``), of a read with nothing changed (an
instructor reloading the insight panel), and of reads each following a change that moves the
figures (a newly graded attempt on one problem; a manual adjustment).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy.orm import sessionmaker

from app.assignments.models import Assignment
from app.auth.tokens import Principal
from app.core.config import Settings
from app.db.base import utcnow
from app.db.engine import make_engine
from app.db.migrate import upgrade
from app.gradebook.schemas import AdjustmentIn
from app.gradebook.service import GradebookService
from tests.gradebook.factories import ALL_PROBLEMS, T0, add_attempt, seed_class
from tests.support.people import seed_people


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(Settings(data_dir=Path(tmp)))
        upgrade(engine)
        sessions = sessionmaker(engine, expire_on_commit=False)
        people = seed_people(sessions)
        course = people.courses["course"]
        assignment, ids = seed_class(sessions, course, args.students)
        service = GradebookService(sessions, {})
        staff = Principal(user_id=people.users["instructor"], name="i", role="instructor")
        every = {p for p, _ in ALL_PROBLEMS}

        def read() -> object:
            return service.statistics(course, assignment, None, staff)

        def uncached() -> object:
            # The whole computation, as every request made it before the cache.
            with sessions() as session:
                a = session.get(Assignment, assignment)
                assert a is not None
                return service._statistics(session, a, None, staff, set(), utcnow(), every)

        def graded(n: int) -> None:
            problem = ALL_PROBLEMS[n % len(ALL_PROBLEMS)][0]
            add_attempt(sessions, assignment, ids[n], problem, 3, T0, 1.0)

        def adjusted(n: int) -> None:
            body = AdjustmentIn(
                user_id=ids[n], problem_id=ALL_PROBLEMS[0][0], score=1.0, comment="bench"
            )
            service.adjust(course, assignment, body, staff)

        def clock(call: Callable[[], object]) -> float:
            start = time.perf_counter()
            call()
            return time.perf_counter() - start

        read()  # imports, statement caches
        times: dict[str, list[float]] = {k: [] for k in ("uncached", "hit", "graded", "adjusted")}
        loads = []
        # Alternated, so that the load of a shared machine falls on each alike.
        for n in range(args.rounds):
            loads.append(os.getloadavg()[0])
            times["uncached"].append(clock(uncached))
            times["hit"].append(clock(read))
            graded(n)
            times["graded"].append(clock(read))
            adjusted(n)
            times["adjusted"].append(clock(read))
        median = {k: statistics.median(v) * 1000 for k, v in times.items()}
        print(
            f"statistics, {args.students} students x {len(ALL_PROBLEMS)} problems, "
            f"median of {args.rounds} rounds (load {min(loads):.1f}-{max(loads):.1f}): "
            f"computed in full (every request before) {median['uncached']:.0f} ms; "
            f"unchanged {median['hit']:.0f} ms; after a graded attempt on one problem "
            f"{median['graded']:.0f} ms; after an adjustment {median['adjusted']:.0f} ms"
        )
        engine.dispose()


if __name__ == "__main__":
    main()
