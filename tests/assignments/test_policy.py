"""The pure rules of app/assignments/policy.py, one by one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.assignments.policy import (
    Attempt,
    Grant,
    attempt_factor,
    attempts_allowed,
    credit_at,
    feedback_level,
    last_deadline,
    problem_score,
    student_dates,
)

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
RELEASE = T0 - timedelta(days=7)
DUE = T0
LATE = [(T0 + timedelta(days=2), 0.8), (T0 + timedelta(days=7), 0.5)]


def hours(h: float) -> datetime:
    return T0 + timedelta(hours=h)


def dates(after_close: str = "closed", grants: tuple[Grant, ...] = ()):  # type: ignore[no-untyped-def]
    return student_dates(RELEASE, DUE, LATE, after_close, grants)  # type: ignore[arg-type]


def test_before_release_is_not_open() -> None:
    c = credit_at(dates(), RELEASE - timedelta(seconds=1))
    assert (c.open, c.credit, c.rule) == (False, 0.0, "not released yet")
    assert credit_at(dates(), RELEASE).open


def test_on_time_until_the_due_date_inclusive() -> None:
    assert credit_at(dates(), DUE).credit == 1.0
    assert credit_at(dates(), DUE).rule == "on time: 100 %"


def test_late_windows_in_order() -> None:
    assert credit_at(dates(), hours(1)).credit == 0.8
    assert credit_at(dates(), hours(1)).rule == "late: 80 %"
    assert credit_at(dates(), hours(48)).credit == 0.8
    assert credit_at(dates(), hours(49)).credit == 0.5
    assert last_deadline(dates()) == LATE[-1][0]


def test_closed_after_the_last_deadline() -> None:
    c = credit_at(dates(), hours(24 * 8))
    assert not c.open and c.credit == 0.0 and "closed" in c.rule


def test_practice_after_close() -> None:
    c = credit_at(dates("practice"), hours(24 * 8))
    assert c.open and c.credit == 0.0 and "practice" in c.rule


def test_extension_moves_the_due_date_and_gives_full_credit() -> None:
    d = dates(grants=(Grant(until=hours(72), credit=1.0, extra_attempts=0),))
    assert d.due_at == hours(72)
    c = credit_at(d, hours(60))
    assert c.credit == 1.0 and c.rule == "extension: 100 %"
    assert credit_at(d, hours(24 * 6)).credit == 0.5  # the later late window still applies


def test_section_override_with_a_lower_credit_keeps_the_due_date() -> None:
    d = dates(grants=(Grant(until=hours(24 * 10), credit=0.6, extra_attempts=0),))
    assert d.due_at == DUE
    assert credit_at(d, hours(1)).credit == 0.8  # the best open window wins
    assert credit_at(d, hours(24 * 9)).credit == 0.6
    assert credit_at(d, hours(24 * 9)).rule == "override: 60 %"


def test_attempt_factor_repeats_the_last_penalty() -> None:
    penalties = [0, 0.05, 0.1]
    assert [attempt_factor(n, penalties) for n in (1, 2, 3, 4, 10)] == [1.0, 0.95, 0.9, 0.9, 0.9]
    assert attempt_factor(5, []) == 1.0
    with pytest.raises(ValueError):
        attempt_factor(0, penalties)


def test_attempts_allowed_adds_every_grant() -> None:
    grants = [Grant(None, 1.0, 1), Grant(None, 1.0, 2)]
    assert attempts_allowed(3, grants) == 6
    assert attempts_allowed(None, grants) is None


def test_best_never_goes_down_and_last_takes_the_last() -> None:
    attempts = [
        Attempt(1, hours(-5), 1.0),  # on time, full
        Attempt(2, hours(1), 1.0),  # late: 0.8
        Attempt(3, hours(2), 0.5),
    ]
    best = problem_score(attempts, dates(), [], "best")
    assert best.fraction == 1.0 and best.attempt == 1 and best.rule.startswith("best attempt (1)")
    last = problem_score(attempts, dates(), [], "last")
    assert last.fraction == pytest.approx(0.4) and last.attempt == 3
    assert "late: 80 %" in last.rule
    penalised = problem_score([*attempts[:1], Attempt(2, hours(-4), 1.0)], dates(), [0.5], "last")
    assert penalised.fraction == 0.5 and "attempt 2: 50 %" in penalised.rule
    assert problem_score([], dates(), [], "best").fraction == 0.0


def test_feedback_levels() -> None:
    assert feedback_level("visible", T0, DUE, None) == "visible"
    assert feedback_level("summary", hours(100), DUE, None) == "summary"
    assert feedback_level("hidden", hours(100), DUE, None) == "verdict"
    assert feedback_level("hidden", hours(2), DUE, hours(1)) == "visible"  # published
    assert feedback_level("hidden", hours(0), DUE, hours(1)) == "verdict"  # not yet
    assert feedback_level("after_due_date", DUE, DUE, None) == "summary"
    assert feedback_level("after_due_date", hours(1), DUE, None) == "visible"


def test_after_due_date_with_an_extension_waits_for_the_students_own_date() -> None:
    extended = dates(grants=(Grant(until=hours(48), credit=1.0, extra_attempts=0),))
    assert feedback_level("after_due_date", hours(24), extended.due_at, None) == "summary"
    assert feedback_level("after_due_date", hours(24), dates().due_at, None) == "visible"
    assert feedback_level("after_due_date", hours(49), extended.due_at, None) == "visible"
