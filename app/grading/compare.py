"""Compares a sandbox run's raw outputs with the reference's, case by case, outside the sandbox.

Order of checks per case: did it run, were the inputs left alone, then per output the shape,
non-finite values, then ``np.allclose(actual, expected, rtol, atol)`` in float64 with the
reference as the second argument (so the tolerance scales with the expected value, never with
the submission's). A case that requires an exception passes when the function raises exactly
that type.
A hidden case's (or a probe's) report says only which of a few outcomes it had (per output, for
a problem with several), in fixed wording chosen here (``HIDDEN_WORDING``): no values,
positions, actual shapes or dtypes, no exception text and no per-case time. Everything the
submission controls while it holds hidden inputs could spell them out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from app.grading.schemas import CaseReport, OutputReport
from app.grading.verdicts import Verdict, verdict_of_status
from app.problems.cases import TestCase, parts_of
from app.problems.crashes import crash_hint
from app.problems.spec import EXACT, Returns, Tolerance
from sandbox.protocol import CaseError, CaseOutcome, RunResult

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
    # A problem with several outputs: not a tuple of real arrays, one per output.
    "not_outputs": "did not return a tuple of arrays of real numbers, one per output",
    # A case that requires an exception: the call returned instead.
    "not_raised": "did not raise the expected error",
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
    case: TestCase,
    outcome: CaseOutcome | None,
    tolerance: Tolerance,
    run_status: str = "ok",
    outputs: Sequence[Returns] | None = None,
) -> CaseReport:
    """One case's report. ``outcome`` is None when the run ended before reaching the case.
    ``outputs`` (the problem's ``returns``) gives each output its name and tolerance; without it
    the case has one output, compared with ``tolerance``."""
    if case.raises is not None:
        return _compare_raises(case, outcome, run_status)
    assert case.expected is not None, "cases are compared only after the reference filled them"
    hidden = case.visibility == "hidden"
    several = isinstance(case.expected, tuple)
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
    if not hidden:
        report.seconds = rounded(outcome.seconds, PUBLIC_SECONDS_STEP)
    if outcome.output is None:
        report.message = _no_output(outcome, hidden, several)
        if not hidden and outcome.error is not None:
            _name_crash(report, outcome.error)
        return report
    actual = parts_of(outcome.output)
    if not hidden:
        report.actual_shape = list(actual[0].shape)
    report.status = "failed"
    if outcome.mutated_inputs:
        report.message = (
            HIDDEN_WORDING["mutated"]
            if hidden
            else f"modified its input {', '.join(outcome.mutated_inputs)} in place"
        )
        return report
    if not several:
        if isinstance(outcome.output, tuple):
            report.message = (
                HIDDEN_WORDING["not_an_array"]
                if hidden
                else f"returned a tuple of {len(actual)} arrays; expected one array"
            )
            return report
        exact = outputs is not None and len(outputs) > 0 and outputs[0].exact
        _compare_array(report, actual[0], expected[0], EXACT if exact else tolerance, hidden)
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
            HIDDEN_WORDING["not_outputs"]
            if hidden
            else f"returned {got}; expected a tuple of {len(expected)} arrays ({', '.join(names)})"
        )
        return report
    for spec, mine, want in zip(specs, actual, expected, strict=True):
        part = OutputReport(name=spec.name, status="failed", expected_shape=list(want.shape))
        if not hidden:
            part.actual_shape = list(mine.shape)
        _compare_array(
            part, mine, want, EXACT if spec.exact else spec.tolerance or tolerance, hidden
        )
        report.outputs.append(part)
    wrong = [o for o in report.outputs if o.status != "passed"]
    if not wrong:
        report.status = "passed"
        return report
    first = wrong[0]
    report.expected_shape, report.actual_shape = first.expected_shape, first.actual_shape
    report.max_error, report.max_error_index = first.max_error, first.max_error_index
    report.error_grid = first.error_grid
    # Output names are the problem's own: "weights: wrong shape" says nothing hidden.
    report.message = "; ".join(f"{o.name}: {o.message}" for o in wrong)
    return report


def _no_output(outcome: CaseOutcome, hidden: bool, several: bool) -> str:
    """Why a case has no output: it raised, or returned something that is not what is due."""
    if not hidden:
        return error_message(outcome) if outcome.error else "returned nothing"
    if outcome.error is not None and outcome.error.type != "InvalidOutput":
        return HIDDEN_WORDING["error"]
    return HIDDEN_WORDING["not_outputs" if several else "not_an_array"]


def _name_crash(report: CaseReport, error: CaseError) -> None:
    """A public case's crash the grader knows by name gets its fixed hint. Never called for a
    hidden case: its message never leaves the sandbox, and even its type would be read here."""
    named = crash_hint(error.type, error.message)
    if named is not None:
        report.crash, hint = named
        report.message = f"{report.message} ({hint})"


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
    off) into ``report``, whose status is "failed" until the output passes. A hidden case's
    message is only ``HIDDEN_WORDING``'s for the outcome."""
    found = array_outcome(actual, expected, tolerance)
    if found == "passed":
        report.status = "passed"
    elif hidden:
        report.message = HIDDEN_WORDING[found]
    elif found == "shape":
        report.message = (
            f"wrong shape: expected {_shape(expected.shape)}, got {_shape(actual.shape)}"
        )
    elif found == "not_an_array":
        report.message = f"output dtype {actual.dtype} is not a real number type"
    elif found == "non_finite":
        bad = int(actual.size - np.count_nonzero(np.isfinite(actual)))
        report.message = f"{bad} of {actual.size} output values are NaN or infinite"
    else:
        error = np.abs(actual.astype(np.float64) - expected)
        where = np.unravel_index(int(np.argmax(error)), error.shape)
        report.max_error = float(error[where])
        report.max_error_index = [int(i) for i in where]
        report.error_grid = error_grid(error)
        report.message = (
            f"largest error {report.max_error:.3g} at {list(report.max_error_index)}: "
            f"got {actual[where]:.6g}, expected {expected[where]:.6g}"
        )


def array_outcome(actual: np.ndarray, expected: np.ndarray, tolerance: Tolerance) -> str:
    """Which of ``HIDDEN_WORDING``'s outcomes one output had ("shape", "not_an_array",
    "non_finite", "values"), or ``"passed"``."""
    if actual.shape != expected.shape:
        return "shape"
    # A bool output (tolerance zero: compared exactly) is bool on both sides.
    exact_bool = tolerance.rtol == 0 and actual.dtype == np.bool_
    if not (_real(actual) or exact_bool):
        return "not_an_array"
    actual = actual.astype(np.float64)
    if not np.isfinite(actual).all():
        return "non_finite"
    return "passed" if _allclose(actual, expected, tolerance) else "values"


def raised_type_is(error: CaseError, wanted: str) -> bool:
    """The error is of the required type or of a subclass of it."""
    return error.type == wanted or wanted in error.bases


def _compare_raises(case: TestCase, outcome: CaseOutcome | None, run_status: str) -> CaseReport:
    """A case that requires the function to raise ``case.raises``. On a hidden case the
    exception's type is a name the sandbox lets through only from a short list of standard ones
    (``sandbox.inside.errors.HIDDEN_EXCEPTION_NAMES``), and the message is fixed: what the
    submission did instead is its own material."""
    wanted = case.raises
    hidden = case.visibility == "hidden"
    report = CaseReport(name=case.name, visibility=case.visibility, status="error", raises=wanted)
    if outcome is None:
        report.message = _not_run(run_status)
        return report
    if not hidden:
        report.seconds = rounded(outcome.seconds, PUBLIC_SECONDS_STEP)
    report.status = "failed"
    raised = outcome.error is not None and outcome.error.type != "InvalidOutput"
    if outcome.mutated_inputs:
        report.message = (
            HIDDEN_WORDING["mutated"]
            if hidden
            else f"modified its input {', '.join(outcome.mutated_inputs)} in place"
        )
    elif outcome.error is not None and wanted is not None and raised_type_is(outcome.error, wanted):
        report.status = "passed"
        report.message = f"raised {wanted}, as required"
    elif hidden:
        report.message = HIDDEN_WORDING["error" if raised else "not_raised"]
    elif outcome.error is not None:
        report.message = (
            f"expected the function to raise {wanted}, but it raised {error_message(outcome)}"
        )
    else:
        report.message = f"expected the function to raise {wanted}, but it returned normally"
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
    decided = verdict_of_status(run.status)
    if decided is not None:
        return decided
    if any(r.status == "error" for r in reports):
        return Verdict.RUNTIME_ERROR
    if any(r.status == "failed" for r in reports):
        return Verdict.WRONG_ANSWER
    return Verdict.ACCEPTED
