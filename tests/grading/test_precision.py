"""Low precision is recognised by its signature: the computation carried out in float32 or
float16 reproduces the output to that dtype's rounding noise. A small real bug that is merely
close to the right answer is a wrong answer, not "low precision". Graded in the real sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.grading.pipeline import grade_submission
from app.grading.schemas import GradeReport
from app.problems.loader import Problem
from sandbox.protocol import Sandbox
from tests.grading.conftest import bwrap  # noqa: F401  (the real sandbox fixture)

ROOT = Path(__file__).parents[1]
# A correct, vectorised submission of each problem, in a student's own style.
CORRECT = {
    p: ROOT / "problems/corpus" / p / "correct_vectorised.py"
    for p in ("causal-attention", "grouped-query-attention", "masked-attention", "softmax-backward")
} | {"multi-head-attention": ROOT / "grading/corpus/correct_reshape.py"}


def _wrapped(problem: Problem, body: str) -> str:
    """The correct submission with its function renamed and called from ``body``, which sees it
    as ``_solve``."""
    name = problem.spec.function_name
    source = CORRECT[problem.id].read_text()
    return f"{source}\n_solve = {name}\n\n\ndef {name}(*args, **kwargs):\n{body}"


def in_dtype(problem: Problem, dtype: str) -> str:
    """Every float input cast to ``dtype`` on entry, so the whole computation runs in it."""
    return _wrapped(
        problem,
        f"    args = [a.astype(np.{dtype}) if isinstance(a, np.ndarray) and a.dtype.kind == 'f'"
        " else a for a in args]\n"
        "    return _solve(*args, **kwargs)\n",
    )


def perturbed(problem: Problem, amount: float) -> str:
    """A small real bug: ``amount * sin(x)`` added to every output (as in a layer norm that
    adds a stray term)."""
    return _wrapped(
        problem,
        "    out = _solve(*args, **kwargs)\n"
        f"    if isinstance(out, tuple):\n"
        f"        return tuple(o + {amount} * np.sin(o) for o in out)\n"
        f"    return out + {amount} * np.sin(out)\n",
    )


def codes(report: GradeReport) -> list[str]:
    return sorted(d.code for d in report.diagnoses)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("problem_id", sorted(CORRECT))
def test_a_genuine_low_precision_submission_is_named_with_its_dtype(
    problems: dict[str, Problem],
    bwrap: Sandbox,  # noqa: F811
    problem_id: str,
    dtype: str,
):
    problem = problems[problem_id]
    report = grade_submission(problem, in_dtype(problem, dtype), bwrap)
    assert report.verdict == "wrong_answer", (report.error, report.tests[:2])
    assert codes(report) == ["low-precision"]
    (low,) = report.diagnoses
    assert f"in {dtype}" in low.evidence
    assert {r.status for r in report.requirements} == {"passed"}


# 0.005 * sin(x) is within the old loose threshold (5e-3 of the output scale) on every problem:
# it was called "low precision" with every requirement passed.
@pytest.mark.parametrize("amount", [0.005, 0.01])
@pytest.mark.parametrize("problem_id", sorted(CORRECT))
def test_a_small_real_bug_is_a_wrong_answer_not_low_precision(
    problems: dict[str, Problem],
    bwrap: Sandbox,  # noqa: F811
    problem_id: str,
    amount: float,
):
    problem = problems[problem_id]
    report = grade_submission(problem, perturbed(problem, amount), bwrap)
    assert report.verdict == "wrong_answer"
    assert codes(report) == ["unrecognized"]
    assert "passed" not in {r.status for r in report.requirements}
