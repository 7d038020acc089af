"""Names the misconceptions behind a wrong answer from the submission's outputs on the probes.

The smallest set of faults whose model reproduces every probe output is the diagnosis (the
fault table holds every combination's outputs, so singles, pairs and triples are all checked at
once and the smallest size wins). When several sets of that size explain the output, all are
reported as alternatives. Contract checks (inputs mutated, low precision, equal lengths only,
non-finite values, wrong shapes) come from how the outputs fail to match. When nothing explains
the output, the problem's property checks say which requirements the probes implicate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from app.grading.faulttable import Combo, FaultTable
from app.problems.loader import Problem
from sandbox.protocol import CaseOutcome


@dataclass
class Finding:
    """What the probes say about one submission, before it is worded for the student."""

    # Fault code sets that each reproduce the output; more than one means ambiguous.
    alternatives: list[frozenset[str]] = field(default_factory=list)
    # Contract codes with their evidence, in the order found.
    contract: dict[str, str] = field(default_factory=dict)
    # True when the codes account for every probe output: the other requirements then pass.
    explained: bool = False
    # (requirement id, evidence) from the property checks, on the unrecognized path.
    implicated: list[tuple[str, str]] = field(default_factory=list)
    evidence: str = ""  # how the alternatives were matched, for the diagnoses' evidence

    @property
    def codes(self) -> list[str]:
        seen: dict[str, None] = {}
        for codes in self.alternatives:
            seen.update(dict.fromkeys(sorted(codes)))
        return list(seen)


def _usable(outcome: CaseOutcome | None, shape: tuple[int, ...]) -> np.ndarray | None:
    if outcome is None or outcome.output is None or outcome.output.shape != shape:
        return None
    out = outcome.output
    if not (np.issubdtype(out.dtype, np.floating) or np.issubdtype(out.dtype, np.integer)):
        return None
    return out


def _codes(combos: Sequence[Combo]) -> list[frozenset[str]]:
    return [c.codes for c in combos]


def diagnose(
    problem: Problem,
    table: FaultTable,
    probe_outcomes: Mapping[str, CaseOutcome | None],
    all_outcomes: Sequence[CaseOutcome],
    cases_failed: bool,
) -> Finding:
    """``probe_outcomes`` by probe name (None: not reached); ``all_outcomes`` include the graded
    cases, for the in-place check; ``cases_failed``: some graded case did not pass."""
    finding = Finding()
    mutated = sorted({name for o in all_outcomes for name in o.mutated_inputs})
    if mutated:
        finding.contract["input-mutated"] = f"Your function changed {', '.join(mutated)} in place."

    columns = table.columns
    outputs = [_usable(probe_outcomes.get(c.name), c.shape) for c in columns]
    matches = table.match(outputs)
    n = len(columns)

    found = table.smallest(matches.exact.all(axis=1))
    if found:
        finding.alternatives, finding.explained = _codes(found), True
        finding.evidence = f"It reproduces your output on all {n} probe inputs."
        if not found[0].codes and cases_failed and not mutated:
            finding.alternatives = []
            finding.explained = False
            finding.contract["unrecognized"] = (
                "Your output is right on every probe input but wrong on some test cases."
            )
        return finding
    found = table.smallest(matches.close.all(axis=1))
    if found:
        finding.alternatives, finding.explained = _codes(found), True
        finding.contract["low-precision"] = (
            f"Your output agrees to within {table.low_precision:g} of the output scale on all "
            f"{n} probe inputs, but not to the required tolerance."
        )
        finding.evidence = f"It reproduces your output, to low precision, on all {n} probe inputs."
        return finding

    equal = np.array([c.equal_lengths for c in columns])
    if (
        equal.any()
        and not equal.all()
        and all(o is not None for o, e in zip(outputs, equal, strict=True) if e)
    ):
        for ok, low in ((matches.exact, False), (matches.close, True)):
            found = table.smallest(ok[:, equal].all(axis=1))
            if found:
                finding.alternatives, finding.explained = _codes(found), True
                finding.contract["assumes-equal-lengths"] = (
                    f"Your output is explained on the {int(equal.sum())} probe inputs whose "
                    f"sequences have equal lengths, and wrong or failing on the "
                    f"{int((~equal).sum())} others."
                )
                if low:
                    finding.contract["low-precision"] = (
                        "Where it works, your output agrees only to low precision."
                    )
                finding.evidence = "It reproduces your output wherever the lengths are equal."
                return finding

    usable = np.array([o is not None for o in outputs])
    finite = np.array([o is not None and bool(np.all(np.isfinite(o))) for o in outputs])
    if (usable & ~finite).any():
        finding.contract["non-finite-output"] = (
            f"Your output has NaN or infinite values on {int((usable & ~finite).sum())} of {n} "
            f"probe inputs, where no known mistake gives them."
        )
        if finite.any():
            found = table.smallest(matches.exact[:, finite].all(axis=1))
            if found and found[0].codes:
                finding.alternatives = _codes(found)
                finding.evidence = "It reproduces your output on every probe input it is finite on."
        finding.implicated = _implicated(problem, table, probe_outcomes)
        return finding

    reached = [probe_outcomes.get(c.name) for c in columns]
    wrong_shape = [
        o.output.shape
        for o, c in zip(reached, columns, strict=True)
        if o is not None and o.output is not None and o.output.shape != c.shape
    ]
    if wrong_shape:
        finding.contract["shape-mismatch"] = (
            f"On {len(wrong_shape)} of {n} probe inputs your output has the wrong shape."
        )
    elif usable.any():
        finding.contract["unrecognized"] = (
            f"No combination of up to {table.max_faults} known mistakes reproduces your output."
        )
    # Nothing usable at all (every probe raised): the error message is the diagnosis.
    if wrong_shape or usable.any():
        finding.implicated = _implicated(problem, table, probe_outcomes)
    return finding


def _implicated(
    problem: Problem, table: FaultTable, probe_outcomes: Mapping[str, CaseOutcome | None]
) -> list[tuple[str, str]]:
    diagnostics = problem.diagnostics
    if diagnostics is None:
        return []
    outputs: dict[str, np.ndarray | None] = {}
    for probe in diagnostics.probes:
        out = _usable(probe_outcomes.get(probe.name), table.shapes[probe.name])
        outputs[probe.name] = None if out is None else out.astype(np.float64)
    try:
        with np.errstate(all="ignore"):
            found = diagnostics.implicated(outputs)
    except Exception:  # a property check must not turn a wrong answer into an internal error
        return []
    known = {r.id for r in problem.spec.requirements}
    return [(req, evidence) for req, evidence in found if req in known]
