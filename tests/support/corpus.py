"""The corpus rule shared by every problem's corpus: a submission's ``# expect: a, b`` header
(``# expect: accepted`` for none) names exactly the codes grading must give it."""

from __future__ import annotations

import re
from pathlib import Path

from app.grading.schemas import GradeReport
from app.grading.verdicts import Verdict
from app.problems.loader import Problem

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
