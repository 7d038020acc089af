"""What an assignment's rules make of a moment and an attempt: pure functions, no database.

- ``credit_at``: the credit a submission made at time ``t`` earns, and the rule that decided it
  (the due date, a later deadline, an override), or that the assignment is not open.
- ``attempt_factor``: what is left of an attempt's score after the per-attempt penalty.
- ``problem_score``: a student's score on one problem from their graded attempts (best or last).
- ``feedback_level``: how much of a report a student may see now.

The semantics follow PrairieLearn's access rules: every deadline (the due date at full credit,
each later one, each override) is a window "until this time, this much credit", and a
submission earns the most credit of the windows still open when it was made.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

AfterClose = Literal["closed", "practice"]
Scoring = Literal["best", "last"]
Feedback = Literal["visible", "summary", "after_due_date", "hidden"]
# What a student is shown of one report: everything, the public part, or the verdict alone.
FeedbackLevel = Literal["visible", "summary", "verdict"]


@dataclass(frozen=True)
class Deadline:
    """Until ``until`` (inclusive), submissions earn ``credit`` (0 to 1)."""

    until: datetime
    credit: float
    rule: str  # its kind as the student sees it: "on time", "late", "extension", "override"


@dataclass(frozen=True)
class Dates:
    """One student's dates for an assignment: its own, with their overrides added."""

    release_at: datetime | None
    due_at: datetime  # the student's own due date: an extension at full credit moves it
    deadlines: tuple[Deadline, ...]
    after_close: AfterClose


@dataclass(frozen=True)
class Credit:
    open: bool  # False: a graded submission is refused
    credit: float
    rule: str


@dataclass(frozen=True)
class Grant:
    """An override as it applies to one student."""

    until: datetime | None
    credit: float
    extra_attempts: int


def percent(credit: float) -> str:
    return f"{round(credit * 100, 2):g} %"


def student_dates(
    release_at: datetime | None,
    due_at: datetime,
    late: Sequence[tuple[datetime, float]],
    after_close: AfterClose,
    grants: Sequence[Grant] = (),
) -> Dates:
    """The windows of one student: the due date at full credit, each later deadline, and each
    override with a date. The student's due date is the last full-credit window."""
    deadlines = [Deadline(due_at, 1.0, "on time")]
    deadlines += [Deadline(until, credit, "late") for until, credit in late]
    for grant in grants:
        if grant.until is not None:
            rule = "extension" if grant.credit >= 1.0 else "override"
            deadlines.append(Deadline(grant.until, grant.credit, rule))
    full = [d.until for d in deadlines if d.credit >= 1.0]
    return Dates(
        release_at=release_at,
        due_at=max(full),
        deadlines=tuple(sorted(deadlines, key=lambda d: d.until)),
        after_close=after_close,
    )


def credit_at(dates: Dates, t: datetime) -> Credit:
    """The credit a graded submission made at ``t`` earns: the best window still open."""
    if dates.release_at is not None and t < dates.release_at:
        return Credit(open=False, credit=0.0, rule="not released yet")
    open_windows = [d for d in dates.deadlines if t <= d.until]
    if open_windows:
        best = max(open_windows, key=lambda d: (d.credit, d.until))
        return Credit(open=True, credit=best.credit, rule=f"{best.rule}: {percent(best.credit)}")
    if dates.after_close == "practice":
        return Credit(open=True, credit=0.0, rule="after the last deadline: practice, no credit")
    return Credit(open=False, credit=0.0, rule="closed: the last deadline has passed")


def last_deadline(dates: Dates) -> datetime:
    return dates.deadlines[-1].until


def attempt_factor(attempt: int, penalties: Sequence[float]) -> float:
    """1 minus the penalty of the ``attempt``-th graded attempt (1-based); the last penalty
    repeats, so [0, 0.05, 0.1] takes 10 % off the third attempt and every later one."""
    if attempt < 1:
        raise ValueError("attempts are numbered from 1")
    if not penalties:
        return 1.0
    penalty = penalties[min(attempt, len(penalties)) - 1]
    return max(0.0, 1.0 - penalty)


def attempts_allowed(max_attempts: int | None, grants: Sequence[Grant]) -> int | None:
    """None: no maximum."""
    if max_attempts is None:
        return None
    return max_attempts + sum(g.extra_attempts for g in grants)


@dataclass(frozen=True)
class Attempt:
    """One graded attempt: its number, when it was made, and the grader's score (0 to 1)."""

    number: int
    at: datetime
    score: float


@dataclass(frozen=True)
class Scored:
    """A student's score on one problem, as a fraction of its points, and why."""

    fraction: float
    rule: str
    attempt: int | None  # the attempt that decided it


def attempt_value(attempt: Attempt, dates: Dates, penalties: Sequence[float]) -> tuple[float, str]:
    credit = credit_at(dates, attempt.at)
    factor = attempt_factor(attempt.number, penalties)
    value = attempt.score * credit.credit * factor
    rule = credit.rule
    if factor < 1.0:
        rule += f", attempt {attempt.number}: {percent(factor)}"
    return value, rule


def problem_score(
    attempts: Sequence[Attempt], dates: Dates, penalties: Sequence[float], scoring: Scoring
) -> Scored:
    """Best attempt (a score never goes down) or the last attempt, each attempt's grader score
    times the credit of its time and its attempt factor."""
    if not attempts:
        return Scored(fraction=0.0, rule="no graded attempt", attempt=None)
    valued = [(attempt_value(a, dates, penalties), a) for a in attempts]
    if scoring == "last":
        (value, rule), chosen = max(valued, key=lambda v: (v[1].at, v[1].number))
        return Scored(value, f"last attempt ({chosen.number}): {rule}", chosen.number)
    (value, rule), chosen = max(valued, key=lambda v: (v[0][0], -v[1].number))
    return Scored(value, f"best attempt ({chosen.number}): {rule}", chosen.number)


def feedback_level(
    policy: Feedback, now: datetime, due_at: datetime, published_at: datetime | None
) -> FeedbackLevel:
    """How much of a hidden-case report a student sees at ``now``; ``due_at`` is the student's
    own (extended) due date, so a student with an extension never sees another's early."""
    if published_at is not None and now >= published_at:
        return "visible"
    if policy == "visible":
        return "visible"
    if policy == "summary":
        return "summary"
    if policy == "after_due_date":
        return "visible" if now > due_at else "summary"
    return "verdict"
