"""Compares a sandbox run's raw outputs with the reference's, case by case, outside the sandbox.

Order of checks per case: did it run, were the inputs left alone, the shape, non-finite values,
then ``np.allclose(actual, expected, rtol, atol)`` in float64 with the reference as the second
argument (so the tolerance scales with the expected value, never with the submission's).
A hidden case's (or a probe's) report says only which of a few outcomes it had, in fixed wording
chosen here (``HIDDEN_WORDING``): no values, positions, actual shapes or dtypes, no exception
text and no per-case time. Everything the submission controls while it holds hidden inputs could
spell them out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from app.grading.schemas import CaseReport
from app.problems.cases import TestCase
from app.problems.spec import Tolerance
from sandbox.protocol import CaseOutcome, RunResult
from sandbox.verdicts import Verdict

_MESSAGE_CHARS = 300

# The outcomes a hidden case can have, as the student reads them. The expected shape is the
# host's own data; nothing here depends on what the submission returned beyond the outcome.
HIDDEN_WORDING = {
    "error": "raised an exception (its type and message are shown for public examples only)",
    "not_an_array": "did not return an array of real numbers",
    "mutated": "modified an input in place",
    "shape": "wrong shape",
    "non_finite": "the output has NaN or infinite values",
    "values": "values differ from the expected output beyond the tolerance",
}

# Public cases' times are shown to the millisecond: they all run before any hidden input exists
# in the submission's process, so there is nothing hidden their timing could carry.
PUBLIC_SECONDS_STEP = 0.001
# The whole run's times (sandbox, grading, total) are shown to 10 ms. The submission can stretch
# them at will, but the student can time the whole run from outside anyway (a ``?wait`` request
# returns when it is stored), to about this precision once queueing and the sandbox's own start
# jitter are counted: finer figures would hand over a sharper clock than the one they have.
RUN_SECONDS_STEP = 0.01


def rounded(seconds: float, step: float) -> float:
    """``seconds`` to the nearest multiple of ``step`` (a clean float for the report)."""
    return round(round(seconds / step) * step, 6)


def _shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ")"


def error_message(outcome: CaseOutcome) -> str:
    """A public case's exception: its type and the first line of its message."""
    assert outcome.error is not None
    lines = outcome.error.message.strip().splitlines()
    text = f"{outcome.error.type}: {lines[0]}" if lines else outcome.error.type
    return text[:_MESSAGE_CHARS]


GRID_CELLS = 32


def error_grid(error: np.ndarray) -> list[list[float]]:
    """Where a public case is off: the absolute error over the output's last two axes, the worst
    over any leading (batch) axes, cut to ``GRID_CELLS`` a side so the report stays small."""
    grid = error.reshape(-1, *error.shape[-2:]).max(axis=0) if error.ndim > 2 else error
    grid = np.atleast_2d(grid)[:GRID_CELLS, :GRID_CELLS]
    return [[float(v) for v in row] for row in grid]


def compare_case(
    case: TestCase, outcome: CaseOutcome | None, tolerance: Tolerance, run_status: str = "ok"
) -> CaseReport:
    """One case's report. ``outcome`` is None when the run ended before reaching the case."""
    assert case.expected is not None, "cases are compared only after the reference filled them"
    expected = case.expected
    report = CaseReport(
        name=case.name,
        visibility=case.visibility,
        status="error",
        expected_shape=list(expected.shape),
    )
    if outcome is None:
        report.message = f"not run: the run ended early ({run_status.replace('_', ' ')})"
        return report
    if case.visibility == "hidden":
        return _hidden_report(report, outcome, expected, tolerance)
    report.seconds = rounded(outcome.seconds, PUBLIC_SECONDS_STEP)
    if outcome.output is None:
        report.message = error_message(outcome) if outcome.error else "returned nothing"
        return report
    actual = outcome.output
    report.actual_shape = list(actual.shape)
    report.status = "failed"
    if outcome.mutated_inputs:
        report.message = f"modified its input {', '.join(outcome.mutated_inputs)} in place"
        return report
    if actual.shape != expected.shape:
        report.message = (
            f"wrong shape: expected {_shape(expected.shape)}, got {_shape(actual.shape)}"
        )
        return report
    if not _real(actual):
        report.message = f"output dtype {actual.dtype} is not a real number type"
        return report
    actual = actual.astype(np.float64)
    finite = np.isfinite(actual)
    if not finite.all():
        bad = int(actual.size - np.count_nonzero(finite))
        report.message = f"{bad} of {actual.size} output values are NaN or infinite"
        return report
    if not _allclose(actual, expected, tolerance):
        error = np.abs(actual - expected)
        where = np.unravel_index(int(np.argmax(error)), error.shape)
        report.max_error = float(error[where])
        report.max_error_index = [int(i) for i in where]
        report.error_grid = error_grid(error)
        report.message = (
            f"largest error {report.max_error:.3g} at {list(report.max_error_index)}: "
            f"got {actual[where]:.6g}, expected {expected[where]:.6g}"
        )
        return report
    report.status = "passed"
    return report


