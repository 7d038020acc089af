"""Per-student hidden cases: in an assignment with ``per_student_cases``, the problem folder's
hidden cases are generated from a seed derived from (student, assignment, problem, the
problem's own seed) by HMAC-SHA256 under a server key, so two students' hidden inputs differ,
knowing one's inputs tells nothing of another's, and a regrade reproduces them. Expected
outputs come from the reference in this (the grader's) process, as for the folder's own cases;
the key and the seed never enter the sandbox. Stored cases (the catalog's and the course's own)
apply to everyone.

``submission_cases`` is what the grader asks for every submission: which stored cases run
(the catalog's; plus its course's for a submission in an assignment) and whose hidden cases.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import threading
from collections import OrderedDict
from pathlib import Path

from sqlalchemy.orm import Session, sessionmaker

from app.assignments.models import Assignment
from app.core.config import Settings
from app.problems.cases import TestCase
from app.problems.loader import Problem
from app.submissions.models import Submission
from app.testcases.current import examples_set, grading_set

KEY_FILE = "case-seed.key"
_CACHE_SIZE = 64
_lock = threading.Lock()
_keys: dict[Path, bytes] = {}
_cases: OrderedDict[tuple[str, int], tuple[TestCase, ...]] = OrderedDict()


def seed_key(settings: Settings) -> bytes:
    """The HMAC key: the setting, else the key file in data_dir (created once, owner-only)."""
    if settings.case_seed_secret is not None:
        return settings.case_seed_secret.get_secret_value().encode("utf-8")
    path = settings.data_dir / KEY_FILE
    with _lock:
        if path in _keys:
            return _keys[path]
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # another process made it first: read theirs
        else:
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_hex(32))
        key = path.read_text().strip().encode("utf-8")
        if not key:
            raise RuntimeError(f"{path} is empty; delete it or set GRADER_CASE_SEED_SECRET")
        _keys[path] = key
        return key


def student_seed(key: bytes, user_id: int, assignment_id: int, problem: Problem) -> int:
    message = f"{user_id}\x00{assignment_id}\x00{problem.id}\x00{problem.spec.seed}"
    digest = hmac.new(key, message.encode("utf-8"), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big")


def hidden_for(problem: Problem, seed: int) -> tuple[TestCase, ...]:
    """The folder's hidden cases from ``seed`` (kept for the last few seeds: a student's
    repeated submissions reuse them)."""
    if problem.hidden_from_seed is None:
        return problem.hidden
    with _lock:
        found = _cases.get((problem.id, seed))
    if found is not None:
        return found
    generated = problem.hidden_from_seed(seed)
    with _lock:
        _cases[(problem.id, seed)] = generated
        while len(_cases) > _CACHE_SIZE:
            _cases.popitem(last=False)
    return generated


def personal(cases: tuple[TestCase, ...], problem: Problem, seed: int) -> tuple[TestCase, ...]:
    """``cases`` with the folder's hidden cases replaced by the student's own."""
    folder = {c.name for c in problem.hidden}
    kept = tuple(c for c in cases if not (c.visibility == "hidden" and c.name in folder))
    public = tuple(c for c in kept if c.visibility == "public")
    return public + hidden_for(problem, seed) + tuple(c for c in kept if c.visibility != "public")


def submission_cases(
    settings: Settings,
    sessions: sessionmaker[Session],
    problem: Problem,
    submission: Submission,
) -> tuple[int, tuple[TestCase, ...]]:
    """(test-set version, cases) a submission is graded on. Practice (outside any assignment)
    runs the catalog's cases only; a submission in an assignment also runs its course's, with
    the student's own hidden cases where the assignment has ``per_student_cases``; "Run
    examples" runs the public part of its scope's set."""
    assignment = None
    if submission.assignment_id is not None:
        with sessions() as session:
            assignment = session.get(Assignment, submission.assignment_id)
    course_id = None if assignment is None else assignment.course_id
    if submission.mode == "examples":
        return examples_set(sessions, problem, course_id)
    version, cases = grading_set(sessions, problem, course_id)
    if assignment is None or not assignment.per_student_cases or submission.user_id is None:
        return version, cases
    seed = student_seed(seed_key(settings), submission.user_id, assignment.id, problem)
    return version, personal(cases, problem, seed)
