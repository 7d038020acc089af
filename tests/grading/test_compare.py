"""Per-case comparison, score and verdict, on hand-made sandbox results."""

from __future__ import annotations

import numpy as np
import pytest

from app.grading.compare import (
    HIDDEN_WORDING,
    compare_case,
    compare_cases,
    score,
    verdict,
)
from app.grading.verdicts import Verdict
from app.problems.cases import TestCase as Case
from app.problems.spec import Returns, Tolerance
from sandbox.protocol import CaseError, CaseOutcome, RunResult

TOL = Tolerance(rtol=1e-7, atol=1e-9)
EXPECTED = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, 1e-12]])


def case(visibility: str = "public", name: str = "c") -> Case:
    return Case(name=name, inputs={}, visibility=visibility, expected=EXPECTED)  # type: ignore[arg-type]


def outcome(output=None, **kw) -> CaseOutcome:
    return CaseOutcome(name="c", output=output, **kw)


def test_equal_and_reordered_float64_pass():
    assert compare_case(case(), outcome(EXPECTED.copy()), TOL).status == "passed"
    # Within rtol of the reference, and atol absorbs the tiny expected entry.
    nudged = EXPECTED * (1 + 5e-8) + np.array([[0, 0, 0], [0, 0, 5e-10]])
    assert compare_case(case(), outcome(nudged), TOL).status == "passed"


def test_reference_is_the_second_argument_of_allclose():
    # |a - e| <= atol + rtol*|e|: scaled by the expected value, not by the submission's.
    loose = Tolerance(rtol=0.5, atol=0.0)
    c = Case(name="c", inputs={}, visibility="public", expected=np.array([1.0]))
    # 0.8 <= 0.5 * 1.8 would pass with the arguments swapped; 0.8 > 0.5 * 1.0 fails.
    assert compare_case(c, outcome(np.array([1.8])), loose).status == "failed"
    assert compare_case(c, outcome(np.array([1.4])), loose).status == "passed"


