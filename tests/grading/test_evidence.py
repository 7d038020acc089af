"""Evidence says what the probes vary and where the output differs from the correct one; a
function that runs on some probes only is diagnosed from those, and what it raised on the others
(a probe runs with the hidden cases) never reaches the student."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from app.grading.diagnose import Finding, diagnose
from app.grading.faulttable import fault_table
from app.grading.pipeline import grade_submission
from app.problems.loader import Problem
from sandbox.protocol import CaseError, CaseOutcome, Sandbox
from tests.grading.conftest import bwrap  # noqa: F401  (the real sandbox fixture)


def find(problem: Problem, impl: Callable[..., object]) -> Finding:
    outcomes = {}
    for probe in problem.diagnostics.probes:  # type: ignore[union-attr]
        args = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in probe.inputs.items()}
        try:
            with np.errstate(all="ignore"):
                result = impl(**args)
            outcomes[probe.name] = CaseOutcome(name=probe.name, output=result)
        except Exception as exc:
            outcomes[probe.name] = CaseOutcome(
                name=probe.name, error=CaseError(type=type(exc).__name__, message=str(exc))
            )
    table = fault_table(problem)
    return diagnose(problem, table, outcomes, list(outcomes.values()), True)


def test_evidence_names_what_the_probes_vary_and_where_the_output_differs(
    problems: dict[str, Problem],
):
    masked = problems["masked-attention"]
    finding = find(
        masked,
        lambda **a: masked.reference(**a, faults=frozenset({"accepts-empty-row", "fill-finite"})),
    )
    assert finding.alternatives == [frozenset({"accepts-empty-row"})]
    assert "2-D to 4-D inputs" in finding.evidence
    assert "no mask" in finding.evidence and "a key-padding mask" in finding.evidence
    assert finding.evidence.endswith(
        "differs from the correct one on the 2 probes with a query with every key blocked."
    )


def test_a_fault_seen_only_at_some_sizes_is_located_by_them(problems: dict[str, Problem]):
    causal = problems["causal-attention"]
    finding = find(
        causal, lambda **a: causal.reference(**a, faults=frozenset({"upper-left-alignment"}))
    )
    assert finding.alternatives == [frozenset({"upper-left-alignment"})]
    # Without cached positions both alignments agree: only the other probes show the mistake.
    assert "on 4 probes" in finding.evidence, finding.evidence


def test_code_for_one_rank_is_diagnosed_from_the_probes_it_ran_on(problems: dict[str, Problem]):
    masked = problems["masked-attention"]

    def three_d_only(q, k, v, mask=None):
        if q.ndim != 3:
            raise ValueError("axes don't match array")
        return masked.reference(q, k, v, mask, faults=frozenset({"mask-added-as-number"}))

    finding = find(masked, three_d_only)
    assert finding.alternatives == [frozenset({"mask-added-as-number"})]
    assert list(finding.contract) == ["assumes-3d-inputs"]
    assert (
        "could not run on the 3 probes with 2-D and 4-D inputs"
        in finding.contract["assumes-3d-inputs"]
    )


def test_a_plain_wrong_answer_off_the_marked_probes_is_not_a_rank_assumption(
    problems: dict[str, Problem],
):
    masked = problems["masked-attention"]

    def wrong_beyond_3d(q, k, v, mask=None):
        out, w = masked.reference(q, k, v, mask)
        return (out, w) if q.ndim == 3 else (out + 1.0, w)

    finding = find(masked, wrong_beyond_3d)
    assert "assumes-3d-inputs" not in finding.contract
    assert "unrecognized" in finding.contract


def test_what_a_probe_raised_never_reaches_the_student(
    problems: dict[str, Problem],
    bwrap: Sandbox,  # noqa: F811
):
    masked = problems["masked-attention"]
    source = (
        Path(__file__).parents[1] / "problems/corpus/masked-attention/correct_vectorised.py"
    ).read_text()
    leaky = (
        source
        + """
_solve = masked_attention


def masked_attention(q, k, v, mask=None):
    if q.ndim != 3:
        raise ValueError("LEAK " + q.tobytes().hex() + " " + repr(q.shape))
    return _solve(q, k, v, mask)
"""
    )
    report = grade_submission(masked, leaky, bwrap)
    assert [d.code for d in report.diagnoses] == ["assumes-3d-inputs"]
    shown = report.model_dump_json()
    for probe in masked.diagnostics.probes:  # type: ignore[union-attr]
        q = probe.inputs["q"]
        assert isinstance(q, np.ndarray)
        assert q.tobytes().hex() not in shown, probe.name
    assert "could not run on the 3 probes with 2-D and 4-D inputs" in shown
