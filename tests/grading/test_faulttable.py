"""The error model's table: every fault combination is told apart by the probes."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import numpy as np
import pytest

from app.grading.faulttable import FaultTable, enumerate_combos, fault_table
from app.problems.loader import Problem, load_problem
from tests.conftest import PROBLEMS_DIR


def _distance(table: FaultTable) -> np.ndarray:
    """Largest difference between two combinations' outputs over the probes, relative to the
    probe's output scale; infinite where NaN/inf sit in different places, or where one of the
    two raised (a head count that cannot split the width) and the other did not."""
    n = len(table.combos)
    dist = np.zeros((n, n))
    for column in table.columns:
        with np.errstate(invalid="ignore"):
            diff = np.abs(column.filled[:, None, :] - column.filled[None, :, :]).max(axis=-1)
        diff /= column.scale
        diff[(column.finite[:, None, :] != column.finite[None, :, :]).any(axis=-1)] = np.inf
        failed = np.isnan(column.filled).any(axis=1)
        diff[failed[:, None] | failed[None, :]] = np.inf
        diff[failed[:, None] & failed[None, :]] = 0.0
        dist = np.maximum(dist, diff)
    return dist


def test_probes_separate_every_combination_of_up_to_three_faults(mha: Problem, table: FaultTable):
    model = mha.diagnostics.error_model  # type: ignore[union-attr]
    codes = {c for combo in table.combos for c in combo.codes}
    assert codes == set(model.faults)
    assert max(c.size for c in table.combos) == 3
    # Every allowed set of codes is present (variants that behave alike were merged, not lost),
    # but for one whose every output a smaller set gives: with the causal mask filled with -1e9,
    # the overflowing softmax over queries gives exactly what the -inf fill gives without it.
    allowed = {c.codes for c in enumerate_combos(mha.diagnostics)}  # type: ignore[arg-type]
    assert allowed - {c.codes for c in table.combos} == {
        frozenset({"causal-mask-applied", "softmax-wrong-axis", "unstable-softmax"})
    }
    assert len(allowed) > 300
    dist = _distance(table)
    # Variants of one code count as the same misconception; anything else must differ by more
    # than twice the low-precision tolerance, so not even a float32 answer can be mistaken.
    margin = 2 * model.diagnosis.low_precision
    for i, j in itertools.combinations(range(len(table.combos)), 2):
        a, b = table.combos[i], table.combos[j]
        if a.codes != b.codes:
            assert dist[i, j] > margin, (sorted(a.flags), sorted(b.flags), dist[i, j])


def test_groups_are_never_combined(table: FaultTable, mha: Problem):
    model = mha.diagnostics.error_model  # type: ignore[union-attr]
    for combo in table.combos:
        groups = [g for c in combo.codes for g in model.faults[c].groups]
        assert len(groups) == len(set(groups)), combo


def test_both_merges_of_the_wrong_split_are_kept_as_one_code(table: FaultTable):
    variants = [c for c in table.combos if c.codes == frozenset({"reshape-order"})]
    assert {frozenset(v.flags) for v in variants} == {
        frozenset({"reshape-order"}),
        frozenset({"reshape-order/textbook-merge"}),
    }
    # Once the merge skips the transpose, both variants behave alike and only one row is kept.
    skip = [c for c in table.combos if c.codes == frozenset({"reshape-order", "no-transpose-back"})]
    assert len(skip) == 1


def test_plain_call_is_the_reference_and_unknown_flags_are_refused(mha: Problem):
    probe = mha.diagnostics.probes[0]  # type: ignore[union-attr]
    args = [probe.inputs[p.name] for p in mha.spec.params]
    plain = mha.reference(*args)
    np.testing.assert_array_equal(plain, mha.reference(*args, faults=frozenset()))
    with pytest.raises(ValueError, match="unknown fault flags"):
        mha.reference(*args, faults=frozenset({"no-such-fault"}))


def test_probes_respect_the_design_rules(mha: Problem):
    diagnostics = mha.diagnostics
    assert diagnostics is not None
    fault = [p for p in diagnostics.probes if p.purpose == "fault"]
    for probe in diagnostics.probes:
        h = probe.inputs["num_heads"]
        _, n_q, d = probe.inputs["Q"].shape
        n_k = probe.inputs["K"].shape[1]
        assert isinstance(h, int) and h >= 2 and d // h >= 2, probe.name
        assert n_q >= 2 and n_k >= 2, probe.name
        equal_lengths = "equal-lengths" in probe.marks
        assert equal_lengths == (n_q == n_k) or probe.purpose == "property"
    for probe in fault:
        d, h = probe.inputs["Q"].shape[2], probe.inputs["num_heads"]
        assert d != h * h, probe.name  # sqrt(d_model) == d_k would merge two scale faults
    assert any("equal-lengths" not in p.marks for p in fault)
    assert sum("equal-lengths" in p.marks for p in fault) >= 2
    large = [p for p in fault if np.abs(p.inputs["Q"]).max() > 50]
    assert len(large) == 1
    for probe in fault:
        if probe not in large:  # not saturated: the scale faults must show
            assert np.abs(_scores(probe.inputs)).max() < 20, probe.name
    # ...and the large one overflows np.exp wherever it is taken.
    with np.errstate(over="ignore"):
        assert not np.all(np.isfinite(np.exp(_scores(large[0].inputs) / 4)))


def _scores(inputs) -> np.ndarray:
    h = inputs["num_heads"]
    batch, n_q, d = inputs["Q"].shape
    d_k = d // h
    q = (inputs["Q"] @ inputs["W_q"]).reshape(batch, n_q, h, d_k).transpose(0, 2, 1, 3)
    k = (inputs["K"] @ inputs["W_k"]).reshape(batch, -1, h, d_k).transpose(0, 2, 1, 3)
    return q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_k)


def test_plain_reshapes_both_ways_are_one_fault_that_combines_with_two_others(table: FaultTable):
    habit = frozenset({"no-head-transpose"})
    flags = {frozenset(c.flags) for c in table.combos if c.codes == habit}
    assert frozenset({"no-head-transpose/plain-merge"}) in flags
    # Never counted as two faults, so the habit plus two other mistakes is still a triple.
    assert not [c for c in table.combos if {"no-head-transpose", "no-transpose-back"} <= c.codes]
    triple = frozenset({"no-head-transpose", "scale-dmodel", "softmax-wrong-axis"})
    assert any(
        c.codes == triple and "no-head-transpose/plain-merge" in c.flags for c in table.combos
    )


def test_a_table_is_kept_per_folder_contents_not_per_load(tmp_path: Path) -> None:
    """An unchanged folder is loaded once per process, with one table; an edited one is loaded
    again and gets a new table."""
    folder = tmp_path / "causal-attention"
    shutil.copytree(PROBLEMS_DIR / "causal-attention", folder)
    first, again = load_problem(folder), load_problem(folder)
    assert first is again and first.fingerprint == again.fingerprint
    assert fault_table(first) is fault_table(again)
    reference = folder / "reference.py"
    reference.write_text(reference.read_text() + "\n# edited\n")
    edited = load_problem(folder)
    assert edited.fingerprint != first.fingerprint and edited is not first
    assert fault_table(edited) is not fault_table(first)


def test_reproducing_agrees_with_match_on_any_rows(table: FaultTable):
    """The quick check a passing submission gets (``reproducing``, on a few rows) says what the
    full comparison (``match``) says of those rows: on outputs that are some combination's, on
    outputs slightly off, and on outputs with a NaN where the combinations have none."""
    rng = np.random.default_rng(0)
    every = np.arange(len(table.combos))
    usable = [i for i in every if not any(np.isnan(c.filled[i]).any() for c in table.columns)]
    chosen = list(table.faultless) + list(rng.choice(usable, size=12, replace=False))
    assert len(table.faultless) >= 1
    reproduced = 0
    for i in chosen:
        outputs = [c.filled[i].reshape(c.shape).copy() for c in table.columns]
        variants = [outputs]
        off = [o.copy() for o in outputs]
        off[len(off) // 2].flat[0] += 1e-3 * table.columns[len(off) // 2].scale
        variants.append(off)
        nan = [o.copy() for o in outputs]
        nan[0].flat[0] = np.nan
        variants.append(nan)
        for candidate in variants:
            full = table.match(candidate, None).exact.all(axis=1)
            assert (table.reproducing(candidate, None, every) == full).all()
            quick = table.reproducing(candidate, None, table.faultless)
            assert (quick == full[table.faultless]).all()
            reproduced += int(full.sum())
    assert reproduced > 0  # some outputs were some combination's: the check can say yes
