"""The idiom matrix, per problem: every single fault and every pair the search covers, written in
each way the problem's idioms allow, run as a submission in the real bwrap sandbox (one run per
way of writing) and diagnosed exactly."""

from __future__ import annotations

import pytest

from app.grading.matrix import Entry, coverage, host_matrix, run_in_sandbox
from app.problems.loader import Problem
from sandbox.protocol import Sandbox
from tests.grading.conftest import bwrap  # noqa: F401  (the real sandbox fixture)

# The writings each problem must declare, so the matrix covers the idioms the issue names.
IDIOMS = {
    "causal-attention": {"fill-finite", "fill-added"},
    "masked-attention": {"fill-finite", "fill-added"},
    "multi-head-attention": {"causal-fill-inf"},
    "grouped-query-attention": {"share-by-repeat", "share-by-broadcast"},
    "softmax-backward": set(),
}

# Models the search must name exactly, by problem: (flags, codes).
NAMED = {
    "causal-attention": [
        # -1e9 on a strict triangle: the first query of a square input has no key left.
        ({"diagonal-blocked", "fill-finite"}, {"diagonal-blocked"}),
        ({"future-and-present"}, {"future-and-present"}),
        ({"future-and-present", "fill-added"}, {"future-and-present"}),
        ({"future-only", "fill-added"}, {"future-only"}),
        # Two independent axes: which keys are visible x how they are hidden.
        (
            {"upper-left-alignment", "mask-after-softmax"},
            {"upper-left-alignment", "mask-after-softmax"},
        ),
        (
            {"future-and-present", "future-scores-zeroed"},
            {"future-and-present", "future-scores-zeroed"},
        ),
    ],
    "masked-attention": [
        # No scaling, an additive -1e9 and no empty-row check.
        ({"no-scale", "accepts-empty-row", "fill-added"}, {"no-scale", "accepts-empty-row"}),
        ({"accepts-empty-row", "fill-finite"}, {"accepts-empty-row"}),
        ({"mask-inverted", "mask-after-softmax"}, {"mask-inverted", "mask-after-softmax"}),
    ],
    "multi-head-attention": [
        ({"fixed-heads=4"}, {"fixed-heads"}),
        ({"fixed-heads=8"}, {"fixed-heads"}),
        ({"fixed-heads=2", "missing-wo"}, {"fixed-heads", "missing-wo"}),
        (
            {"causal-mask-applied", "softmax-wrong-axis", "causal-fill-inf"},
            {"causal-mask-applied", "softmax-wrong-axis"},
        ),
    ],
    "grouped-query-attention": [
        ({"kv-heads-interleaved", "share-by-repeat"}, {"kv-heads-interleaved"}),
    ],
    "softmax-backward": [({"unweighted-sum", "ignores-axis"}, {"unweighted-sum", "ignores-axis"})],
}


PROBLEM_IDS = sorted(IDIOMS)


@pytest.fixture(scope="module")
def matrices(problems: dict[str, Problem]) -> dict[str, list[Entry]]:
    return {pid: host_matrix(problems[pid]) for pid in PROBLEM_IDS}


@pytest.mark.parametrize("problem_id", PROBLEM_IDS)
def test_every_single_fault_is_told_apart_in_every_writing(
    problems: dict[str, Problem], matrices: dict[str, list[Entry]], problem_id: str
):
    problem = problems[problem_id]
    model = problem.diagnostics.error_model  # type: ignore[union-attr]
    forms = {form for idiom in model.idioms.values() for form in idiom.forms}
    assert forms == IDIOMS[problem_id]
    entries = matrices[problem_id]
    found = coverage(problem, entries)
    assert found.ways == len(model.writings())
    assert found.singles_told_apart == found.singles
    # Every fault appears alone in every writing (each value of a parameterized one).
    singles = {(e.combo.flags - e.combo.idiom, e.combo.idiom) for e in entries if e.combo.size == 1}
    flags = {flag for code in model.faults for flag in model.flags(code)}
    assert singles == {(frozenset({f}), w) for f in flags for w in model.writings()}
    # A pair the search cannot tell apart is named as fewer or other faults, never as nothing.
    assert all(e.found for e in entries)
    assert found.pairs_told_apart >= 0.9 * found.pairs


@pytest.mark.parametrize("problem_id", PROBLEM_IDS)
def test_the_named_idioms_are_diagnosed_exactly(matrices: dict[str, list[Entry]], problem_id: str):
    by_flags = {e.combo.flags: e for e in matrices[problem_id]}
    for flags, codes in NAMED[problem_id]:
        entry = by_flags[frozenset(flags)]
        assert entry.found == (frozenset(codes),), sorted(flags)


@pytest.mark.parametrize("problem_id", PROBLEM_IDS)
def test_matrix_graded_in_the_sandbox_is_diagnosed_exactly(
    problems: dict[str, Problem],
    matrices: dict[str, list[Entry]],
    bwrap: Sandbox,  # noqa: F811
    problem_id: str,
):
    entries = matrices[problem_id]
    graded = run_in_sandbox(problems[problem_id], bwrap, [e.combo for e in entries])
    wrong = [
        (sorted(e.combo.flags), [sorted(a) for a in got])
        for e, got in zip(entries, graded, strict=True)
        if (got != (e.combo.codes,) if e.told_apart else got != e.found)
    ]
    assert not wrong
