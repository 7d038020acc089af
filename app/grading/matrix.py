"""The idiom matrix: every single fault and every pair the search covers, written in each way the
problem's idioms allow, and whether the diagnosis names exactly that fault set.

On the host the faulty reference's outputs are matched against the fault table; in the sandbox
(``run_in_sandbox``) the same models run as submissions, one sandbox run per way of writing
(every model of that writing in one source, each call picking its model in turn), and the real
diagnosis reads what they returned. As PyTorch jobs the models are the folder's PyTorch reference,
so each fault's arithmetic is torch's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.grading.diagnose import diagnose
from app.grading.faulttable import Combo, enumerate_combos, fault_table
from app.grading.pipeline import run_limits
from app.problems.hooks import exception_name
from app.problems.loader import Problem
from app.problems.solutions import planned_faults_source
from sandbox.backends.runtime import TORCH_RUNTIME_MB
from sandbox.protocol import CaseArgs, CaseOutcome, Limits, RunRequest, Sandbox

# The matrix covers singles and pairs; the search itself goes up to the error model's
# max_faults.
MATRIX_SIZE = 2


@dataclass(frozen=True)
class Entry:
    combo: Combo
    # The search names exactly ``combo.codes`` (one explanation, this one) from its outputs; a
    # pair that another pair or a single reproduces on every probe is not told apart.
    told_apart: bool
    found: tuple[frozenset[str], ...]  # what the search names instead, when not told apart


@dataclass(frozen=True)
class Coverage:
    ways: int  # ways of writing (1 + the idioms' forms, multiplied out)
    singles: int
    singles_told_apart: int
    pairs: int
    pairs_told_apart: int


def matrix_combos(problem: Problem) -> list[Combo]:
    assert problem.diagnostics is not None
    return [c for c in enumerate_combos(problem.diagnostics) if 1 <= c.size <= MATRIX_SIZE]


def host_matrix(problem: Problem) -> list[Entry]:
    """Every matrix model diagnosed from the reference's own outputs on the host."""
    table = fault_table(problem)
    assert problem.diagnostics is not None
    probes = [p for p in problem.diagnostics.probes if p.purpose == "fault"]
    entries = []
    for combo in matrix_combos(problem):
        outputs: list[np.ndarray | None] = []
        raised: list[str | None] = []
        for probe in probes:
            try:
                with np.errstate(all="ignore"):
                    parts: tuple[np.ndarray, ...] | None = problem.evaluate(
                        probe.inputs, combo.flags
                    )
                error = None
            except Exception as exc:
                parts, error = None, exception_name(exc)
            for k in range(len(problem.spec.outputs)):
                outputs.append(None if parts is None else parts[k])
                raised.append(error)
        matches = table.match(outputs, raised)
        found = tuple(c.codes for c in table.smallest(matches.exact.all(axis=1)))
        entries.append(Entry(combo, found == (combo.codes,), found))
    return entries


def coverage(problem: Problem, entries: Sequence[Entry]) -> Coverage:
    assert problem.diagnostics is not None
    ways = len(problem.diagnostics.error_model.writings())
    singles = [e for e in entries if e.combo.size == 1]
    pairs = [e for e in entries if e.combo.size == 2]
    return Coverage(
        ways=ways,
        singles=len(singles),
        singles_told_apart=sum(e.told_apart for e in singles),
        pairs=len(pairs),
        pairs_told_apart=sum(e.told_apart for e in pairs),
    )


def run_in_sandbox(
    problem: Problem, sandbox: Sandbox, combos: Sequence[Combo], framework: str = "numpy"
) -> list[tuple[frozenset[str], ...]]:
    """What the diagnosis names for each model run as a submission in the sandbox: its
    alternatives (empty when nothing explains it). ``framework`` "torch": each model is the
    folder's PyTorch reference (``solution_torch.py``, the same flags as reference.py written in
    torch) run as a PyTorch job, on the tensors it is handed."""
    assert problem.diagnostics is not None
    table = fault_table(problem)
    source = _reference_source(problem, framework)
    probes = [p for p in problem.diagnostics.probes if p.purpose == "fault"]
    names = [p.name for p in problem.spec.params]
    found: dict[int, tuple[frozenset[str], ...]] = {}
    for idiom in dict.fromkeys(c.idiom for c in combos):
        batch = [i for i, c in enumerate(combos) if c.idiom == idiom]
        plans = [sorted(combos[i].flags) for i in batch]
        request = RunRequest(
            code=planned_faults_source(source, problem.spec.function_name, plans, len(probes)),
            function_name=problem.spec.function_name,
            param_names=names,
            outputs=len(problem.spec.outputs) if problem.spec.multiple_outputs else None,
            cases=[
                CaseArgs(
                    name=f"{n}/{p.name}",
                    args={name: p.inputs.get(name) for name in names},
                    hidden=True,
                )
                for n in range(len(batch))
                for p in probes
            ],
            limits=_batch_limits(problem, len(batch), framework),
            framework="torch" if framework == "torch" else "numpy",
            forbidden=list(getattr(problem.spec.forbidden, framework, [])),
        )
        run = sandbox.run(request)
        if run.status != "ok":
            raise RuntimeError(f"the matrix run for {sorted(idiom)} ended {run.status}")
        by_name = {o.name: o for o in run.cases}
        for n, i in enumerate(batch):
            outcomes: dict[str, CaseOutcome | None] = {
                p.name: _renamed(by_name.get(f"{n}/{p.name}"), p.name) for p in probes
            }
            finding = diagnose(
                problem, table, outcomes, [o for o in outcomes.values() if o], cases_failed=True
            )
            found[i] = tuple(finding.alternatives)
    return [found[i] for i in range(len(combos))]


def _reference_source(problem: Problem, framework: str = "numpy") -> str:
    """The code that takes the error model's flags in ``framework``: reference.py for NumPy,
    ``solution_<framework>.py`` for another."""
    name = "reference.py" if framework == "numpy" else f"solution_{framework}.py"
    return (problem.directory / name).read_text(encoding="utf-8")


def _renamed(outcome: CaseOutcome | None, name: str) -> CaseOutcome | None:
    return None if outcome is None else outcome.model_copy(update={"name": name})


def _batch_limits(problem: Problem, models: int, framework: str) -> Limits:
    limits = run_limits(problem)
    if framework == "torch":
        limits = limits.model_copy(update={"runtime_mb": TORCH_RUNTIME_MB})
    # Every model of a batch runs in the one process: its time grows with their number.
    seconds = limits.cpu_seconds + 0.05 * models
    return limits.model_copy(
        update={"cpu_seconds": seconds, "wall_seconds": max(limits.wall_seconds, 4 * seconds)}
    )