def hidden_outcome(outcome: CaseOutcome, expected: np.ndarray, tolerance: Tolerance) -> str:
    """Which of ``HIDDEN_WORDING``'s outcomes a hidden case had, or ``"passed"``."""
    actual = outcome.output
    if actual is None:
        invalid = outcome.error is None or outcome.error.type == "InvalidOutput"
        return "not_an_array" if invalid else "error"
    if outcome.mutated_inputs:
        return "mutated"
    if actual.shape != expected.shape:
        return "shape"
    if not _real(actual):
        return "not_an_array"
    actual = actual.astype(np.float64)
    if not np.isfinite(actual).all():
        return "non_finite"
    return "passed" if _allclose(actual, expected, tolerance) else "values"


def _hidden_report(
    report: CaseReport, outcome: CaseOutcome, expected: np.ndarray, tolerance: Tolerance
) -> CaseReport:
    found = hidden_outcome(outcome, expected, tolerance)
    if found == "passed":
        report.status = "passed"
    else:
        # As for a public case: no array back is an error, a wrong array a failure.
        report.status = "error" if outcome.output is None else "failed"
        report.message = HIDDEN_WORDING[found]
    return report


def _real(actual: np.ndarray) -> bool:
    return bool(np.issubdtype(actual.dtype, np.floating) or np.issubdtype(actual.dtype, np.integer))


def _allclose(actual: np.ndarray, expected: np.ndarray, tolerance: Tolerance) -> bool:
    """``np.allclose(actual, expected, rtol, atol)`` for a finite float64 ``actual``. With a
    finite float64 ``expected`` too, it is exactly ``|actual - expected| <= atol + rtol *
    |expected|`` everywhere (tolerances are not negative), computed here without allclose's
    general-case work, which cost more than the comparison itself."""
    if expected.dtype == np.float64 and np.isfinite(expected).all():
        error = np.abs(actual - expected)
        return bool((error <= tolerance.atol + tolerance.rtol * np.abs(expected)).all())
    return bool(np.allclose(actual, expected, rtol=tolerance.rtol, atol=tolerance.atol))


def compare_cases(
    cases: Sequence[TestCase], run: RunResult, tolerance: Tolerance
) -> list[CaseReport]:
    """Reports in case order. Hidden cases are reported as "hidden-1", "hidden-2"...: their
    names are hidden material like their inputs."""
    by_name = {outcome.name: outcome for outcome in run.cases}
    reports = []
    hidden = 0
    for case in cases:
        report = compare_case(case, by_name.get(case.name), tolerance, run.status)
        if case.visibility == "hidden":
            hidden += 1
            report.name = f"hidden-{hidden}"
        reports.append(report)
    return reports


def score(cases: Sequence[TestCase], reports: Sequence[CaseReport]) -> float:
    """Weighted fraction of cases passed."""
    total = sum(c.weight for c in cases)
    passed = sum(c.weight for c, r in zip(cases, reports, strict=True) if r.status == "passed")
    return passed / total if total > 0 else 0.0


def verdict(run: RunResult, reports: Sequence[CaseReport]) -> Verdict:
    """The process status decides first; otherwise a raising case is a runtime error."""
    decided = run.verdict_if_failed
    if decided is not None:
        return decided
    if any(r.status == "error" for r in reports):
        return Verdict.RUNTIME_ERROR
    if any(r.status == "failed" for r in reports):
        return Verdict.WRONG_ANSWER
    return Verdict.ACCEPTED
