"""Every fault combination's output on the fault probes, computed once per problem and process.

The probes are fixed, so the faulty reference is run on them for each combination of up to
``max_faults`` faults (each with each of its variants) once; diagnosing a submission is then a
vectorised comparison of its outputs with this table, not a search that re-runs the reference.

Each combination is also run with its inputs in float32 and in float16: a low-precision answer is
recognised by that signature (it sits within rounding noise of the computation at one of those
dtypes), not by being roughly right, which a small real bug also is.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from app.problems.cases import Inputs, output_shapes
from app.problems.errormodel import Diagnostics, Probe, flag_value
from app.problems.hooks import exception_name
from app.problems.loader import Problem

# The dtypes a low-precision answer is recognised by, tightest first.
LOW_DTYPES = ("float32", "float16")
# How far a low-precision answer may sit from the reference run at its dtype: NOISE_FACTOR times
# that run's own distance from float64, and at least NOISE_FLOOR units of rounding (eps) at the
# output's scale. Two implementations at one dtype round in another order: measured on the
# probes, they differ by up to about one eps at the scale, several times the reference's own
# distance from float64 (which rounds its inputs, then partly computes in float64).
NOISE_FACTOR = 4.0
NOISE_FLOOR = 2.0
# Low-precision rows are computed for combinations of up to this many faults: a float32 answer
# with three mistakes at once is rare, and the triples are most of a large table (for
# multi-head attention, 525 of 676 rows), whose build time the rows would otherwise triple.
LOW_PRECISION_MAX_FAULTS = 2


@dataclass(frozen=True)
class LowPrecision:
    """One output of one probe, every combination computed at one lower dtype."""

    # Only the combinations that can match at this dtype (computed there, no new non-finite
    # values), so that the comparison costs a fraction of the exact one:
    rows: np.ndarray  # (usable,) their indices in the table
    filled: np.ndarray  # (usable, size) float64 view of their low-dtype outputs, non-finite -> 0
    bound: np.ndarray  # (usable,) the largest distance that is still rounding noise


@dataclass(frozen=True)
class ProbeFacts:
    """What the evidence may say about a fault probe: the problem's own phrase, the rank of its
    first array input and its sizes (never its values)."""

    about: str
    rank: int
    dims: dict[str, object]
    marks: frozenset[str] = frozenset()

    @property
    def sizes(self) -> str:
        return ", ".join(f"{k.lstrip('*')}={v}" for k, v in self.dims.items())


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
    # For any other probe: (combos,) bool, the combinations whose reference raises there while
    # returning on some other probe that expects no error (a habit that fails only at some
    # shapes, such as a sum without keepdims, or a head count fixed in the code that does not
    # divide the width). A submission that raises there matches them, whatever type it raised:
    # the type depends on how the step is written (a reshape, an einsum, an assert), and the
    # sandbox reports most types of a hidden run as plain ``Exception``. A row raising on every
    # such probe matches nothing this way (it says nothing about a function that always raises).
    crashes: np.ndarray | None = None
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
    # The same combinations computed at each of LOW_DTYPES.
    low: Mapping[str, LowPrecision] = field(default_factory=dict)

    def __post_init__(self) -> None:
        tolerance = self.atol + self.rtol * np.abs(self.filled)
        object.__setattr__(self, "tolerance", tolerance)
        object.__setattr__(self, "all_finite", self.finite.all(axis=1))
        size = self.filled.shape[1]
        sample = np.unique(np.linspace(0, size - 1, min(size, SAMPLE_ENTRIES)).astype(int))
        object.__setattr__(self, "sample", sample)
        object.__setattr__(self, "sample_filled", np.ascontiguousarray(self.filled[:, sample]))
        object.__setattr__(self, "sample_tolerance", np.ascontiguousarray(tolerance[:, sample]))


@dataclass
class Matches:
    exact: np.ndarray  # (combos, columns) bool: within the problem's tolerance
    # (combos, columns) bool: within twice the low-precision cap of the float64 row, which any
    # low-precision match is; where no row is near, the dtype comparisons need not run.
    near: np.ndarray
    # dtype -> (combos, columns) bool: within rounding noise of the combination at that dtype;
    # computed on first use, since an exact match (the usual case) never needs it.
    _low: Callable[[str], np.ndarray] = field(repr=False)
    _cache: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def low(self, dtype: str) -> np.ndarray:
        if dtype not in self._cache:
            self._cache[dtype] = self._low(dtype)
        return self._cache[dtype]


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
        # Low-precision rows only for the rows kept (a dropped one could never be reported).
        none: list[np.ndarray | None] = [None] * len(wanted)
        low_raw = {
            dtype: [
                _row(problem, combos[i], probes, shapes, dtype)[0]
                if combos[i].size <= LOW_PRECISION_MAX_FAULTS
                else none
                for i in keep
            ]
            for dtype in LOW_DTYPES
        }
        raised = np.array([[r[i] for _, r in rows] for i in range(len(probes))], dtype=object)
        returns = (raised[[p.raises is None for p in probes]] == "").any(axis=0)
        self.combos: list[Combo] = [combos[i] for i in keep]
        self.sizes = np.array([c.size for c in self.combos])
        # The combinations without a fault (the reference, in each idiom): a correct
        # submission's outputs match one of these, checked first (``reproducing``).
        self.faultless = np.flatnonzero(self.sizes == 0)
        self.row_of: dict[Combo, int] = {c: i for i, c in enumerate(self.combos)}
        self.columns: list[ProbeColumn] = []
        cap = diagnostics.error_model.diagnosis.low_precision
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
            scale = 1.0 if right is None else float(np.abs(right).max(initial=0.0)) or 1.0
            low = {
                dtype: _low_precision(
                    [r[j] for r in low_raw[dtype]], filled, finite, scale, dtype, cap
                )
                for dtype in LOW_DTYPES
            }
            self.columns.append(
                ProbeColumn(
                    name=probe.name,
                    shape=shape,
                    filled=filled,
                    finite=finite,
                    rtol=tolerance.rtol,
                    atol=tolerance.atol,
                    scale=scale,
                    marks=frozenset(probe.marks),
                    part=k,
                    output=output.name,
                    raised=None if probe.raises is None else raised[j // len(spec.outputs)][keep],
                    crashes=None
                    if probe.raises is not None
                    else ((raised[j // len(spec.outputs)] != "") & returns)[keep],
                    low=low,
                )
            )
        self.probe_facts: dict[str, ProbeFacts] = {p.name: _facts(problem, p) for p in probes}
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
        ``raised[j]`` matches the combinations raising that type, and on any other probe,
        where a raise matches the combinations that crash there (``ProbeColumn.crashes``).
        Non-finite values must sit exactly where the model has them."""
        n = len(self.combos)
        exact = np.zeros((n, len(self.columns)), dtype=bool)
        near = np.zeros_like(exact)
        # Per column, what the low-precision comparison needs: the output flattened with
        # non-finite entries as 0 (``near`` holds where non-finite entries sit alike); None
        # where only the raised exception (or nothing) counts.
        prepared: list[np.ndarray | None] = []
        for j, (column, output) in enumerate(zip(self.columns, outputs, strict=True)):
            prepared.append(None)
            decided = _by_exception(column, raised[j] if raised is not None else None)
            if decided is not None:
                exact[:, j] = near[:, j] = decided
                continue
            values = _flattened(column, output)
            if values is None:
                continue
            flat, same_mask = values
            near_cap = 2 * self.low_precision * column.scale
            prepared[j] = flat
            if column.filled.size <= PRUNE_ABOVE:  # a small table: one pass costs less
                diff = np.abs(column.filled - flat)
                exact[:, j] = same_mask & (diff <= column.tolerance).all(axis=1)
                near[:, j] = same_mask & (diff.max(axis=1) <= near_cap)
                continue
            first = np.abs(column.sample_filled - flat[column.sample])
            maybe = (first <= column.sample_tolerance).all(axis=1) | (first.max(axis=1) <= near_cap)
            rows = np.flatnonzero(same_mask & maybe)
            if rows.size == 0:
                continue
            diff = np.abs(column.filled[rows] - flat)
            exact[rows, j] = (diff <= column.tolerance[rows]).all(axis=1)
            near[rows, j] = diff.max(axis=1) <= near_cap

        def low(dtype: str) -> np.ndarray:
            ok = exact.copy()  # an exact match is also within any rounding noise
            for j, (column, ready) in enumerate(zip(self.columns, prepared, strict=True)):
                if ready is None:
                    continue
                flat = ready
                at = column.low[dtype]
                near_rows = near[at.rows, j]  # only those can be within the noise bound
                rows = at.rows[near_rows]
                off = np.abs(at.filled[near_rows] - flat).max(axis=1, initial=0.0)
                ok[rows, j] |= off <= at.bound[near_rows]
            return ok

        return Matches(exact, near, low)

    def reproducing(
        self,
        outputs: Sequence[np.ndarray | None],
        raised: Sequence[str | None] | None,
        rows: np.ndarray,
    ) -> np.ndarray:
        """Which of ``rows`` reproduce every probe's output: ``match(outputs,
        raised).exact[rows].all(axis=1)``, computed for these rows only (a correct submission
        is told from the faultless rows alone, without comparing it with every combination)."""
        ok = np.ones(rows.size, dtype=bool)
        for j, (column, output) in enumerate(zip(self.columns, outputs, strict=True)):
            if not ok.any():
                break
            decided = _by_exception(column, raised[j] if raised is not None else None)
            if decided is not None:
                ok &= decided[rows]
                continue
            values = _flattened(column, output)
            if values is None:
                ok[:] = False
                break
            flat, same = values
            diff = np.abs(column.filled[rows] - flat)
            ok &= same[rows] & (diff <= column.tolerance[rows]).all(axis=1)
        return ok

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
    dtype: str | None = None,
) -> tuple[list[np.ndarray | None], list[str]]:
    """One combination's outputs on the fault probes, one flattened array per (probe, output),
    None where the faulty reference raises or gives another shape; and per probe the name of
    the exception it raised ("" where it returned). ``dtype``: the probes' float inputs are
    first cast to it, so the reference computes at that precision."""
    row: list[np.ndarray | None] = []
    raised: list[str] = []
    for probe, want in zip(probes, shapes, strict=True):
        inputs = probe.inputs if dtype is None else _cast(probe.inputs, dtype)
        try:
            with np.errstate(all="ignore"):  # unstable variants overflow on purpose
                parts: tuple[np.ndarray, ...] | None = problem.evaluate(inputs, combo.flags)
            raised.append("")
        except Exception as exc:  # a fault that cannot run on this probe reproduces no output
            parts = None
            raised.append(exception_name(exc))
        for k, shape in enumerate(want):
            got = parts[k] if parts is not None and len(parts) == len(want) else None
            row.append(got.ravel() if got is not None and got.shape == shape else None)
    return row, raised


