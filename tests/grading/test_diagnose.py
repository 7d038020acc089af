"""Diagnosis on outputs computed here (trusted code, no sandbox): the unrecognized path's
properties, ambiguity, and the contract checks."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

from app.grading import explain
from app.grading.diagnose import Finding, diagnose
from app.grading.faulttable import Combo, FaultTable
from app.problems.loader import Problem
from sandbox.protocol import CaseError, CaseOutcome

Impl = Callable[..., np.ndarray]


def run_probes(mha: Problem, impl: Impl) -> dict[str, CaseOutcome]:
    out = {}
    for probe in mha.diagnostics.probes:  # type: ignore[union-attr]
        args = [
            v.copy() if isinstance(v, np.ndarray) else v
            for v in (probe.inputs[p.name] for p in mha.spec.params)
        ]
        try:
            with np.errstate(all="ignore"):
                out[probe.name] = CaseOutcome(name=probe.name, output=np.asarray(impl(*args)))
        except Exception as exc:
            out[probe.name] = CaseOutcome(
                name=probe.name, error=CaseError(type=type(exc).__name__, message=str(exc))
            )
    return out


def find(mha: Problem, table: FaultTable, impl: Impl, cases_failed: bool = True) -> Finding:
    outcomes = run_probes(mha, impl)
    return diagnose(mha, table, outcomes, list(outcomes.values()), cases_failed)


def faulty(mha: Problem, *flags: str) -> Impl:
    return lambda *args: mha.reference(*args, faults=frozenset(flags))


def statuses(mha: Problem, finding: Finding) -> dict[str, str]:
    model = mha.diagnostics.error_model  # type: ignore[union-attr]
    return {r.id: r.status for r in explain.requirements(mha, model, finding)}


# --- every fault combination comes back as itself -------------------------------------------


def test_every_table_entry_is_diagnosed_as_its_own_codes(mha: Problem, table: FaultTable):
    for combo in table.combos[:: max(1, len(table.combos) // 60)]:  # a spread over all sizes
        finding = find(mha, table, faulty(mha, *combo.flags), cases_failed=bool(combo.codes))
        assert finding.alternatives == [combo.codes], sorted(combo.flags)
        assert finding.explained and not finding.contract


def test_correct_outputs_have_no_codes_and_pass_every_requirement(mha: Problem, table):
    finding = find(mha, table, mha.reference, cases_failed=False)
    assert finding.alternatives == [frozenset()] and not finding.contract
    assert set(statuses(mha, finding).values()) == {"passed"}


def test_right_on_probes_but_failing_cases_is_unrecognized(mha: Problem, table):
    finding = find(mha, table, mha.reference, cases_failed=True)
    assert list(finding.contract) == ["unrecognized"] and not finding.alternatives


# --- the unrecognized path ---------------------------------------------------------------------


def sigmoid_attention(ref: Impl) -> Impl:
    def impl(Q, K, V, W_q, W_k, W_v, W_o, h):
        b, n, d = Q.shape
        dk = d // h

        def split(x):
            return x.reshape(b, x.shape[1], h, dk).transpose(0, 2, 1, 3)

        s = split(Q @ W_q) @ split(K @ W_k).transpose(0, 1, 3, 2) / np.sqrt(dk)
        w = 1 / (1 + np.exp(-s))
        return (w @ split(V @ W_v)).transpose(0, 2, 1, 3).reshape(b, n, d) @ W_o

    return impl


def k_unprojected(ref: Impl) -> Impl:
    return lambda Q, K, V, W_q, W_k, W_v, W_o, h: ref(
        Q, K, V, W_q, np.eye(len(W_k)) + W_k, W_v, W_o, h
    )


def v_unprojected(ref: Impl) -> Impl:
    return lambda Q, K, V, W_q, W_k, W_v, W_o, h: ref(Q, K, V, W_q, W_k, np.eye(len(W_v)), W_o, h)


def with_residual(ref: Impl) -> Impl:
    return lambda Q, *rest: ref(Q, *rest) + Q


def columns_rotated(ref: Impl) -> Impl:
    # Heads merged into the wrong column blocks (rotated by one head): W_o = I shows it.
    def impl(Q, K, V, W_q, W_k, W_v, W_o, h):
        d = Q.shape[-1]
        rotate = np.eye(d)[np.roll(np.arange(d), d // h)]
        return ref(Q, K, V, W_q, W_k, W_v, rotate @ W_o, h)

    return impl


@pytest.mark.parametrize(
    ("impl", "implicated"),
    [
        (sigmoid_attention, {"softmax-keys"}),
        (k_unprojected, {"project-qkv"}),
        (v_unprojected, {"project-qkv"}),
        (with_residual, {"merge-and-project"}),
        (columns_rotated, {"split-heads"}),
    ],
)
def test_unrecognized_marks_the_requirements_a_property_shows(mha, table, impl, implicated):
    finding = find(mha, table, impl(mha.reference))
    assert list(finding.contract) == ["unrecognized"]
    assert not finding.alternatives and not finding.explained
    assert {req for req, _ in finding.implicated} == implicated
    got = statuses(mha, finding)
    assert {r for r, s in got.items() if s == "failed"} == implicated
    assert {r for r, s in got.items() if s != "failed"} == set(got) - implicated
    assert all(s == "not_checked" for r, s in got.items() if r not in implicated)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("size", [1e-2, 0.3, 3.0])
def test_noise_is_never_taken_for_a_known_fault(mha, table, seed, size):
    rng = np.random.default_rng(seed)
    code = sorted(mha.diagnostics.error_model.faults)[seed % 13]
    flags = mha.diagnostics.error_model.flags(code)[:1]

    def noisy(*args):
        out = mha.reference(*args, faults=frozenset(flags))
        return out + size * np.abs(out).max() * rng.standard_normal(out.shape)

    finding = find(mha, table, noisy)
    assert not finding.alternatives
    assert list(finding.contract) == ["unrecognized"]
    assert "passed" not in statuses(mha, finding).values()


@pytest.mark.parametrize("factor", [2.0, -1.0, 0.5])
def test_a_scaled_answer_is_unrecognized_and_implicates_nothing(mha, table, factor):
    # Every property of the probes holds for c * MHA: nothing can be said per requirement.
    finding = find(mha, table, lambda *a: factor * mha.reference(*a))
    assert list(finding.contract) == ["unrecognized"]
    assert set(statuses(mha, finding).values()) == {"not_checked"}


def test_known_fault_plus_unknown_bug_still_points_at_what_it_can(mha, table):
    def bug(*args):  # wrong axis + sigmoid-like squashing afterwards
        return np.tanh(mha.reference(*args, faults=frozenset({"softmax-wrong-axis"})))

    finding = find(mha, table, bug)
    assert list(finding.contract) == ["unrecognized"]
    assert "softmax-keys" in {req for req, _ in finding.implicated}


# --- contract checks ----------------------------------------------------------------------------


def test_float32_is_low_precision_and_keeps_its_faults(mha: Problem, table):
    def f32(*args):
        args = [a.astype(np.float32) if isinstance(a, np.ndarray) else a for a in args]
        return mha.reference(*args, faults=frozenset({"missing-wo"}))

    finding = find(mha, table, f32)
    assert finding.alternatives == [frozenset({"missing-wo"})]
    assert list(finding.contract) == ["low-precision"]
    assert statuses(mha, finding)["merge-and-project"] == "failed"
    assert statuses(mha, finding)["project-qkv"] == "passed"


def test_crash_only_on_unequal_lengths(mha: Problem, table):
    def equal_only(Q, K, *rest):
        if Q.shape[1] != K.shape[1]:
            raise ValueError("cannot reshape array")
        return mha.reference(Q, K, *rest, faults=frozenset({"no-scale"}))

    finding = find(mha, table, equal_only)
    assert finding.alternatives == [frozenset({"no-scale"})]
    assert list(finding.contract) == ["assumes-equal-lengths"]


def test_every_probe_raising_says_nothing(mha: Problem, table):
    def boom(*args):
        raise RuntimeError("no")

    finding = find(mha, table, boom)
    assert not finding.alternatives and not finding.contract and not finding.implicated
    assert set(statuses(mha, finding).values()) == {"not_checked"}


def test_wrong_shape_everywhere_is_a_shape_mismatch(mha: Problem, table):
    finding = find(mha, table, lambda *a: mha.reference(*a)[:, :, :2])
    assert list(finding.contract) == ["shape-mismatch"]


def test_mutation_is_reported_alongside_the_faults(mha: Problem, table):
    outcomes = run_probes(mha, faulty(mha, "wo-transposed"))
    first = next(iter(outcomes))
    outcomes[first].mutated_inputs = ["K"]
    finding = diagnose(mha, table, outcomes, list(outcomes.values()), True)
    assert finding.alternatives == [frozenset({"wo-transposed"})]
    assert list(finding.contract) == ["input-mutated"]
    assert "K" in finding.contract["input-mutated"]


# --- ambiguity -----------------------------------------------------------------------------------


def test_two_equally_good_explanations_are_both_reported(mha: Problem, table: FaultTable):
    # A table in which "missing-wo" behaves exactly like "no-scale": nothing can tell them apart.
    twin = copy.copy(table)
    i = next(k for k, c in enumerate(table.combos) if c.codes == {"no-scale"})
    twin.combos = [*table.combos, Combo(frozenset({"missing-wo"}), frozenset({"missing-wo"}))]
    twin.sizes = np.append(table.sizes, 1)
    twin.columns = [
        replace(
            c,
            filled=np.vstack([c.filled, c.filled[i]]),
            finite=np.vstack([c.finite, c.finite[i]]),
        )
        for c in table.columns
    ]
    finding = find(mha, twin, faulty(mha, "no-scale"))
    assert sorted(map(sorted, finding.alternatives)) == [["missing-wo"], ["no-scale"]]
    got = statuses(mha, finding)
    assert got["scale-scores"] == got["merge-and-project"] == "not_checked"
    assert got["project-qkv"] == "passed"
    model = mha.diagnostics.error_model  # type: ignore[union-attr]
    diagnoses = explain.diagnoses(mha, model, finding)
    assert {d.code: d.certain for d in diagnoses} == {"no-scale": False, "missing-wo": False}
    assert all("cannot tell" in d.evidence for d in diagnoses)
