"""A mistake that is a number (multi-head attention's fixed head count): found by the search,
worded with the number, matched through the probes where it cannot run; and the table's sampled
lookup gives exactly what comparing every entry gives."""

from __future__ import annotations

import numpy as np
import pytest

from app.grading import explain
from app.grading.faulttable import FaultTable
from app.problems.loader import Problem
from tests.grading.test_diagnose import Impl, faulty, find, run_probes


@pytest.mark.parametrize("heads", [2, 4, 8])
def test_a_fixed_head_count_is_found_and_worded_with_its_number(
    mha: Problem, table: FaultTable, heads: int
):
    finding = find(mha, table, faulty(mha, f"fixed-heads={heads}"))
    assert finding.alternatives == [frozenset({"fixed-heads"})]
    assert finding.values == {"fixed-heads": str(heads)}
    model = mha.diagnostics.error_model  # type: ignore[union-attr]
    (worded,) = explain.diagnoses(mha, model, finding)
    assert worded.title == f"Always {heads} heads, whatever num_heads says"
    assert "{value}" not in worded.explanation and f"into {heads} heads" in worded.explanation


def test_raising_on_every_probe_is_no_fixed_head_count(mha: Problem, table: FaultTable):
    def always_fails(*args: object) -> np.ndarray:
        raise ValueError("cannot reshape array")

    finding = find(mha, table, always_fails)
    assert finding.alternatives == [] and finding.values == {}


def test_a_crash_of_any_type_where_the_count_cannot_split_matches_it(
    mha: Problem, table: FaultTable
):
    # The count written another way (an assert, an einsum) fails with another exception type;
    # the sandbox reports most types of a hidden run as plain Exception anyway.
    def fixed_four(*args: object) -> np.ndarray:
        Q = args[0]
        assert isinstance(Q, np.ndarray)
        if Q.shape[-1] % 4:
            raise IndexError("not a reshape error")
        return faulty(mha, "fixed-heads=4")(*args)

    finding = find(mha, table, fixed_four)
    assert finding.alternatives == [frozenset({"fixed-heads"})]
    assert finding.values == {"fixed-heads": "4"}


def test_a_crash_where_the_count_can_split_is_no_fixed_head_count(mha: Problem, table: FaultTable):
    def fails_where_four_divides(*args: object) -> np.ndarray:
        Q = args[0]
        assert isinstance(Q, np.ndarray)
        if Q.shape[-1] % 4 == 0:
            raise ValueError("cannot reshape array")
        return faulty(mha, "fixed-heads=4")(*args)

    finding = find(mha, table, fails_where_four_divides)
    assert frozenset({"fixed-heads"}) not in finding.alternatives


def _full_match(
    table: FaultTable, outputs: list[np.ndarray | None]
) -> tuple[np.ndarray, np.ndarray]:
    """(exact, near) from every entry of every row: what the sampled lookup must equal."""
    exact = np.zeros((len(table.combos), len(table.columns)), dtype=bool)
    near = np.zeros_like(exact)
    for j, (column, output) in enumerate(zip(table.columns, outputs, strict=True)):
        if output is None or output.shape != column.shape:
            continue
        flat = np.asarray(output, dtype=np.float64).ravel()
        finite = np.isfinite(flat)
        same_mask = (column.finite == finite).all(axis=1)
        diff = np.abs(column.filled - np.where(finite, flat, 0.0))
        exact[:, j] = same_mask & (diff <= column.tolerance).all(axis=1)
        near[:, j] = same_mask & (diff.max(axis=1) <= 2 * table.low_precision * column.scale)
    return exact, near


def _at(impl: Impl, dtype: str | None) -> Impl:
    """``impl`` computing in ``dtype``: its float inputs cast first, as a float32 answer does."""
    if dtype is None:
        return impl

    def cast(*args: object) -> np.ndarray:
        return impl(
            *(
                a.astype(dtype) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a
                for a in args
            )
        )

    return cast


@pytest.mark.parametrize(
    ("flags", "dtype"),
    [
        ((), None),
        (("missing-wo",), None),
        (("causal-mask-applied", "causal-fill-inf"), None),
        (("fixed-heads=2",), None),
        ((), "float32"),
        (("missing-wo",), "float16"),
    ],
)
def test_sampled_lookup_equals_the_full_comparison(
    mha: Problem, table: FaultTable, flags: tuple[str, ...], dtype: str | None
):
    impl: Impl = _at(faulty(mha, *flags), dtype)
    outcomes = run_probes(mha, impl)
    outputs = [outcomes[c.name].output for c in table.columns]
    arrays = [o if isinstance(o, np.ndarray) else None for o in outputs]
    matches = table.match(arrays)
    exact, near = _full_match(table, arrays)
    np.testing.assert_array_equal(matches.exact, exact)
    np.testing.assert_array_equal(matches.near, near)
    # The low-precision rows stay reachable through the pruned lookup.
    ok = matches.exact if dtype is None else matches.low(dtype)
    assert ok.all(axis=1).sum() >= 1
