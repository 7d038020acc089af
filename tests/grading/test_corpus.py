"""The corpus: real submissions in many styles, graded through the real bwrap sandbox, each must
get exactly the codes its header declares (``# expect: a, b``; ``# expect: accepted``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.grading.pipeline import grade_submission
from app.grading.schemas import GradeReport
from app.grading.verdicts import Verdict
from app.problems.errormodel import CONTRACT_CODES
from app.problems.loader import Problem
from sandbox.protocol import Sandbox

CORPUS = sorted((Path(__file__).parent / "corpus").glob("*.py"))
# Codes that say the output was not fully explained: other requirements stay not_checked.
PARTIAL = {"unrecognized", "non-finite-output", "shape-mismatch"}


def header(path: Path, key: str) -> list[str] | None:
    match = re.search(rf"^# {key}: (.*)$", path.read_text(), re.MULTILINE)
    if match is None:
        return None
    return sorted(part.strip() for part in match.group(1).split(",") if part.strip())


def expected_codes(path: Path) -> list[str]:
    codes = header(path, "expect")
    assert codes is not None, f"{path.name} has no '# expect:' header"
    return [] if codes == ["accepted"] else codes


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


def assert_exact_codes(problem: Problem, path: Path, report: GradeReport) -> None:
    """The corpus rule, for every problem's corpus: exactly the header's codes, each certain and
    worded; the requirements they break (and ``# implicates:``) failed, the rest passed, or not
    checked when the output was not fully explained."""
    want = expected_codes(path)
    got = sorted(d.code for d in report.diagnoses)
    assert got == want, (report.verdict, report.error, [t.message for t in report.tests][:3])
    statuses = {r.id: r.status for r in report.requirements}
    assert list(statuses) == [r.id for r in problem.spec.requirements]
    if not want:
        assert report.verdict == Verdict.ACCEPTED
        assert report.score == 1.0
        assert set(statuses.values()) == {"passed"}
        return
    assert report.verdict in (Verdict.WRONG_ANSWER, Verdict.RUNTIME_ERROR)
    assert report.score < 1.0
    assert not report.alternatives
    model = problem.diagnostics.error_model  # type: ignore[union-attr]
    broken = {model.faults[c].requirement for c in want if c in model.faults}
    implicated = set(header(path, "implicates") or [])
    failed = {r for r, s in statuses.items() if s == "failed"}
    assert failed == broken | implicated
    if PARTIAL & set(want):
        assert all(s == "not_checked" for r, s in statuses.items() if r not in failed)
    else:
        assert all(s == "passed" for r, s in statuses.items() if r not in failed)
    for diagnosis in report.diagnoses:
        assert diagnosis.title and diagnosis.explanation and diagnosis.hint and diagnosis.evidence
        assert diagnosis.certain
