"""The corpus: real submissions in many styles, graded through the real bwrap sandbox, each must
get exactly the codes its header declares (``# expect: a, b``; ``# expect: accepted``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.grading.pipeline import grade_submission
from app.problems.errormodel import CONTRACT_CODES
from app.problems.loader import Problem
from sandbox.protocol import Sandbox
from tests.support.corpus import assert_exact_codes, expected_codes

CORPUS = sorted((Path(__file__).parent / "corpus").glob("*.py"))


def test_corpus_covers_every_code_alone_and_in_pairs_and_triples(mha: Problem):
    model = mha.diagnostics.error_model  # type: ignore[union-attr]
    sets = [expected_codes(p) for p in CORPUS]
    assert len(CORPUS) >= 30
    assert sum(1 for s in sets if not s) >= 4
    singles = {s[0] for s in sets if len(s) == 1}
    assert singles >= set(model.faults) | set(CONTRACT_CODES)
    assert sum(1 for s in sets if len(s) == 2) >= 4
    assert sum(1 for s in sets if len(s) == 3) >= 2
    # Both ways of merging after the wrong split are in the corpus.
    assert sum(1 for s in sets if s == ["reshape-order"]) >= 2


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_corpus_submission_gets_exactly_its_codes(mha: Problem, bwrap: Sandbox, path: Path):
    assert_exact_codes(mha, path, grade_submission(mha, path.read_text(), bwrap))
