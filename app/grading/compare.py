"""Compares a sandbox run's raw outputs with the reference's, case by case, outside the sandbox.

Order of checks per case: did it run, were the inputs left alone, then per output the shape,
non-finite values, then ``np.allclose(actual, expected, rtol, atol)`` in float64 with the
reference as the second argument (so the tolerance scales with the expected value, never with
the submission's). A case that requires an exception passes when the function raises exactly
that type.
Hidden cases' messages carry shapes and statuses only: no values, no positions, and of an
exception only its type.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from app.grading.schemas import CaseReport, OutputReport
from app.problems.cases import TestCase, parts_of
from app.problems.spec import Returns, Tolerance
from sandbox.protocol import CaseOutcome, RunResult
from sandbox.verdicts import Verdict

_MESSAGE_CHARS = 300
# An exception's message is text the submission chooses: on a hidden case it could spell out the
# inputs, so only the exception's type is shown there.
HIDDEN_MESSAGE = "(the message is shown for public examples only)"


def _shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ")"


def error_message(outcome: CaseOutcome, hidden: bool) -> str:
    assert outcome.error is not None
    if hidden:
        return f"{outcome.error.type} {HIDDEN_MESSAGE}"
    lines = outcome.error.message.strip().splitlines()
    text = f"{outcome.error.type}: {lines[0]}" if lines else outcome.error.type
    return text[:_MESSAGE_CHARS]


def hidden_traceback(traceback: str, error_type: str) -> str:
    """The frames (the submission's own source lines) without any exception message."""
    kept = [
        line
        for line in traceback.splitlines()
        if line.startswith(" ") or line.startswith("Traceback (most recent call last)")
    ]
    return "\n".join([*kept, f"{error_type} {HIDDEN_MESSAGE}"])


GRID_CELLS = 32


def error_grid(error: np.ndarray) -> list[list[float]]:
    """Where a public case is off: the absolute error over the output's last two axes, the worst
    over any leading (batch) axes, cut to ``GRID_CELLS`` a side so the report stays small."""
    grid = error.reshape(-1, *error.shape[-2:]).max(axis=0) if error.ndim > 2 else error
    grid = np.atleast_2d(grid)[:GRID_CELLS, :GRID_CELLS]
    return [[float(v) for v in row] for row in grid]


def compare_case(
    case: TestCase,
    outcome: CaseOutcome | None,
    tolerance: Tolerance,
    run_status: str = "ok",
    outputs: Sequence[Returns] | None = None,
) -> CaseReport:
    """One case's report. ``outcome`` is None when the run ended before reaching the case.
    ``outputs`` (the problem's ``returns``) gives each output its name and tolerance; without it
    the case has one output, compared with ``tolerance``."""
    hidden = case.visibility == "hidden"
    if case.raises is not None:
        return _compare_raises(case, outcome, run_status)
    assert case.expected is not None, "cases are compared only after the reference filled them"
    expected = parts_of(case.expected)
    report = CaseReport(
        name=case.name,
        visibility=case.visibility,
        status="error",
        expected_shape=list(expected[0].shape),
    )
    if outcome is None:
        report.message = _not_run(run_status)
        return report
    report.seconds = outcome.seconds
    if outcome.output is None:
        report.message = error_message(outcome, hidden) if outcome.error else "returned nothing"
        return report
    actual = parts_of(outcome.output)
    report.actual_shape = list(actual[0].shape)
    report.status = "failed"
    if outcome.mutated_inputs:
        report.message = f"modified its input {', '.join(outcome.mutated_inputs)} in place"
        return report
    if not isinstance(case.expected, tuple):
        if isinstance(outcome.output, tuple):
            report.message = f"returned a tuple of {len(actual)} arrays; expected one array"
            return report
        _compare_array(report, actual[0], expected[0], tolerance, hidden)
        return report
    specs = (
        list(outputs)
        if outputs
        else [Returns(name=f"output{k}", shape=["1"]) for k in range(len(expected))]
    )
    names = [o.name for o in specs]
    if not isinstance(outcome.output, tuple) or len(actual) != len(expected):
        got = f"a tuple of {len(actual)}" if isinstance(outcome.output, tuple) else "one array"
        report.message = (
            f"returned {got}; expected a tuple of {len(expected)} arrays ({', '.join(names)})"
        )
        return report
    for spec, mine, want in zip(specs, actual, expected, strict=True):
        part = OutputReport(name=spec.name, status="failed", expected_shape=list(want.shape))
        part.actual_shape = list(mine.shape)
        _compare_array(part, mine, want, spec.tolerance or tolerance, hidden)
        report.outputs.append(part)
    wrong = [o for o in report.outputs if o.status != "passed"]
    if not wrong:
        report.status = "passed"
        return report
    first = wrong[0]
    report.expected_shape, report.actual_shape = first.expected_shape, first.actual_shape
    report.max_error, report.max_error_index = first.max_error, first.max_error_index
    report.error_grid = first.error_grid
    report.message = "; ".join(f"{o.name}: {o.message}" for o in wrong)
    return report


def _not_run(run_status: str) -> str:
    return f"not run: the run ended early ({run_status.replace('_', ' ')})"


def _compare_array(
    report: CaseReport | OutputReport,
    actual: np.ndarray,
    expected: np.ndarray,
    tolerance: Tolerance,
    hidden: bool,
) -> None:
    """Compare one output, writing the status and message (and, for a public case, where it is
    off) into ``report``, whose status is "failed" until the output passes."""
    if actual.shape != expected.shape:
        report.message = (
            f"wrong shape: expected {_shape(expected.shape)}, got {_shape(actual.shape)}"
        )
        return
    if not (np.issubdtype(actual.dtype, np.floating) or np.issubdtype(actual.dtype, np.integer)):
        report.message = f"output dtype {actual.dtype} is not a real number type"
        return
    actual = actual.astype(np.float64)
    finite = np.isfinite(actual)
    if not finite.all():
        bad = int(actual.size - np.count_nonzero(finite))
        report.message = f"{bad} of {actual.size} output values are NaN or infinite"
        return
    if not _allclose(actual, expected, tolerance):
        if hidden:
            report.message = "values differ from the expected output beyond the tolerance"
        else:
            error = np.abs(actual - expected)
            where = np.unravel_index(int(np.argmax(error)), error.shape)
            report.max_error = float(error[where])
            report.max_error_index = [int(i) for i in where]
            report.error_grid = error_grid(error)
            report.message = (
                f"largest error {report.max_error:.3g} at {list(report.max_error_index)}: "
                f"got {actual[where]:.6g}, expected {expected[where]:.6g}"
            )
        return
    report.status = "passed"


def _compare_raises(case: TestCase, outcome: CaseOutcome | None, run_status: str) -> CaseReport:
    """A case that requires the function to raise ``case.raises``. On a hidden case the
    message is fixed: what the submission did instead is its own material."""
    wanted = case.raises
    report = CaseReport(name=case.name, visibility=case.visibility, status="error", raises=wanted)
    if outcome is None:
        report.message = _not_run(run_status)
        return report
    report.seconds = outcome.seconds
    report.status = "failed"
    if outcome.mutated_inputs:
        report.message = f"modified its input {', '.join(outcome.mutated_inputs)} in place"
    elif outcome.error is not None and outcome.error.type == wanted:
        report.status = "passed"
        report.message = f"raised {wanted}, as required"
    elif case.visibility == "hidden":
        report.message = f"expected the function to raise {wanted}; it did not"
    elif outcome.error is not None:
        report.message = (
            f"expected the function to raise {wanted}, but it raised "
            f"{error_message(outcome, hidden=False)}"
        )
    else:
        report.message = f"expected the function to raise {wanted}, but it returned normally"
    return report


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
    cases: Sequence[TestCase],
    run: RunResult,
    tolerance: Tolerance,
    outputs: Sequence[Returns] | None = None,
) -> list[CaseReport]:
    """Reports in case order. Hidden cases are reported as "hidden-1", "hidden-2"...: their
    names are hidden material like their inputs."""
    by_name = {outcome.name: outcome for outcome in run.cases}
    reports = []
    hidden = 0
    for case in cases:
        report = compare_case(case, by_name.get(case.name), tolerance, run.status, outputs)
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
