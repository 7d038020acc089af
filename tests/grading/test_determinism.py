"""The generic nondeterministic check, through the real bwrap sandbox: one public example is
called again as the run's last, hidden call, and the two outputs are compared on the host."""

from __future__ import annotations

from pathlib import Path

from app.grading.pipeline import grade_submission
from app.grading.verdicts import Verdict
from app.problems.loader import Problem
from sandbox.protocol import Sandbox

CORRECT = (Path(__file__).parent / "corpus" / "correct_reshape.py").read_text()
SOFTMAX = "    weights = weights / weights.sum(axis=-1, keepdims=True)\n"
# Dropout on the attention weights, left on: np.random without a seed.
DROPOUT = CORRECT.replace(
    SOFTMAX,
    SOFTMAX + "    weights = weights * (np.random.rand(*weights.shape) > 0.1) / 0.9\n",
)
# The same dropout with a fixed seed: wrong, but the same every call.
SEEDED = CORRECT.replace(
    SOFTMAX,
    SOFTMAX
    + "    keep = np.random.default_rng(0).random(weights.shape) > 0.1\n"
    + "    weights = weights * keep / 0.9\n",
)


def test_dropout_left_on_is_diagnosed_nondeterministic(mha: Problem, bwrap: Sandbox):
    assert DROPOUT != CORRECT
    report = grade_submission(mha, DROPOUT, bwrap)
    assert report.verdict == Verdict.WRONG_ANSWER
    assert [d.code for d in report.diagnoses] == ["nondeterministic"]
    (found,) = report.diagnoses
    assert found.requirement is None and found.title and found.hint
    # Fixed words only: nothing the hidden repeat returned (values, sizes) is quoted.
    assert (
        found.evidence == "One call was repeated with the same inputs and gave a different output."
    )
    assert {r.status for r in report.requirements} == {"not_checked"}


def test_correct_and_seeded_random_submissions_are_not_nondeterministic(
    mha: Problem, bwrap: Sandbox
):
    report = grade_submission(mha, CORRECT, bwrap)
    assert report.verdict == Verdict.ACCEPTED and not report.diagnoses
    seeded = grade_submission(mha, SEEDED, bwrap)
    assert seeded.verdict == Verdict.WRONG_ANSWER
    codes = [d.code for d in seeded.diagnoses]
    assert codes and "nondeterministic" not in codes


def test_what_the_repeated_call_prints_is_not_shown(mha: Problem, bwrap: Sandbox):
    code = CORRECT.replace(
        "    batch, n_q, d_model = Q.shape\n",
        "    batch, n_q, d_model = Q.shape\n    print('call', float(Q.sum()))\n",
    )
    report = grade_submission(mha, code, bwrap, public_only=True)
    assert report.verdict == Verdict.ACCEPTED
    shown = [line for line in report.stdout.splitlines() if line.startswith("call")]
    # One line per public example: the repeat of the first one ran hidden, after the probes.
    assert len(shown) == len(mha.examples)
