"""grade_submission end to end through the real bwrap sandbox."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from app.grading.pipeline import grade_submission
from app.grading.verdicts import Verdict
from app.problems.loader import Problem
from sandbox.protocol import RunRequest, RunResult, Sandbox

CORRECT = (Path(__file__).parent / "corpus" / "correct_reshape.py").read_text()


@dataclass
class Recording:
    """The real sandbox, remembering what it was asked to run."""

    inner: Sandbox
    requests: list[RunRequest] = field(default_factory=list)
    name: str = "recording"

    def run(self, request: RunRequest) -> RunResult:
        self.requests.append(request)
        return self.inner.run(request)


def test_one_run_with_cases_and_probes_and_no_expected_output(mha: Problem, bwrap: Sandbox):
    sandbox = Recording(bwrap)
    report = grade_submission(mha, CORRECT, sandbox)
    assert report.verdict == Verdict.ACCEPTED and report.score == 1.0
    assert not report.diagnoses
    (request,) = sandbox.requests
    probes = [p.name for p in mha.diagnostics.probes]  # type: ignore[union-attr]
    cases = [*mha.examples, *mha.hidden]
    # Last, hidden: the largest example again, for the determinism check.
    largest = max(mha.examples, key=lambda c: sum(np.size(v) for v in c.inputs.values()))
    assert largest is not mha.examples[0]  # the check below tells "largest" from "first"
    repeat = f"{largest.name}~repeat"
    assert [c.name for c in request.cases] == [c.name for c in cases] + probes + [repeat]
    assert request.cases[-1].hidden
    first = next(c for c in request.cases if c.name == largest.name)
    assert all(np.array_equal(request.cases[-1].args[k], v) for k, v in first.args.items())
    public = [c.name for c in mha.examples]
    hidden = [f"hidden-{i}" for i in range(1, len(mha.hidden) + 1)]
    assert [t.name for t in report.tests] == public + hidden
    assert not {c.name for c in mha.hidden} & {t.name for t in report.tests}
    sent = [
        a.tobytes() for c in request.cases for a in c.args.values() if isinstance(a, np.ndarray)
    ]
    for case in cases:
        assert case.expected is not None
        assert case.expected.tobytes() not in sent
    assert set(report.timings) == {"sandbox", "compare", "diagnose", "total"}
    assert 0 <= report.timings["diagnose"] < report.timings["total"]
    assert report.timings["sandbox"] <= report.timings["total"]


def test_public_only_runs_just_the_examples_and_still_diagnoses(mha: Problem, bwrap: Sandbox):
    code = CORRECT.replace("/ np.sqrt(d_k)", "")
    sandbox = Recording(bwrap)
    report = grade_submission(mha, code, sandbox, public_only=True)
    assert [t.name for t in report.tests] == [c.name for c in mha.examples]
    assert all(t.visibility == "public" for t in report.tests)
    assert [d.code for d in report.diagnoses] == ["no-scale"]
    assert report.verdict == Verdict.WRONG_ANSWER
    failing = [t for t in report.tests if t.status == "failed"]
    assert failing and all(t.max_error is not None and t.max_error_index for t in failing)


def test_explicit_cases(mha: Problem, bwrap: Sandbox):
    report = grade_submission(mha, CORRECT, bwrap, cases=mha.hidden[:2])
    assert [t.name for t in report.tests] == ["hidden-1", "hidden-2"]
    assert report.verdict == Verdict.ACCEPTED


def test_hidden_cases_do_not_leak_values(mha: Problem, bwrap: Sandbox):
    # Raises with a hidden input's value in the message, only on hidden-looking shapes.
    code = CORRECT.replace(
        "    batch, n_q, d_model = Q.shape\n",
        "    batch, n_q, d_model = Q.shape\n"
        "    if d_model >= 8:\n"
        "        raise ValueError(f'got {Q[0, 0, 0]!r} and {float(W_o[-1, -1])}')\n",
    )
    report = grade_submission(mha, code, bwrap)
    assert report.verdict == Verdict.RUNTIME_ERROR
    hidden = [t for t in report.tests if t.visibility == "hidden"]
    assert hidden and all(t.status == "error" for t in hidden)
    text = report.model_dump_json()
    for case in mha.hidden:
        for value in (case.inputs["Q"].flat[0], case.inputs["W_o"].flat[-1]):
            assert repr(float(value)) not in text
            assert str(float(value)) not in text
    assert all(t.max_error is None for t in hidden)


def test_hidden_wrong_answers_carry_shapes_and_statuses_only(mha: Problem, bwrap: Sandbox):
    report = grade_submission(mha, CORRECT.replace("@ W_o", "@ W_o.T"), bwrap)
    hidden = [t for t in report.tests if t.visibility == "hidden"]
    assert all(t.status == "failed" for t in hidden)
    for t in hidden:
        assert t.max_error is None and t.max_error_index is None
        assert not any(ch.isdigit() for ch in t.message)
    assert [d.code for d in report.diagnoses] == ["wo-transposed"]


@pytest.mark.parametrize(
    "code",
    [
        "def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads)\n    return Q\n",
        "import numpy as np\n",
        "import no_such_module\n",
    ],
)
def test_compile_errors_check_nothing(mha: Problem, bwrap: Sandbox, code: str):
    report = grade_submission(mha, code, bwrap)
    assert report.verdict == Verdict.COMPILE_ERROR
    assert report.score == 0.0
    assert report.error
    assert not report.diagnoses
    assert {r.status for r in report.requirements} == {"not_checked"}
    assert all(t.status == "error" for t in report.tests)


def test_stdout_is_returned(mha: Problem, bwrap: Sandbox):
    report = grade_submission(mha, "print('hello from the submission')\n" + CORRECT, bwrap)
    assert report.verdict == Verdict.ACCEPTED
    assert "hello from the submission" in report.stdout
