"""Every fault combination's output on the fault probes, computed once per problem and process.

The probes are fixed, so the faulty reference is run on them for each combination of up to
``max_faults`` faults (each with each of its variants) once; diagnosing a submission is then a
vectorised comparison of its outputs with this table, not a search that re-runs the reference.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from app.problems.errormodel import Diagnostics
from app.problems.loader import Problem


@dataclass(frozen=True)
class Combo:
    codes: frozenset[str]  # fault codes, as the student reads them
    flags: frozenset[str]  # reference flags: one variant per code

    @property
    def size(self) -> int:
        return len(self.codes)


@dataclass(frozen=True)
class ProbeColumn:
    """One fault probe: every combination's output, flattened, one row per combination."""

    name: str
    shape: tuple[int, ...]
    filled: np.ndarray  # (combos, size) float64, non-finite entries replaced by 0
    finite: np.ndarray  # (combos, size) bool
    scale: float  # largest |correct output|: the yardstick for the low-precision match
    equal_lengths: bool
    rtol: float  # the problem's tolerance
    atol: float
    # Derived once here rather than for every diagnosed submission:
    # (combos, size) atol + rtol * |filled|, the tolerance around each entry;
    tolerance: np.ndarray = field(init=False, repr=False)
    # (combos,) bool, the rows with no non-finite entry (what an all-finite output can match).
    all_finite: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tolerance", self.atol + self.rtol * np.abs(self.filled))
        object.__setattr__(self, "all_finite", self.finite.all(axis=1))


@dataclass(frozen=True)
class Matches:
    exact: np.ndarray  # (combos, probes) bool: within the problem's tolerance
    close: np.ndarray  # (combos, probes) bool: within the low-precision tolerance


def enumerate_combos(diagnostics: Diagnostics) -> list[Combo]:
    """Combinations of up to ``max_faults`` codes, smallest first, at most one per group."""
    model = diagnostics.error_model
    codes = list(model.faults)
    combos = []
    for size in range(model.diagnosis.max_faults + 1):
        for chosen in itertools.combinations(codes, size):
            groups = [model.faults[c].group for c in chosen if model.faults[c].group]
            if len(groups) != len(set(groups)):
                continue
            for flags in itertools.product(*(model.flags(c) for c in chosen)):
                combos.append(Combo(frozenset(chosen), frozenset(flags)))
    return combos


class FaultTable:
    def __init__(self, problem: Problem) -> None:
        diagnostics = problem.diagnostics
        if diagnostics is None:
            raise ValueError(f"problem {problem.id} has no error model")
        probes = [p for p in diagnostics.probes if p.purpose == "fault"]
        combos = enumerate_combos(diagnostics)
        names = [p.name for p in problem.spec.params]
        raw: list[list[np.ndarray]] = []
        with np.errstate(all="ignore"):  # unstable-softmax overflows on purpose
            for combo in combos:
                row = []
                for probe in probes:
                    args = [_copy(probe.inputs[n]) for n in names]
                    out = diagnostics.faulty_reference(*args, faults=combo.flags)
                    row.append(np.asarray(out, dtype=np.float64).ravel())
                raw.append(row)
        keep = _distinct(combos, raw)
        self.combos: list[Combo] = [combos[i] for i in keep]
        self.sizes = np.array([c.size for c in self.combos])
        self.columns: list[ProbeColumn] = []
        for j, probe in enumerate(probes):
            stacked = np.stack([raw[i][j] for i in keep])
            finite = np.isfinite(stacked)
            correct = problem.solve(probe.inputs)
            self.columns.append(
                ProbeColumn(
                    name=probe.name,
                    shape=correct.shape,
                    filled=np.where(finite, stacked, 0.0),
                    finite=finite,
                    rtol=problem.spec.tolerance.rtol,
                    atol=problem.spec.tolerance.atol,
                    scale=float(np.abs(correct).max()) or 1.0,
                    equal_lengths=probe.equal_lengths,
                )
            )
        # Every probe's correct output shape, property probes included.
        self.shapes: dict[str, tuple[int, ...]] = {
            p.name: problem.solve(p.inputs).shape for p in diagnostics.probes
        }
        self.max_faults = diagnostics.error_model.diagnosis.max_faults
        self.low_precision = diagnostics.error_model.diagnosis.low_precision
        self.rtol = problem.spec.tolerance.rtol
        self.atol = problem.spec.tolerance.atol

    def match(self, outputs: Sequence[np.ndarray | None]) -> Matches:
        """Which combinations reproduce each probe's output. ``None`` (crash, wrong shape)
        matches nothing. Non-finite values must sit exactly where the model has them."""
        n = len(self.combos)
        exact = np.zeros((n, len(self.columns)), dtype=bool)
        close = np.zeros_like(exact)
        for j, (column, output) in enumerate(zip(self.columns, outputs, strict=True)):
            if output is None or output.shape != column.shape:
                continue
            flat = np.asarray(output, dtype=np.float64).ravel()
            finite = np.isfinite(flat)
            if finite.all():  # the usual case: the per-row masks were computed with the table
                same_mask = column.all_finite
            else:
                same_mask = (column.finite == finite).all(axis=1)
                flat = np.where(finite, flat, 0.0)
            diff = np.abs(column.filled - flat)
            exact[:, j] = same_mask & (diff <= column.tolerance).all(axis=1)
            close[:, j] = same_mask & (diff.max(axis=1) <= self.low_precision * column.scale)
        return Matches(exact, close)

    def smallest(self, ok: npt.ArrayLike) -> list[Combo]:
        """The smallest combinations marked ``ok``; several only when their codes differ."""
        hits = np.flatnonzero(np.asarray(ok, dtype=bool))
        if hits.size == 0:
            return []
        size = self.sizes[hits].min()
        found: dict[frozenset[str], Combo] = {}
        for i in hits[self.sizes[hits] == size]:
            found.setdefault(self.combos[i].codes, self.combos[i])
        return list(found.values())


def _copy(value: object) -> object:
    return value.copy() if isinstance(value, np.ndarray) else value


def _distinct(combos: list[Combo], raw: list[list[np.ndarray]]) -> list[int]:
    """Drop a variant whose outputs equal another variant's of the same codes (e.g. two ways of
    merging that coincide once another fault skips the merge): one row per behaviour."""
    keep: list[int] = []
    seen: dict[frozenset[str], list[int]] = {}
    for i, combo in enumerate(combos):
        twins = seen.setdefault(combo.codes, [])
        if any(all(_same(a, b) for a, b in zip(raw[i], raw[t], strict=True)) for t in twins):
            continue
        twins.append(i)
        keep.append(i)
    return keep


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.array_equal(a, b, equal_nan=True))


_tables: dict[int, tuple[Problem, FaultTable]] = {}
_lock = threading.Lock()


def fault_table(problem: Problem) -> FaultTable:
    """The problem's table, built on first use and kept for the life of the process."""
    with _lock:
        cached = _tables.get(id(problem))
        if cached is None or cached[0] is not problem:
            cached = (problem, FaultTable(problem))
            _tables[id(problem)] = cached
        return cached[1]
