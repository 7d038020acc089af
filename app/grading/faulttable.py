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

from app.problems.cases import output_shapes
from app.problems.errormodel import Diagnostics, Probe, flag_value
from app.problems.hooks import exception_name
from app.problems.loader import Problem


@dataclass(frozen=True)
class Combo:
    codes: frozenset[str]  # fault codes, as the student reads them
    flags: frozenset[str]  # reference flags: one variant per code, then the idioms' forms
    idiom: frozenset[str] = frozenset()  # the idioms' forms among ``flags``

    @property
    def size(self) -> int:
        return len(self.codes)

    @property
    def values(self) -> dict[str, str]:
        """The number each parameterized fault was found with, by code."""
        found = (flag_value(flag) for flag in self.flags)
        return dict(pair for pair in found if pair is not None)


SAMPLE_ENTRIES = 4
# Entries (rows x outputs) above which a column is searched on its sample first.
PRUNE_ABOVE = 16_384


@dataclass(frozen=True)
class ProbeColumn:
    """One output of one fault probe: every combination's output, flattened, one row per
    combination. A combination whose reference raised on the probe, or gave another shape, has
    a row of NaN that matches nothing."""

    name: str  # the probe's name
    shape: tuple[int, ...]
    filled: np.ndarray  # (combos, size) float64, non-finite entries replaced by 0
    finite: np.ndarray  # (combos, size) bool
    scale: float  # largest |correct output|: the yardstick for the low-precision match
    rtol: float  # the output's tolerance
    atol: float
    marks: frozenset[str] = frozenset()  # the probe's marks, for the problem's own checks
    part: int = 0  # which output of the function: its index in ``returns``
    output: str = "output"  # and its name
    # For a probe that expects an error: (combos,) the exception name each combination raised
    # there, "" where it returned. A submission that raises is matched on this alone.
    raised: np.ndarray | None = None
    # For any other probe: (combos,) the exception name where a combination with a number for
    # its mistake raised (a head count that does not divide the width cannot split it), ""
    # elsewhere; None when none did. A submission raising the same type there matches it.
    crashed: np.ndarray | None = None
    # Derived once here rather than for every diagnosed submission:
    # (combos, size) atol + rtol * |filled|, the tolerance around each entry;
    tolerance: np.ndarray = field(init=False, repr=False)
    # (combos,) bool, the rows with no non-finite entry (what an all-finite output can match).
    all_finite: np.ndarray = field(init=False, repr=False)
    # A few entries spread over the output, and every row's values and tolerances there: a row
    # that misses on them misses on the whole output, so only the rows that pass are compared in
    # full, and the lookup's cost barely grows with the table.
    sample: np.ndarray = field(init=False, repr=False)
    sample_filled: np.ndarray = field(init=False, repr=False)
    sample_tolerance: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        tolerance = self.atol + self.rtol * np.abs(self.filled)
        object.__setattr__(self, "tolerance", tolerance)
        object.__setattr__(self, "all_finite", self.finite.all(axis=1))
        size = self.filled.shape[1]
        sample = np.unique(np.linspace(0, size - 1, min(size, SAMPLE_ENTRIES)).astype(int))
        object.__setattr__(self, "sample", sample)
        object.__setattr__(self, "sample_filled", np.ascontiguousarray(self.filled[:, sample]))
        object.__setattr__(self, "sample_tolerance", np.ascontiguousarray(tolerance[:, sample]))


@dataclass(frozen=True)
class Matches:
    exact: np.ndarray  # (combos, probes) bool: within the problem's tolerance
    close: np.ndarray  # (combos, probes) bool: within the low-precision tolerance


def enumerate_combos(diagnostics: Diagnostics, idioms: bool = True) -> list[Combo]:
    """Combinations of up to ``max_faults`` codes, smallest first, at most one per group and
    none the error model excludes; each written in every way its idioms allow (with
    ``idioms=False`` the plain way only)."""
    model = diagnostics.error_model
    codes = list(model.faults)
    writings = model.writings() if idioms else [frozenset()]
    combos = []
    for size in range(model.diagnosis.max_faults + 1):
        for chosen in itertools.combinations(codes, size):
            groups = [g for c in chosen for g in model.faults[c].groups]
            if len(groups) != len(set(groups)) or model.excluded(chosen):
                continue
            for flags in itertools.product(*(model.flags(c) for c in chosen)):
                for idiom in writings:
                    combos.append(Combo(frozenset(chosen), frozenset(flags) | idiom, idiom))
    return combos