@pytest.mark.parametrize("expected_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("tol", [Tolerance(rtol=0.5, atol=1e-6), Tolerance(rtol=1e-7, atol=0.0)])
def test_the_closeness_test_is_exactly_numpys_allclose(expected_dtype, tol):
    # compare_case skips np.allclose's general-case work for finite float64 references: it
    # must still decide every case as np.allclose does, at the tolerance's edge included.
    rng = np.random.default_rng(7)
    decided = set()
    for _ in range(300):
        expected = (rng.standard_normal(8) * 10.0 ** rng.integers(-9, 4)).astype(expected_dtype)
        if rng.random() < 0.1:
            expected[rng.integers(8)] = rng.choice([np.inf, -np.inf, np.nan])
        reference = np.nan_to_num(expected.astype(np.float64), posinf=1.0, neginf=1.0)
        edge = tol.atol + tol.rtol * np.abs(reference)
        # Finite, as compare_case only compares finite outputs; within 10% of the edge.
        actual = reference + rng.choice([-1.0, 1.0], 8) * edge * rng.uniform(0.9, 1.1, 8)
        c = Case(name="c", inputs={}, visibility="public", expected=expected)
        got = compare_case(c, outcome(actual), tol).status
        want = np.allclose(actual, expected, rtol=tol.rtol, atol=tol.atol)
        assert got == ("passed" if want else "failed")
        decided.add(got)
    assert decided == {"passed", "failed"}


def test_public_mismatch_reports_largest_error_and_where():
    wrong = EXPECTED.copy()
    wrong[1, 1] += 0.25
    wrong[0, 0] += 0.01
    report = compare_case(case(), outcome(wrong), TOL)
    assert report.status == "failed"
    assert report.max_error == pytest.approx(0.25)
    assert report.max_error_index == [1, 1]
    assert "[1, 1]" in report.message and "5.25" in report.message
    np.testing.assert_allclose(np.array(report.error_grid), np.abs(wrong - EXPECTED))


def test_error_grid_takes_the_worst_over_leading_axes_and_is_capped():
    expected = np.zeros((3, 40, 50))
    actual = expected.copy()
    actual[2, 1, 4] = 0.5
    actual[0, 1, 4] = 0.25
    actual[1, 39, 49] = 9.0  # outside the grid's cap: counted in max_error, not drawn
    c = Case(name="c", inputs={}, visibility="public", expected=expected)
    report = compare_case(c, outcome(actual), TOL)
    assert report.max_error == 9.0
    grid = np.array(report.error_grid)
    assert grid.shape == (32, 32)
    assert grid[1, 4] == 0.5 and np.count_nonzero(grid) == 1


def test_hidden_mismatch_message_has_no_values_or_positions():
    wrong = EXPECTED + 0.123456
    report = compare_case(case("hidden"), outcome(wrong), TOL)
    assert report.status == "failed"
    assert report.max_error is None and report.max_error_index is None
    assert report.error_grid is None
    assert not any(ch.isdigit() for ch in report.message)


def test_shape_is_checked_before_values():
    report = compare_case(case(), outcome(np.zeros((3, 2))), TOL)
    assert report.status == "failed"
    assert report.message == "wrong shape: expected (2, 3), got (3, 2)"
    assert report.actual_shape == [3, 2]


def test_non_finite_is_checked_before_closeness():
    bad = EXPECTED.copy()
    bad[0, 1] = np.nan
    bad[1, 0] = np.inf
    report = compare_case(case(), outcome(bad), TOL)
    assert report.status == "failed"
    assert report.message.startswith("2 of 6 output values are NaN or infinite")


def test_mutated_inputs_fail_even_when_the_output_is_right():
    report = compare_case(case(), outcome(EXPECTED.copy(), mutated_inputs=["Q", "V"]), TOL)
    assert report.status == "failed"
    assert "Q, V" in report.message


def test_exceptions_are_errors_and_hidden_ones_say_only_that_they_raised():
    err = CaseError(type="ValueError", message="bad value 0.4471 and 17 in shape (2, 3)")
    public = compare_case(case(), outcome(error=err), TOL)
    hidden = compare_case(case("hidden"), outcome(error=err), TOL)
    assert public.status == hidden.status == "error"
    assert public.message == "ValueError: bad value 0.4471 and 17 in shape (2, 3)"
    assert hidden.message == HIDDEN_WORDING["error"]


# What a submission controls in a hidden case's outcome, each set to carry a secret: the
# exception's type name and text, the shape and dtype it returns, how many values are off, which
# inputs it reshaped, and its time.
HOSTILE = [
    outcome(error=CaseError(type="leak.x0_4471", message="0.4471", traceback="0.4471")),
    outcome(error=CaseError(type="InvalidOutput", message="returned leak.x0_4471")),
    outcome(np.zeros((0, 4471))),
    outcome(np.zeros((2, 3), dtype=complex) + 0.4471j),
    outcome(np.where(np.arange(6).reshape(2, 3) < 4, np.nan, 1.0)),
    outcome(EXPECTED + 0.4471),
    outcome(EXPECTED.copy(), mutated_inputs=["Q", "W_o"]),
    outcome(EXPECTED.copy(), seconds=4.471),
]


@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_hidden_case_reports_only_fixed_wording(hostile):
    report = compare_case(case("hidden"), hostile, TOL)
    assert report.status == "passed" or report.message in HIDDEN_WORDING.values()
    assert report.actual_shape is None and report.seconds is None
    assert report.max_error is None and report.error_grid is None
    assert "4471" not in report.model_dump_json()
    assert report.expected_shape == [2, 3]  # the host's own data


def test_each_hidden_outcome_has_its_own_wording():
    messages = [compare_case(case("hidden"), h, TOL).message for h in HOSTILE[1:-1]]
    assert messages == [
        HIDDEN_WORDING[k]
        for k in ("not_an_array", "shape", "not_an_array", "non_finite", "values", "mutated")
    ]


def test_a_public_case_keeps_its_time_to_the_millisecond():
    report = compare_case(case(), outcome(EXPECTED.copy(), seconds=0.123456), TOL)
    assert report.seconds == 0.123


def test_complex_output_is_not_a_real_number():
    report = compare_case(case(), outcome(EXPECTED.astype(complex)), TOL)
    assert report.status == "failed" and "complex" in report.message


def test_missing_outcome_says_the_run_ended_early():
    report = compare_case(case(), None, TOL, "time_limit_exceeded")
    assert report.status == "error"
    assert "time limit exceeded" in report.message


def test_score_is_the_weighted_fraction_and_verdict_needs_every_case():
    cases = [
        Case(name=n, inputs={}, visibility="hidden", weight=w, expected=EXPECTED)
        for n, w in (("a", 1.0), ("b", 3.0))
    ]
    run = RunResult(
        status="ok",
        cases=[
            CaseOutcome(name="a", output=EXPECTED + 1),
            CaseOutcome(name="b", output=EXPECTED.copy()),
        ],
    )
    reports = compare_cases(cases, run, TOL)
    assert [r.status for r in reports] == ["failed", "passed"]
    assert score(cases, reports) == pytest.approx(0.75)
    assert verdict(run, reports) == Verdict.WRONG_ANSWER
    run.cases[0] = CaseOutcome(name="a", output=EXPECTED.copy())
    reports = compare_cases(cases, run, TOL)
    assert score(cases, reports) == 1.0
    assert verdict(run, reports) == Verdict.ACCEPTED


def test_a_raising_case_is_a_runtime_error():
    cases = [case()]
    run = RunResult(status="ok", cases=[outcome(error=CaseError(type="KeyError", message="x"))])
    assert verdict(run, compare_cases(cases, run, TOL)) == Verdict.RUNTIME_ERROR


@pytest.mark.parametrize(
    "status",
    [
        "compile_error",
        "runtime_error",
        "time_limit_exceeded",
        "memory_limit_exceeded",
        "output_limit_exceeded",
        "internal_error",
    ],
)
def test_run_status_decides_the_verdict(status):
    run = RunResult(status=status, cases=[CaseOutcome(name="c", output=EXPECTED.copy())])
    reports = compare_cases([case()], run, TOL)
    assert verdict(run, reports) == Verdict(status)


# --- several outputs and expected errors, on hidden cases -------------------------------------

WEIGHTS = np.full((2, 2), 0.5)
OUTPUTS = [Returns(name="output", shape=["a", "b"]), Returns(name="weights", shape=["a", "a"])]


def two_outputs(visibility: str = "hidden") -> Case:
    return Case(name="c", inputs={}, visibility=visibility, expected=(EXPECTED, WEIGHTS))  # type: ignore[arg-type]


def test_a_hidden_case_with_several_outputs_words_each_output_in_fixed_terms():
    nan = WEIGHTS.copy()
    nan[0, 0] = np.nan
    worded = [
        ((EXPECTED + 0.4471, WEIGHTS), "output: " + HIDDEN_WORDING["values"]),
        ((EXPECTED, np.zeros((4471, 2))), "weights: " + HIDDEN_WORDING["shape"]),
        (
            (np.zeros((0, 4471)), nan),
            f"output: {HIDDEN_WORDING['shape']}; weights: {HIDDEN_WORDING['non_finite']}",
        ),
    ]
    for (first, second), message in worded:
        report = compare_case(two_outputs(), outcome((first, second)), TOL, outputs=OUTPUTS)
        assert report.status == "failed" and report.message == message
        shown = report.model_dump_json()
        assert "4471" not in shown and report.actual_shape is None
        for part in report.outputs:
            assert part.actual_shape is None and part.max_error is None
            assert part.error_grid is None and part.max_error_index is None
        assert [p.expected_shape for p in report.outputs] == [[2, 3], [2, 2]]  # the host's own
    # The same outputs on a public case keep every detail.
    public = compare_case(
        two_outputs("public"), outcome((EXPECTED + 0.25, WEIGHTS)), TOL, outputs=OUTPUTS
    )
    assert public.outputs[0].max_error == pytest.approx(0.25)
    passed = compare_case(two_outputs(), outcome((EXPECTED, WEIGHTS)), TOL, outputs=OUTPUTS)
    assert passed.status == "passed"


@pytest.mark.parametrize(
    "returned",
    [EXPECTED, (EXPECTED,), (EXPECTED, WEIGHTS, WEIGHTS)],
    ids=["one-array", "short-tuple", "long-tuple"],
)
def test_a_hidden_case_not_returning_the_outputs_due_says_only_that(returned):
    report = compare_case(two_outputs(), outcome(returned), TOL, outputs=OUTPUTS)
    assert report.status == "failed" and report.message == HIDDEN_WORDING["not_outputs"]
    invalid = outcome(error=CaseError(type="InvalidOutput", message="returned a tuple of 4471"))
    report = compare_case(two_outputs(), invalid, TOL, outputs=OUTPUTS)
    assert report.status == "error" and report.message == HIDDEN_WORDING["not_outputs"]


def raising(visibility: str) -> Case:
    return Case(name="c", inputs={}, visibility=visibility, raises="ValueError")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("got", "status", "hidden_message", "public_words"),
    [
        (outcome(error=CaseError(type="ValueError", message="x")), "passed", None, "as required"),
        (outcome(EXPECTED.copy()), "failed", HIDDEN_WORDING["not_raised"], "returned normally"),
        (
            outcome(error=CaseError(type="KeyError", message="0.4471")),
            "failed",
            HIDDEN_WORDING["error"],
            "it raised KeyError: 0.4471",
        ),
        (
            outcome(error=CaseError(type="InvalidOutput", message="returned 4471")),
            "failed",
            HIDDEN_WORDING["not_raised"],
            "InvalidOutput",
        ),
        (
            outcome(error=CaseError(type="ValueError", message="x"), mutated_inputs=["Q"]),
            "failed",
            HIDDEN_WORDING["mutated"],
            "modified its input Q",
        ),
    ],
    ids=["raised", "returned", "other-type", "invalid-output", "mutated"],
)
def test_an_expected_error_case_hidden_says_only_fixed_wording(
    got, status, hidden_message, public_words
):
    hidden = compare_case(raising("hidden"), got, TOL)
    public = compare_case(raising("public"), got, TOL)
    assert hidden.status == public.status == status
    assert public_words in public.message
    if hidden_message is not None:
        assert hidden.message == hidden_message
    assert hidden.seconds is None and "4471" not in hidden.model_dump_json()
    assert hidden.raises == "ValueError"  # what the case requires is the host's own
