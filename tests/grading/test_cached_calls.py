"""A run's calls and their encoded sections are reused across runs on the same test set
(``app.grading.calls``, ``sandbox.wire.SECTIONS``); a new test set version or a reloaded problem
must never be sent a section of the old one. Each job is checked against the one encoded with
both caches empty: a cache keyed by problem id, case name or version alone would fail."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from app.grading.calls import CALLS
from app.grading.pipeline import build_request
from app.problems.cases import TestCase as Case
from app.problems.loader import Problem, load_problem
from app.testcases.current import grading_set
from app.testcases.service import CaseMeta, CaseService
from app.worker.runtime import open_database
from sandbox import wire
from tests.instructors.conftest import case_inputs, make_settings

CODE = "def multi_head_attention(*args):\n    return None\n"


def job(problem: Problem, cases: tuple[Case, ...]) -> bytes:
    return wire.encode_job(build_request(problem, CODE, cases))


def fresh_job(problem: Problem, cases: tuple[Case, ...]) -> bytes:
    CALLS.clear()
    wire.SECTIONS.clear()
    return job(problem, cases)


def test_reused_calls_are_encoded_once(mha: Problem):
    cases = mha.examples + mha.hidden
    first = build_request(mha, CODE, cases)
    again = build_request(mha, CODE + "# other code\n", mha.examples + mha.hidden)
    assert all(a is b for a, b in zip(first.cases, again.cases, strict=True))
    names = first.param_names
    _, blob = wire.case_section(first.cases[0], names)
    assert wire.case_section(again.cases[0], names)[1] is blob
    cached = wire.encode_job(again)
    CALLS.clear()
    wire.SECTIONS.clear()
    assert cached == wire.encode_job(build_request(mha, CODE + "# other code\n", cases))


def test_a_new_version_with_a_case_of_the_same_name_gets_its_own_section(
    tmp_path: Path, mha: Problem
):
    settings = make_settings(tmp_path / "data")
    engine, sessions = open_database(settings)
    try:
        service = CaseService(settings, sessions)
        row, _ = service.add(mha, CaseMeta("a", "hidden", 1.0), case_inputs(1))
        version_a, set_a = grading_set(sessions, mha)
        job_a = job(mha, set_a)
        assert job_a == fresh_job(mha, set_a)
        job(mha, set_a)  # cached again

        # The same name, other inputs: a new version.
        service.remove(mha, row.id)
        service.add(mha, CaseMeta("a", "hidden", 1.0), case_inputs(3))
        version_b, set_b = grading_set(sessions, mha)
        assert version_b > version_a
        job_b = job(mha, set_b)
        assert job_b == fresh_job(mha, set_b)
        new_q = np.ascontiguousarray(case_inputs(3)["Q"]).tobytes()
        old_q = np.ascontiguousarray(case_inputs(1)["Q"]).tobytes()
        assert new_q in job_b and old_q not in job_b
    finally:
        engine.dispose()


def test_a_reloaded_problem_gets_its_own_sections(tmp_path: Path, mha: Problem):
    folder = tmp_path / mha.id
    shutil.copytree(mha.directory, folder)
    before = load_problem(folder)
    cases = before.examples + before.hidden
    job_before = job(before, cases)
    # The author changes the public examples' seed (as a changed reference reloads the folder).
    source = (folder / "cases.py").read_text()
    assert "default_rng(7)" in source
    (folder / "cases.py").write_text(source.replace("default_rng(7)", "default_rng(8)"))
    after = load_problem(folder)
    cases_after = after.examples + after.hidden
    job_after = job(after, cases_after)
    assert job_after != job_before
    assert job_after == fresh_job(after, cases_after)


def test_the_calls_held_are_counted_by_their_arrays_bytes(mha: Problem):
    """An entry keeps its cases' arrays alive, so the calls cache is bounded by their bytes
    (``IdentityCache``'s bound, tested in tests/sandbox/test_identity_cache.py)."""
    CALLS.clear()
    request = build_request(mha, CODE, mha.examples + mha.hidden)
    arrays = sum(
        v.nbytes for call in request.cases for v in call.args.values() if hasattr(v, "nbytes")
    )
    assert arrays > 0
    assert CALLS.held_bytes() == arrays
    assert CALLS.max_bytes < 1 << 30
