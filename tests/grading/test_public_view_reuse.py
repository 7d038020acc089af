"""The public view reuses the whole run's diagnosis only when the public cases alone would give
the same one: whatever the run, it equals the view computed from scratch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from app.grading import pipeline
from app.grading.pipeline import grade_run
from app.problems.hooks import exception_name
from app.problems.loader import Problem
from sandbox.protocol import CaseError, CaseOutcome, RunResult


def reference_run(problem: Problem) -> RunResult:
    """The reference's outcomes for every case and probe, computed here (no sandbox)."""
    probes = problem.diagnostics.probes if problem.diagnostics else ()
    outcomes = []
    for case in (*problem.examples, *problem.hidden, *probes):
        try:
            outcomes.append(CaseOutcome(name=case.name, output=problem.solve(case.inputs)))
        except Exception as exc:
            error = CaseError(type=exception_name(exc), message=str(exc))
            outcomes.append(CaseOutcome(name=case.name, error=error))
    return RunResult(status="ok", cases=outcomes, backend="none")


def hidden_wrong(problem: Problem, run: RunResult) -> RunResult:
    first = problem.hidden[0].name
    cases = [
        o.model_copy(update={"output": np.asarray(o.output) + 1.0}) if o.name == first else o
        for o in run.cases
    ]
    return run.model_copy(update={"cases": cases})


def hidden_mutated(problem: Problem, run: RunResult) -> RunResult:
    first = problem.hidden[0].name
    cases = [
        o.model_copy(update={"mutated_inputs": ["Q"]}) if o.name == first else o for o in run.cases
    ]
    return run.model_copy(update={"cases": cases})


RUNS: dict[str, Callable[[Problem, RunResult], RunResult]] = {
    "correct": lambda problem, run: run,
    "a hidden case wrong": hidden_wrong,
    "a hidden case changed its input": hidden_mutated,
}


@pytest.mark.parametrize("kind", list(RUNS))
def test_the_public_view_is_the_one_computed_from_the_public_cases(mha: Problem, kind: str) -> None:
    cases = mha.examples + mha.hidden
    run = RUNS[kind](mha, reference_run(mha))
    report = grade_run(mha, cases, run)
    reports = report.tests
    assert report.public_view == pipeline._public_view(mha, cases, run, reports)
    if kind != "correct":
        # The whole run's diagnosis names what a hidden case did; the public view must not.
        assert report.public_view is not None
        assert report.diagnoses and not report.public_view.diagnoses


def test_an_accepted_run_is_diagnosed_once(mha: Problem, monkeypatch: Any) -> None:
    calls = []
    real = pipeline.diagnose

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "diagnose", counted)
    report = grade_run(mha, mha.examples + mha.hidden, reference_run(mha))
    assert report.verdict.value == "accepted"
    assert len(calls) == 1