def _facts(problem: Problem, probe: Probe) -> ProbeFacts:
    arrays = [v for v in probe.inputs.values() if isinstance(v, np.ndarray)]
    dims = problem.validate_inputs(probe.inputs)
    return ProbeFacts(
        about=probe.about,
        rank=arrays[0].ndim if arrays else 0,
        dims={k: v for k, v in dims.items() if isinstance(v, int | tuple)},
        marks=frozenset(probe.marks),
    )


def _cast(inputs: Inputs, dtype: str) -> Inputs:
    return {
        name: value.astype(dtype)
        if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating)
        else value
        for name, value in inputs.items()
    }


def _low_precision(
    entries: Sequence[np.ndarray | None],
    filled: np.ndarray,
    finite: np.ndarray,
    scale: float,
    dtype: str,
    cap: float,
) -> LowPrecision:
    """The combinations' outputs at ``dtype`` beside their float64 ones (``filled``, ``finite``)
    and how far an answer at that dtype may be from them (see NOISE_FACTOR), never beyond
    ``cap`` times the scale. A row that rounding turns non-finite, or where the reference
    failed, matches nothing."""
    size = filled.shape[1]
    stacked = np.stack([np.full(size, np.nan) if e is None else e for e in entries])
    low_finite = np.isfinite(stacked)
    low = np.where(low_finite, stacked, 0.0)
    usable = (low_finite == finite).all(axis=1) & ~np.isnan(filled).any(axis=1)
    with np.errstate(invalid="ignore"):
        noise = np.abs(low - filled).max(axis=1, initial=0.0)
    floor = NOISE_FLOOR * float(np.finfo(dtype).eps) * scale
    bound = np.minimum(np.maximum(NOISE_FACTOR * noise, floor), cap * scale)
    rows = np.flatnonzero(usable)
    return LowPrecision(rows=rows, filled=low[rows], bound=bound[rows])


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


