"""Names the misconceptions behind a wrong answer from the submission's outputs on the probes.

The smallest set of faults whose model reproduces every probe output is the diagnosis (the
fault table holds every combination's outputs, so singles, pairs and triples are all checked at
once and the smallest size wins). When several sets of that size explain the output, all are
reported as alternatives. Contract checks (inputs mutated, low precision, non-finite values,
wrong shapes, and the problem's own, such as "explained only where the lengths are equal") come
from how the outputs fail to match. A problem with several outputs has a column per output of
each probe, so every output must be reproduced. When nothing explains
the output, the problem's property checks say which requirements the probes implicate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from app.grading import evidence
from app.grading.faulttable import LOW_DTYPES, Combo, FaultTable, Matches, ProbeColumn
from app.problems.cases import Result
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
    # The number a parameterized fault was found with ("4" heads), by code.
    values: dict[str, str] = field(default_factory=dict)

    @property
    def codes(self) -> list[str]:
        seen: dict[str, None] = {}
        for codes in self.alternatives:
            seen.update(dict.fromkeys(sorted(codes)))
        return list(seen)


def _part(outcome: CaseOutcome | None, part: int, parts: int) -> np.ndarray | None:
    """Output ``part`` of a submission's result (of ``parts`` outputs), whatever its shape."""
    if outcome is None or outcome.output is None:
        return None
    result = outcome.output
    if isinstance(result, tuple):
        return result[part] if len(result) == parts else None
    return result if parts == 1 else None


def _usable(
    outcome: CaseOutcome | None, shape: tuple[int, ...], part: int = 0, parts: int = 1
) -> np.ndarray | None:
    out = _part(outcome, part, parts)
    if out is None or out.shape != shape:
        return None
    if not (
        np.issubdtype(out.dtype, np.floating)
        or np.issubdtype(out.dtype, np.integer)
        or out.dtype == np.bool_  # a bool output, compared exactly
    ):
        return None
    return out


def _raised(outcome: CaseOutcome | None) -> str | None:
    """The exception type a call raised; None when it returned (or did not run)."""
    if outcome is None or outcome.output is not None or outcome.error is None:
        return None
    return outcome.error.type


def _codes(combos: Sequence[Combo]) -> list[frozenset[str]]:
    return [c.codes for c in combos]


def _values(combos: Sequence[Combo]) -> dict[str, str]:
    return {code: value for c in combos for code, value in c.values.items()}


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
    parts = len(problem.spec.outputs)
    outputs = [_usable(probe_outcomes.get(c.name), c.shape, c.part, parts) for c in columns]
    raised = [_raised(probe_outcomes.get(c.name)) for c in columns]
    n = len({c.name for c in columns})  # probes (a probe has a column per output)

    # When a faultless combination reproduces every output, the smallest that do are exactly
    # the faultless ones that do: for a passing submission (the common case) that is all
    # there is to find, so they are tried alone first.
    found: list[Combo] = []
    if not cases_failed:
        faultless = table.faultless
        hit = np.zeros(len(table.combos), dtype=bool)
        hit[faultless] = table.reproducing(outputs, raised, faultless)
        found = table.smallest(hit)
    if found:
        matches = None
    else:
        matches = table.match(outputs, raised)
        found = table.smallest(matches.exact.all(axis=1))
    if found:
        finding.alternatives, finding.explained = _codes(found), True
        finding.values = _values(found)
        if found[0].codes:
            finding.evidence = evidence.reproduced(table, table.row_of[found[0]])
        if not found[0].codes and cases_failed and not mutated:
            finding.alternatives = []
            finding.explained = False
            finding.contract["unrecognized"] = (
                "Your output is right on every probe input but wrong on some test cases."
            )
        return finding
    assert matches is not None  # found is empty only when every combination was compared
    if _low_precision(finding, table, matches, n):
        return finding

    model = problem.diagnostics.error_model if problem.diagnostics else None
    for check in model.partial_checks() if model else []:
        if _partly_explained(finding, table, matches, outputs, raised, check):
            return finding

    usable = np.array([o is not None for o in outputs])
    finite = np.array([o is not None and bool(np.all(np.isfinite(o))) for o in outputs])
    if (usable & ~finite).any():
        bad = len({c.name for c, u, f in zip(columns, usable, finite, strict=True) if u and not f})
        finding.contract["non-finite-output"] = (
            f"Your {_outputs_named(columns, usable & ~finite)} has NaN or infinite values on "
            f"{bad} of {n} probe inputs, where no known mistake gives them."
        )
        if finite.any():
            found = table.smallest(matches.exact[:, finite].all(axis=1))
            if found and found[0].codes:
                finding.alternatives = _codes(found)
                finding.values = _values(found)
                finding.evidence = "It reproduces your output on every probe input it is finite on."
        finding.implicated = _implicated(problem, table, probe_outcomes)
        return finding

    wrong_shape = np.array(
        [
            (got := _part(probe_outcomes.get(c.name), c.part, parts)) is not None
            and got.shape != c.shape
            for c in columns
        ]
    )
    if wrong_shape.any():
        probes = len({c.name for c, w in zip(columns, wrong_shape, strict=True) if w})
        finding.contract["shape-mismatch"] = (
            f"On {probes} of {n} probe inputs your {_outputs_named(columns, wrong_shape)} has "
            f"the wrong shape."
        )
    elif usable.any():
        finding.contract["unrecognized"] = (
            f"No combination of up to {table.max_faults} known mistakes reproduces your output."
        )
    # Nothing usable at all (every probe raised): the error message is the diagnosis.
    if wrong_shape.any() or usable.any():
        finding.implicated = _implicated(problem, table, probe_outcomes)
    return finding


