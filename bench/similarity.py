"""Similarity reports for a whole assignment: 300 students x 5 problems, computed by the
report runner (``run_due``, one process, as the server's background thread does) from a
migrated SQLite database.

    .venv/bin/python bench/similarity.py [--students 300] [--problems 5] [--bases 6]

Each student's latest graded attempt on each problem is one of ``--bases`` independently
written correct multi_head_attention solutions (tests/similarity/solutions.py), made their own:
every name changed, a few statements of their own (debug checks, a helper with its own
constants), some steps written another common way. The code is the same for every problem
(each problem's own starter is factored out): what the bench measures is the work per class,
which does not depend on the problem. Two students share a rare diagnosis combination, a third
of the class a common one. Two planted copies per problem of one student's code (renamed, their
own statements moved, comments changed) should rank first.

Prints the wall time of the five reports, the peak RSS, the pairs reported and flagged, and
where the planted copies ranked.
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy.orm import sessionmaker

from app.auth.tokens import Principal
from app.core.config import REPO_ROOT, Settings
from app.db.engine import make_engine
from app.db.migrate import upgrade
from app.similarity.runner import run_due
from app.similarity.service import SimilarityService
from tests.gradebook.factories import T0, attempt_row, make_assignment
from tests.similarity.solutions import INDEPENDENT, own_version, planted_copy
from tests.support.people import add_student, seed_people

PROBLEMS = (
    "multi-head-attention",
    "causal-attention",
    "masked-attention",
    "grouped-query-attention",
    "softmax-backward",
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--problems", type=int, default=5)
    parser.add_argument("--bases", type=int, default=len(INDEPENDENT))
    args = parser.parse_args()
    rng = random.Random(39)
    bases = list(INDEPENDENT.values())[: args.bases]
    problems = PROBLEMS[: args.problems]
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(Settings(data_dir=Path(tmp)))
        upgrade(engine)
        sessions = sessionmaker(engine, expire_on_commit=False)
        people = seed_people(sessions)
        course = people.courses["course"]
        assignment = make_assignment(sessions, course, [(p, 10.0) for p in problems])
        users = [add_student(sessions, people, f"s{i:03d}") for i in range(args.students)]
        with sessions() as session:
            for problem in problems:
                codes_of = {u: own_version(bases[n % len(bases)], rng) for n, u in enumerate(users)}
                codes_of[users[5]] = planted_copy(codes_of[users[150]], rng)
                codes_of[users[77]] = planted_copy(codes_of[users[150]], rng)
                for n, user in enumerate(users):
                    code = codes_of[user]
                    codes = ["no-scale", "reshape-order"] if n in (10, 200) else []
                    if not codes and rng.random() < 0.3:
                        codes = ["scale-dmodel"]
                    session.add(
                        attempt_row(assignment, user, problem, 1, T0, 1.0, codes=codes, code=code)
                    )
            session.commit()
        service = SimilarityService(sessions)
        staff = Principal(user_id=people.users["instructor"], name="i", role="instructor")
        for problem in problems:
            service.request(course, assignment, problem, staff)
        starters = {
            p: (REPO_ROOT / "problems" / p / "starter.py").read_text(encoding="utf-8")
            for p in problems
        }
        start = time.perf_counter()
        done = run_due(sessions, starters, timedelta(minutes=10))
        wall = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"{done} reports, {args.students} students x {len(problems)} problems, "
            f"{args.bases} independent solutions: {wall:.1f} s, peak RSS {peak:.0f} MiB"
        )
        copies = {
            frozenset({users[5], users[77]}),
            frozenset({users[5], users[150]}),
            frozenset({users[77], users[150]}),
        }
        for problem in problems:
            report = service.report(course, assignment, problem, staff)
            ranks = [
                p.rank for p in report.pairs if frozenset({p.a_user_id, p.b_user_id}) in copies
            ]
            flagged = sum(p.flagged for p in report.pairs)
            behaviour = sum(any(e.kind != "code" for e in p.evidence) for p in report.pairs)
            print(
                f"  {problem}: {report.status}, {len(report.pairs)} pairs reported, "
                f"{flagged} flagged, {behaviour} with behavioural evidence; "
                f"planted copies ranked {ranks}"
            )
        engine.dispose()


if __name__ == "__main__":
    main()