# Keyed by the folder's contents, not the Problem object: every app (a test makes hundreds, a
# reload makes new objects) loads its own Problems, and the table costs seconds to build.
_tables: OrderedDict[tuple[str, str], FaultTable] = OrderedDict()
_TABLES_KEPT = 32
_lock = threading.Lock()


def fault_table(problem: Problem) -> FaultTable:
    """The problem's table, built on first use and kept for the life of the process."""
    key = (problem.id, problem.fingerprint)
    with _lock:
        table = _tables.get(key)
        if table is None:
            table = FaultTable(problem)
            _tables[key] = table
            while len(_tables) > _TABLES_KEPT:
                _tables.popitem(last=False)
        _tables.move_to_end(key)
        return table


def _by_exception(column: ProbeColumn, raised: str | None) -> np.ndarray | None:
    """Per row, whether it reproduces a probe call that raised ``raised``, where the exception
    decides: a probe that expects an error (its type must match) or one a combination crashes
    on; None where the output's values decide."""
    if raised is None:
        return None
    if column.raised is not None:
        same: np.ndarray = column.raised == raised
        return same
    return column.crashes


def _flattened(
    column: ProbeColumn, output: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray] | None:
    """The output flattened with non-finite entries as 0, and per row whether the row's
    non-finite entries sit exactly where the output's do; None when it cannot match (no output,
    or the wrong shape)."""
    if output is None or output.shape != column.shape:
        return None
    flat = np.asarray(output, dtype=np.float64).ravel()
    finite = np.isfinite(flat)
    if finite.all():  # the usual case: the per-row masks were computed with the table
        return flat, column.all_finite
    return np.where(finite, flat, 0.0), (column.finite == finite).all(axis=1)