def _low_precision(finding: Finding, table: FaultTable, matches: Matches, n: int) -> bool:
    """A low-precision answer: some combination computed at a lower dtype reproduces every probe
    output to that dtype's rounding noise (the tightest dtype that does is named)."""
    if not matches.near.all(axis=1).any():  # the usual wrong answer: not even roughly right
        return False
    for dtype in LOW_DTYPES:
        found = table.smallest(matches.low(dtype).all(axis=1))
        if found:
            finding.alternatives, finding.explained = _codes(found), True
            finding.values = _values(found)
            what = "the correct computation" if not found[0].codes else "the computation below"
            finding.contract["low-precision"] = (
                f"Your output is {what} carried out in {dtype}: on all {n} probe inputs it "
                f"differs from that only by {dtype} rounding, which is more than the required "
                f"tolerance allows."
            )
            finding.evidence = evidence.reproduced(
                table, table.row_of[found[0]], f"Computed in {dtype}, it reproduces"
            )
            return True
    return False


def _outputs_named(columns: Sequence[ProbeColumn], which: np.ndarray) -> str:
    """ "output", or for a problem with several outputs the names of those concerned."""
    names = list(dict.fromkeys(c.output for c, w in zip(columns, which, strict=True) if w))
    if all(c.part == 0 for c in columns):
        return "output"
    return "output " + " and ".join(repr(n) for n in names)


def _partly_explained(
    finding: Finding,
    table: FaultTable,
    matches: Matches,
    outputs: Sequence[np.ndarray | None],
    raised: Sequence[str | None],
    check: tuple[str, str, bool],
) -> bool:
    """The problem's own check ``code``: explained on the probes marked ``mark`` (every one of
    which gave an output, or raised where the correct function does), wrong or failing on the
    others (and failing on some of them, for a check that says so). The evidence names the
    probes by what the problem says about them, and where the function raised, never what."""
    code, mark, failing = check
    columns = table.columns
    marked = np.array([mark in c.marks for c in columns])
    if not marked.any() or marked.all():
        return False
    ran = [
        o is not None or (c.raised is not None and r is not None)
        for c, o, r in zip(columns, outputs, raised, strict=True)
    ]
    if not all(ok for ok, m in zip(ran, marked, strict=True) if m):
        return False
    inside = {c.name for c, m in zip(columns, marked, strict=True) if m}
    raised_on = {
        c.name
        for c, m, r in zip(columns, marked, raised, strict=True)
        if not m and r is not None and c.raised is None
    }
    if failing and not raised_on:
        return False
    # Where the correct function raises too, raising says nothing either way.
    wrong = {
        c.name
        for c, m, r in zip(columns, marked, raised, strict=True)
        if not m and not (c.raised is not None and r is not None)
    } - raised_on
    candidates: list[str | None] = [None]
    if matches.near[:, marked].all(axis=1).any():
        candidates += LOW_DTYPES
    for low in candidates:  # each dtype's comparison runs only if the one before found nothing
        ok = matches.exact if low is None else matches.low(low)
        found = table.smallest(ok[:, marked].all(axis=1))
        if found:
            finding.alternatives, finding.explained = _codes(found), True
            finding.values = _values(found)
            parts = []
            if raised_on:
                parts.append(
                    f"it could not run on {evidence.named(table, raised_on)}: it raised an "
                    f"exception there"
                )
            if wrong:
                parts.append(f"it is wrong on {evidence.named(table, wrong)}")
            finding.contract[code] = (
                f"Your output is explained on {evidence.named(table, inside)}; "
                + "; ".join(parts)
                + "."
            )
            if low:
                finding.contract["low-precision"] = (
                    f"Where it works, your output is what the computation gives in {low}."
                )
            finding.evidence = (
                f"It reproduces your output on {evidence.named(table, inside)}, the ones it "
                f"is explained on."
            )
            return True
    return False


def _implicated(
    problem: Problem, table: FaultTable, probe_outcomes: Mapping[str, CaseOutcome | None]
) -> list[tuple[str, str]]:
    diagnostics = problem.diagnostics
    if diagnostics is None:
        return []
    parts = len(problem.spec.outputs)
    outputs: dict[str, Result | None] = {}
    for probe in diagnostics.probes:
        if probe.name not in table.shapes:  # expects an error: no output to check
            continue
        shapes = table.shapes[probe.name]
        got = [
            _usable(probe_outcomes.get(probe.name), shape, k, parts)
            for k, shape in enumerate(shapes)
        ]
        if any(g is None for g in got):
            outputs[probe.name] = None
        else:
            floats = tuple(np.asarray(g, dtype=np.float64) for g in got)
            outputs[probe.name] = floats if problem.spec.multiple_outputs else floats[0]
    try:
        with np.errstate(all="ignore"):
            found = diagnostics.implicated(outputs)
    except Exception:  # a property check must not turn a wrong answer into an internal error
        return []
    known = {r.id for r in problem.spec.requirements}
    return [(req, evidence) for req, evidence in found if req in known]
