"""Which fault combinations the current test set and the probes can tell apart.

Every combination of the error model's faults (up to ``max_faults``, each with each of its
variants) is run through the faulty reference on every graded case and every fault probe. Then:

- a combination is *caught* by a case when its output fails that case (the grader's own
  tolerance); one caught by no case passes every test although it is wrong (``missed``);
- two combinations are *confusable* on a set of inputs when their outputs agree within the
  tolerance on all of them. ``confusable_by_cases`` uses the graded cases alone (what failing
  tests reveal), ``confusable_with_probes`` the cases plus the probes (what the diagnosis sees).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, Field

from app.grading.faulttable import Combo, enumerate_combos
from app.problems.cases import Inputs, TestCase, parts_of
from app.problems.hooks import exception_name
from app.problems.loader import Problem

CORRECT_LABEL = "(correct)"


class FaultRow(BaseModel):
    code: str
    requirement: str
    title: str
    caught_by: int = Field(description="How many graded cases this fault alone fails.")
    caught: bool
    told_apart_by_cases: bool = Field(
        description="No other combination gives the same outputs on the graded cases."
    )
    told_apart_with_probes: bool = Field(
        description="No other combination gives the same outputs on the cases and probes."
    )


class PairCounts(BaseModel):
    total: int = Field(description="Pairs of different combinations (correct one included).")
    told_apart_by_cases: int
    told_apart_with_probes: int


class DiagnosabilityReport(BaseModel):
    problem_id: str
    test_set_version: int
    max_faults: int
    cases: int
    fault_probes: int
    combinations: int = Field(description="Fault combinations checked (the correct one excluded).")
    faults: list[FaultRow]
    pairs: PairCounts
    missed: list[str] = Field(
        description="Combinations (faults joined by ' + ') that pass every graded case."
    )
    confusable_by_cases: list[list[str]] = Field(
        description="Groups of combinations the graded cases cannot tell apart."
    )
    confusable_with_probes: list[list[str]] = Field(
        description="Groups the grader's diagnosis cannot tell apart, even with its probes."
    )


def label(codes: frozenset[str]) -> str:
    return " + ".join(sorted(codes)) if codes else CORRECT_LABEL


@dataclass
class _Outputs:
    values: np.ndarray  # (rows, size), non-finite replaced by 0
    finite: np.ndarray  # (rows, size)
    # (rows, inputs) what each call did: 0 returned outputs of the right shapes, otherwise a code
    # for the exception type it raised (or for outputs of other shapes).
    kinds: np.ndarray
    rtol: np.ndarray  # (size,) each entry's output's tolerance
    atol: np.ndarray


@dataclass(frozen=True)
class _Input:
    inputs: Inputs
    shapes: tuple[tuple[int, ...], ...]  # the correct outputs' shapes; () for an error case


def _run(
    problem: Problem, combos: Sequence[Combo], items: Sequence[_Input], kinds: dict[str, int]
) -> tuple[_Outputs, list[list[tuple[np.ndarray, ...] | str]]]:
    """Every combination on every input: the outputs (flattened, concatenated) and, per call,
    the outputs or the name of what it raised. ``kinds`` numbers those names (shared across
    calls so that the same exception gets the same code)."""
    spec = problem.spec
    tolerances = [spec.tolerance_of(o) for o in spec.outputs]
    rtol = np.concatenate(
        [
            np.full(int(np.prod(s)), tolerances[k].rtol)
            for it in items
            for k, s in enumerate(it.shapes)
        ]
        or [np.zeros(0)]
    )
    atol = np.concatenate(
        [
            np.full(int(np.prod(s)), tolerances[k].atol)
            for it in items
            for k, s in enumerate(it.shapes)
        ]
        or [np.zeros(0)]
    )
    calls: list[list[tuple[np.ndarray, ...] | str]] = []
    flat_rows: list[np.ndarray] = []
    kind_rows: list[list[int]] = []
    with np.errstate(all="ignore"):
        for combo in combos:
            row: list[tuple[np.ndarray, ...] | str] = []
            pieces: list[np.ndarray] = []
            kind_row: list[int] = []
            for item in items:
                try:
                    got: tuple[np.ndarray, ...] | str = problem.evaluate(item.inputs, combo.flags)
                except Exception as exc:
                    got = exception_name(exc)
                fits = not isinstance(got, str) and [g.shape for g in got] == list(item.shapes)
                if fits:
                    assert not isinstance(got, str)
                    pieces += [g.ravel() for g in got]
                    kind_row.append(0)
                else:
                    pieces += [np.full(int(np.prod(s)), np.nan) for s in item.shapes]
                    label = got if isinstance(got, str) else "(outputs of other shapes)"
                    kind_row.append(kinds.setdefault(label, len(kinds) + 1))
                row.append(got)
            calls.append(row)
            flat_rows.append(np.concatenate(pieces) if pieces else np.zeros(0))
            kind_rows.append(kind_row)
    flat = np.stack(flat_rows)
    finite = np.isfinite(flat)
    return (
        _Outputs(
            np.where(finite, flat, 0.0),
            finite,
            np.array(kind_rows, dtype=np.int64).reshape(len(combos), len(items)),
            rtol,
            atol,
        ),
        calls,
    )


def _joined(a: _Outputs, b: _Outputs) -> _Outputs:
    return _Outputs(
        np.concatenate([a.values, b.values], axis=1),
        np.concatenate([a.finite, b.finite], axis=1),
        np.concatenate([a.kinds, b.kinds], axis=1),
        np.concatenate([a.rtol, b.rtol]),
        np.concatenate([a.atol, b.atol]),
    )


def _equal_pairs(out: _Outputs) -> np.ndarray:
    """(rows, rows) bool: the same kind of result everywhere, outputs within the tolerance,
    non-finite in the same places."""
    n, size = out.values.shape
    same = np.eye(n, dtype=bool)
    # A few entries first: most pairs differ there, and only the rest are compared in full
    # (the table is quadratic in its rows).
    sample = np.unique(np.linspace(0, max(size - 1, 0), min(size, 8)).astype(int))
    for i in range(n - 1):
        rest = i + 1 + np.flatnonzero((out.kinds[i + 1 :] == out.kinds[i]).all(axis=1))
        if size and rest.size:
            rest = rest[_agree(out, i, rest, sample).all(axis=1)]
        if rest.size:
            same[i, rest] = _agree(out, i, rest, slice(None)).all(axis=1)
    return same | same.T


def _agree(out: _Outputs, i: int, rows: np.ndarray, at: np.ndarray | slice) -> np.ndarray:
    """(rows, entries) bool: row i and each of ``rows`` agree at the entries ``at``."""
    a, fa = out.values[i, at], out.finite[i, at]
    b, fb = out.values[rows][:, at], out.finite[rows][:, at]
    close = np.abs(b - a) <= out.atol[at] + out.rtol[at] * np.maximum(np.abs(a), np.abs(b))
    agree: np.ndarray = (fb == fa) & close
    return agree


def _groups(combos: Sequence[Combo], same: np.ndarray) -> list[list[str]]:
    """Union of code sets whose variants agree; only groups with several code sets."""
    parent = {c.codes: c.codes for c in combos}

    def find(x: frozenset[str]) -> frozenset[str]:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    rows, cols = np.nonzero(np.triu(same, 1))
    for i, j in zip(rows.tolist(), cols.tolist(), strict=True):
        a, b = find(combos[i].codes), find(combos[j].codes)
        if a != b:
            parent[b] = a
    groups: dict[frozenset[str], set[frozenset[str]]] = {}
    for codes in parent:
        groups.setdefault(find(codes), set()).add(codes)
    out = [
        sorted((label(c) for c in members), key=lambda s: (s.count("+"), s))
        for members in groups.values()
        if len(members) > 1
    ]
    return sorted(out, key=lambda g: (len(g[0].split(" + ")), g))


def _pair_count(combos: Sequence[Combo], same: np.ndarray) -> int:
    """Pairs of distinct code sets that some of their variants make agree."""
    confused: set[tuple[frozenset[str], frozenset[str]]] = set()
    rows, cols = np.nonzero(np.triu(same, 1))
    for i, j in zip(rows.tolist(), cols.tolist(), strict=True):
        a, b = combos[i].codes, combos[j].codes
        if a != b:
            confused.add((a, b) if sorted(a) < sorted(b) else (b, a))
    return len(confused)


def build_report(
    problem: Problem, version: int, cases: Sequence[TestCase], max_faults: int
) -> DiagnosabilityReport:
    diagnostics = problem.diagnostics
    if diagnostics is None:
        raise ValueError(f"problem {problem.id} has no error model (faults.toml)")
    model = diagnostics.error_model
    # Which cases catch a mistake does not depend on how a step is written: the plain way only
    # (the idiom matrix covers the others).
    combos = [c for c in enumerate_combos(diagnostics, idioms=False) if c.size <= max_faults]
    probes = [p for p in diagnostics.probes if p.purpose == "fault"]

    kinds: dict[str, int] = {}
    case_items = [_Input(c.inputs, _shapes(problem, c)) for c in cases]
    probe_items = [
        _Input(p.inputs, () if p.raises else tuple(o.shape for o in problem.evaluate(p.inputs)))
        for p in probes
    ]
    by_cases, per_case = _run(problem, combos, case_items, kinds)
    by_probes, _ = _run(problem, combos, probe_items, kinds)
    same_cases = _equal_pairs(by_cases)
    same_all = _equal_pairs(_joined(by_cases, by_probes))

    fails = np.zeros((len(combos), len(cases)), dtype=bool)
    for j, case in enumerate(cases):
        for i in range(len(combos)):
            fails[i, j] = not _passes(problem, case, per_case[i][j])

    def told_apart(same: np.ndarray, codes: frozenset[str]) -> bool:
        mine = [i for i, c in enumerate(combos) if c.codes == codes]
        others = [i for i, c in enumerate(combos) if c.codes != codes]
        return not same[np.ix_(mine, others)].any()

    faults = []
    for code, spec in model.faults.items():
        single = frozenset({code})
        rows = [i for i, c in enumerate(combos) if c.codes == single]
        caught_by = int(fails[rows].any(axis=0).sum())
        faults.append(
            FaultRow(
                code=code,
                requirement=spec.requirement,
                title=spec.title,
                caught_by=caught_by,
                caught=caught_by > 0,
                told_apart_by_cases=told_apart(same_cases, single),
                told_apart_with_probes=told_apart(same_all, single),
            )
        )
    missed = sorted(
        {label(c.codes) for i, c in enumerate(combos) if c.codes and not fails[i].any()},
        key=lambda s: (s.count("+"), s),
    )
    code_sets = {c.codes for c in combos}
    total = len(code_sets) * (len(code_sets) - 1) // 2
    return DiagnosabilityReport(
        problem_id=problem.id,
        test_set_version=version,
        max_faults=max_faults,
        cases=len(cases),
        fault_probes=len(probes),
        combinations=len(code_sets) - 1,
        faults=faults,
        pairs=PairCounts(
            total=total,
            told_apart_by_cases=total - _pair_count(combos, same_cases),
            told_apart_with_probes=total - _pair_count(combos, same_all),
        ),
        missed=missed,
        confusable_by_cases=_groups(combos, same_cases),
        confusable_with_probes=_groups(combos, same_all),
    )


def _shapes(problem: Problem, case: TestCase) -> tuple[tuple[int, ...], ...]:
    if case.raises is not None or case.expected is None:
        return ()
    return tuple(p.shape for p in parts_of(case.expected))


def _passes(problem: Problem, case: TestCase, got: tuple[np.ndarray, ...] | str) -> bool:
    """Would a function giving ``got`` pass ``case`` (the grader's rule, per output)?"""
    if case.raises is not None:
        return got == case.raises
    if isinstance(got, str) or case.expected is None:
        return False
    want = parts_of(case.expected)
    if len(got) != len(want):
        return False
    for output, g, w in zip(problem.spec.outputs, got, want, strict=True):
        tol = problem.spec.tolerance_of(output)
        if g.shape != w.shape or not (
            np.all(np.isfinite(g)) and np.allclose(g, w, rtol=tol.rtol, atol=tol.atol)
        ):
            return False
    return True


_cache: dict[tuple[int, int], tuple[Sequence[TestCase], Problem, DiagnosabilityReport]] = {}
_lock = threading.Lock()


def cached_report(
    problem: Problem, version: int, cases: Sequence[TestCase], max_faults: int
) -> DiagnosabilityReport:
    """Computed once per test set: ``grading_set`` hands out the same tuple of cases for a
    version until it changes, so that object identifies the set (whatever the database)."""
    key = (id(cases), max_faults)
    with _lock:
        hit = _cache.get(key)
    if hit is not None and hit[0] is cases and hit[1] is problem:
        return hit[2]
    report = build_report(problem, version, cases, max_faults)
    with _lock:
        if len(_cache) > 32:
            _cache.pop(next(iter(_cache)))
        _cache[key] = (cases, problem, report)
    return report
