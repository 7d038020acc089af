"""The generic ``nondeterministic`` check: two calls with the same inputs must agree.

Dropout left on, or any unseeded randomness, makes a function answer the same inputs
differently, and then no output of it can be checked or explained. The run repeats one call as
its very last, a hidden one: the largest public example without an expected error (else the
first probe), with the same inputs. The two outputs are compared here, outside the sandbox, and only
whether they differ is reported, in the grader's own words: the repeat is a hidden call, so
nothing it returned (values, sizes, how far apart) reaches the student.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from app.grading.schemas import Diagnosis
from app.problems.cases import Inputs, TestCase
from app.problems.errormodel import Probe
from app.problems.loader import Problem
from sandbox.protocol import CaseOutcome, RunResult

CODE = "nondeterministic"
# Instructors' case names allow no "~"; build_request refuses a folder's name that clashes.
REPEAT_SUFFIX = "~repeat"

_DIAGNOSIS = Diagnosis(
    code=CODE,
    requirement=None,
    title="Different outputs for the same inputs",
    explanation=(
        "Called twice with exactly the same inputs, your function returned different outputs. "
        "Something random is left in it, such as dropout or noise from np.random, so none of its "
        "answers can be checked or explained."
    ),
    hint=(
        "Remove dropout and every np.random call from the function: for the same inputs it "
        "must always return the same result."
    ),
    evidence="One call was repeated with the same inputs and gave a different output.",
)


def repeated(cases: Sequence[TestCase], probes: Sequence[Probe]) -> tuple[str, Inputs] | None:
    """The call to repeat, as (its name, its inputs): one that should return outputs, with as
    many input values as the public cases offer (the first of the largest). Randomness over a
    few values repeats by chance: dropout over a 3x3 attention map draws the same mask twice in
    about 3 % of runs."""
    public = [c for c in cases if c.visibility == "public" and c.raises is None]
    if public:
        case = max(public, key=_values)
        return case.name, case.inputs
    return (probes[0].name, probes[0].inputs) if probes else None


def _values(case: TestCase) -> int:
    return sum(v.size if isinstance(v, np.ndarray) else 1 for v in case.inputs.values())


def repeat_name(name: str) -> str:
    return name + REPEAT_SUFFIX


def diagnosis(problem: Problem, run: RunResult) -> Diagnosis | None:
    """The ``nondeterministic`` diagnosis when the repeated call disagrees with the first one."""
    outcomes = {o.name: o for o in run.cases}
    again = next((o for o in run.cases if o.name.endswith(REPEAT_SUFFIX)), None)
    if again is None:
        return None
    first = outcomes.get(again.name.removesuffix(REPEAT_SUFFIX))
    if first is None or _agree(problem, first, again):
        return None
    return _DIAGNOSIS.model_copy()


def _agree(problem: Problem, first: CaseOutcome, again: CaseOutcome) -> bool:
    """Both calls returned outputs that agree within the problem's tolerance (NaN and infinities
    equal to themselves); a call that raised or returned nothing usable proves nothing."""
    if first.output is None or again.output is None:
        return True
    a = first.output if isinstance(first.output, tuple) else (first.output,)
    b = again.output if isinstance(again.output, tuple) else (again.output,)
    if len(a) != len(b) or len(a) != len(problem.spec.outputs):
        return True
    for output, x, y in zip(problem.spec.outputs, a, b, strict=True):
        if x.shape != y.shape:
            return False
        if not (np.issubdtype(x.dtype, np.number) and np.issubdtype(y.dtype, np.number)):
            return True
        tol = problem.spec.tolerance_of(output)
        with np.errstate(all="ignore"):
            if not np.allclose(x, y, rtol=tol.rtol, atol=tol.atol, equal_nan=True):
                return False
    return True