class FaultTable:
    def __init__(self, problem: Problem) -> None:
        diagnostics = problem.diagnostics
        if diagnostics is None:
            raise ValueError(f"problem {problem.id} has no error model")
        probes = [p for p in diagnostics.probes if p.purpose == "fault"]
        combos = enumerate_combos(diagnostics)
        spec = problem.spec
        correct = {
            p.name: problem.evaluate(p.inputs) for p in diagnostics.probes if p.raises is None
        }
        shapes = [_shapes(problem, p, correct) for p in probes]
        # One column per (probe, output); raw[combo][column] is that output, flattened.
        wanted = [(probe, k) for probe in probes for k in range(len(spec.outputs))]
        rows = [_row(problem, combo, probes, shapes) for combo in combos]
        raw = [r for r, _ in rows]
        keep = _distinct(combos, raw, [r for _, r in rows])
        raised = np.array([[r[i] for _, r in rows] for i in range(len(probes))], dtype=object)
        # A number that fails on every probe reproduces no output: its crashes match nothing.
        ran = np.array([[r == "" for r in raised_row] for _, raised_row in rows])
        numbered = np.array([bool(combos[i].values) and bool(ran[i].any()) for i in keep])
        self.combos: list[Combo] = [combos[i] for i in keep]
        self.sizes = np.array([c.size for c in self.combos])
        self.columns: list[ProbeColumn] = []
        for j, (probe, k) in enumerate(wanted):
            shape = shapes[j // len(spec.outputs)][k]
            size = int(np.prod(shape))
            right = correct[probe.name][k] if probe.raises is None else None
            entries = [raw[i][j] for i in keep]
            failed = np.array([e is None for e in entries])
            stacked = np.stack([np.zeros(size) if e is None else e for e in entries])
            finite = np.isfinite(stacked)
            filled = np.where(finite, stacked, 0.0)
            # A row with no output holds NaN: its differences are NaN, so it matches nothing.
            filled[failed] = np.nan
            finite[failed] = False
            output = spec.outputs[k]
            tolerance = spec.tolerance_of(output)
            self.columns.append(
                ProbeColumn(
                    name=probe.name,
                    shape=shape,
                    filled=filled,
                    finite=finite,
                    rtol=tolerance.rtol,
                    atol=tolerance.atol,
                    scale=1.0 if right is None else float(np.abs(right).max(initial=0.0)) or 1.0,
                    marks=frozenset(probe.marks),
                    part=k,
                    output=output.name,
                    raised=None if probe.raises is None else raised[j // len(spec.outputs)][keep],
                    crashed=_crashed(probe, raised[j // len(spec.outputs)][keep], numbered),
                )
            )
        # Every probe's correct output shapes (one per output), property probes included.
        self.shapes: dict[str, tuple[tuple[int, ...], ...]] = {
            name: tuple(part.shape for part in parts) for name, parts in correct.items()
        }
        self.max_faults = diagnostics.error_model.diagnosis.max_faults
        self.low_precision = diagnostics.error_model.diagnosis.low_precision
        self.rtol = spec.tolerance.rtol
        self.atol = spec.tolerance.atol

    def match(
        self, outputs: Sequence[np.ndarray | None], raised: Sequence[str | None] | None = None
    ) -> Matches:
        """Which combinations reproduce each probe's output. ``None`` (crash, wrong shape)
        matches nothing, except on a probe that expects an error, where the exception type
        ``raised[j]`` matches the combinations raising that type. Non-finite values must sit
        exactly where the model has them."""
        n = len(self.combos)
        exact = np.zeros((n, len(self.columns)), dtype=bool)
        close = np.zeros_like(exact)
        for j, (column, output) in enumerate(zip(self.columns, outputs, strict=True)):
            if column.raised is not None and raised is not None and raised[j] is not None:
                exact[:, j] = close[:, j] = column.raised == raised[j]
                continue
            if output is None and column.crashed is not None and raised is not None:
                if raised[j] is not None:
                    exact[:, j] = close[:, j] = column.crashed == raised[j]
                continue
            if output is None or output.shape != column.shape:
                continue
            flat = np.asarray(output, dtype=np.float64).ravel()
            finite = np.isfinite(flat)
            if finite.all():  # the usual case: the per-row masks were computed with the table
                same_mask = column.all_finite
            else:
                same_mask = (column.finite == finite).all(axis=1)
                flat = np.where(finite, flat, 0.0)
            near = self.low_precision * column.scale
            if column.filled.size <= PRUNE_ABOVE:  # a small table: one pass costs less
                diff = np.abs(column.filled - flat)
                exact[:, j] = same_mask & (diff <= column.tolerance).all(axis=1)
                close[:, j] = same_mask & (diff.max(axis=1) <= near)
                continue
            first = np.abs(column.sample_filled - flat[column.sample])
            maybe = (first <= column.sample_tolerance).all(axis=1) | (first.max(axis=1) <= near)
            rows = np.flatnonzero(same_mask & maybe)
            if rows.size == 0:
                continue
            diff = np.abs(column.filled[rows] - flat)
            exact[rows, j] = (diff <= column.tolerance[rows]).all(axis=1)
            close[rows, j] = diff.max(axis=1) <= near
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


def _crashed(probe: Probe, raised: np.ndarray, numbered: np.ndarray) -> np.ndarray | None:
    if probe.raises is not None or not numbered.any():
        return None
    crashed = np.where(numbered, raised, "").astype(object)
    return crashed if (crashed != "").any() else None


def _shapes(
    problem: Problem, probe: Probe, correct: dict[str, tuple[np.ndarray, ...]]
) -> list[tuple[int, ...]]:
    """The correct outputs' shapes on a probe; on one that expects an error, the shapes the
    signature gives (what a function that wrongly returns there should return)."""
    if probe.raises is None:
        return [part.shape for part in correct[probe.name]]
    return output_shapes(problem.spec, problem.validate_inputs(probe.inputs))


def _row(
    problem: Problem,
    combo: Combo,
    probes: Sequence[Probe],
    shapes: Sequence[Sequence[tuple[int, ...]]],
) -> tuple[list[np.ndarray | None], list[str]]:
    """One combination's outputs on the fault probes, one flattened array per (probe, output),
    None where the faulty reference raises or gives another shape; and per probe the name of
    the exception it raised ("" where it returned)."""
    row: list[np.ndarray | None] = []
    raised: list[str] = []
    for probe, want in zip(probes, shapes, strict=True):
        try:
            with np.errstate(all="ignore"):  # unstable variants overflow on purpose
                parts: tuple[np.ndarray, ...] | None = problem.evaluate(probe.inputs, combo.flags)
            raised.append("")
        except Exception as exc:  # a fault that cannot run on this probe reproduces no output
            parts = None
            raised.append(exception_name(exc))
        for k, shape in enumerate(want):
            got = parts[k] if parts is not None and len(parts) == len(want) else None
            row.append(got.ravel() if got is not None and got.shape == shape else None)
    return row, raised


def _distinct(
    combos: list[Combo], raw: list[list[np.ndarray | None]], raised: list[list[str]]
) -> list[int]:
    """Drop a variant whose outputs equal another variant's of the same codes (e.g. two ways of
    merging that coincide once another fault skips the merge, or an idiom that differs only
    where no probe looks): one row per behaviour. Drop too a combination whose outputs equal a
    smaller one's on every probe: the smaller always wins, on any subset of the probes, so the
    row could never be reported and would only slow the lookup. ``combos`` come smallest
    first."""
    keep: list[int] = []
    seen: dict[frozenset[str], list[int]] = {}
    sizes: dict[bytes, int] = {}  # an exact fingerprint of outputs -> the smallest size with it
    for i, combo in enumerate(combos):
        print_ = _fingerprint(raw[i], raised[i])
        if sizes.get(print_, combo.size) < combo.size:
            continue
        twins = seen.setdefault(combo.codes, [])
        if any(all(_same(a, b) for a, b in zip(raw[i], raw[t], strict=True)) for t in twins):
            continue
        sizes.setdefault(print_, combo.size)
        twins.append(i)
        keep.append(i)
    return keep


def _fingerprint(row: list[np.ndarray | None], raised: list[str]) -> bytes:
    """The outputs to 9 decimals, far inside any tolerance: two ways of computing one function
    (an exp with and without the max subtracted) differ in the last bits only."""
    parts = [b"-" if a is None else _rounded(a).tobytes() for a in row]
    return b"|".join(parts) + "|".join(raised).encode()


def _rounded(a: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        r = np.round(np.asarray(a, dtype=np.float64), 9) + 0.0  # + 0.0: no -0.0
    return np.where(np.isnan(r), np.nan, r)


def _same(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    if a is None or b is None:
        return a is b
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
