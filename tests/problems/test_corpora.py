"""Every new problem's corpus (tests/problems/corpus/<problem>/): submissions in several styles,
each mistake alone, in pairs and more, graded through the real bwrap sandbox; each must get
exactly the codes of its ``# expect:`` header, by the rule of the multi-head attention corpus
(tests/support/corpus.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.grading.pipeline import grade_submission
from app.problems.loader import Problem
from sandbox.protocol import Sandbox
from tests.grading.conftest import bwrap  # noqa: F401  (the real sandbox fixture)
from tests.support.corpus import assert_exact_codes, expected_codes

ROOT = Path(__file__).parent / "corpus"
PROBLEMS = sorted(d.name for d in ROOT.iterdir() if d.is_dir())
CORPUS = [(p, f) for p in PROBLEMS for f in sorted((ROOT / p).glob("*.py"))]
# Faults with no single-fault corpus entry: `problems check` grades each one alone in the
# sandbox, and the corpus has them in pairs.
NOT_ALONE = {"grouped-query-attention": {"no-scale", "no-transpose-back", "wo-transposed"}}


@pytest.mark.parametrize("problem_id", PROBLEMS)
def test_corpus_has_every_fault_alone_pairs_and_three_correct_styles(
    problems: dict[str, Problem], problem_id: str
):
    model = problems[problem_id].diagnostics.error_model  # type: ignore[union-attr]
    sets = [expected_codes(f) for p, f in CORPUS if p == problem_id]
    assert len(sets) >= 12
    assert sum(1 for s in sets if not s) >= 3
    alone = {s[0] for s in sets if len(s) == 1}
    assert alone >= set(model.faults) - NOT_ALONE.get(problem_id, set())
    assert sum(1 for s in sets if len(s) >= 2) >= 3


@pytest.mark.parametrize(("problem_id", "path"), CORPUS, ids=[f"{p}/{f.stem}" for p, f in CORPUS])
def test_submission_gets_exactly_its_codes(
    problems: dict[str, Problem],
    bwrap: Sandbox,  # noqa: F811
    problem_id: str,
    path: Path,
):
    problem = problems[problem_id]
    assert_exact_codes(problem, path, grade_submission(problem, path.read_text(), bwrap))
