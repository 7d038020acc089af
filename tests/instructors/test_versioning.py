"""Test-set versions: every change bumps them, a submission records the one it was graded on,
and any past version's set can be rebuilt exactly. On SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from pathlib import Path

from fastapi.testclient import TestClient

from app.problems.loader import Problem
from app.testcases.current import cases_at, grading_set
from app.testcases.repository import BUILTIN_TEST_SET_VERSION
from app.testcases.service import CaseMeta, CaseService
from app.worker.runtime import open_database
from tests.instructors.conftest import (
    CASES,
    PROBLEM,
    MakeClient,
    add_tokens,
    as_json,
    bearer,
    case_inputs,
    make_settings,
)
from tests.support.api import wait_done
from tests.support.codes import CORRECT


def version_of(api: TestClient, headers: dict[str, str]) -> int:
    version: int = api.get(CASES, headers=headers).json()["test_set_version"]
    return version


def test_every_change_bumps_the_version_and_nothing_else_does(
    make_client: MakeClient, database_url: str | None
):
    api = make_client(database_url)
    headers = bearer(add_tokens(api).admin)
    assert version_of(api, headers) == BUILTIN_TEST_SET_VERSION == 1
    first = api.post(CASES, json={"name": "a", "inputs": as_json(case_inputs(1))}, headers=headers)
    assert first.json()["test_set_version"] == 2 and first.json()["added_in_version"] == 2
    second = api.post(CASES, json={"name": "b", "inputs": as_json(case_inputs(2))}, headers=headers)
    assert second.json()["test_set_version"] == 3
    removed = api.delete(f"{CASES}/{first.json()['id']}", headers=headers)
    assert removed.status_code == 200 and removed.json() == {
        "id": first.json()["id"],
        "name": "a",
        "test_set_version": 4,
    }
    assert version_of(api, headers) == 4
    # Refused changes leave the version alone.
    bad = api.post(CASES, json={"name": "c", "inputs": {"Q": [1.0]}}, headers=headers)
    assert bad.status_code == 422
    assert api.delete(f"{CASES}/{first.json()['id']}", headers=headers).status_code == 404
    assert api.delete(f"{CASES}/999999", headers=headers).status_code == 404
    assert version_of(api, headers) == 4
    names = [c["name"] for c in api.get(CASES, headers=headers).json()["cases"]]
    assert "b" in names and "a" not in names


def test_concurrent_changes_get_distinct_versions(
    make_client: MakeClient, database_url: str | None, mha: Problem
):
    api = make_client(database_url)
    service = CaseService(api.app.state.settings, api.app.state.sessions)  # type: ignore[attr-defined]
    versions: list[int] = []
    errors: list[BaseException] = []

    def add(n: int) -> None:
        try:
            _, version = service.add(mha, CaseMeta(f"c{n}", "hidden", 1.0), case_inputs(n))
            versions.append(version)
        except BaseException as exc:  # collected: a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=add, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert sorted(versions) == list(range(2, 10))


def test_any_past_version_is_rebuilt_exactly(
    make_client: MakeClient, database_url: str | None, mha: Problem
):
    api = make_client(database_url)
    sessions = api.app.state.sessions  # type: ignore[attr-defined]
    service = CaseService(api.app.state.settings, sessions)
    row_a, _ = service.add(mha, CaseMeta("a", "hidden", 1.0), case_inputs(1))  # v2: a
    service.add(mha, CaseMeta("b", "public", 2.0), case_inputs(2))  # v3: a, b
    service.remove(mha, row_a.id)  # v4: b
    service.add(mha, CaseMeta("a", "hidden", 1.0), case_inputs(3))  # v5: b, a (new)
    builtin = [c.name for c in mha.examples + mha.hidden]
    with sessions() as session:
        sets = {v: [c.name for c in cases_at(session, mha, v)] for v in range(1, 6)}
    assert sets == {
        1: builtin,
        2: [*builtin, "a"],
        3: [*builtin, "a", "b"],
        4: [*builtin, "b"],
        5: [*builtin, "b", "a"],
    }
    with sessions() as session:
        v3 = {c.name: c for c in cases_at(session, mha, 3)}
        v5 = {c.name: c for c in cases_at(session, mha, 5)}
    assert (v3["a"].inputs["Q"] != v5["a"].inputs["Q"]).any(), "v3 keeps the removed 'a'"
    assert v3["b"].visibility == "public" and v3["b"].weight == 2.0
    assert v3["b"].expected is not None
    assert (v3["b"].expected == mha.solve(case_inputs(2))).all()
    version, current = grading_set(sessions, mha)
    assert version == 5 and [c.name for c in current] == sets[5]


def test_a_submission_records_the_version_it_was_graded_on(make_client: MakeClient):
    api = make_client()
    headers = bearer(add_tokens(api).admin)
    url = f"/api/problems/{PROBLEM}/submissions"
    before = wait_done(api, api.post(url, json={"code": CORRECT}).json()["id"])
    assert before["test_set_version"] == 1
    assert "extra" not in {t["name"] for t in before["tests"]}

    added = api.post(
        CASES,
        json={"name": "extra", "visibility": "public", "inputs": as_json(case_inputs(5))},
        headers=headers,
    )
    assert added.status_code == 201
    after = wait_done(api, api.post(url, json={"code": CORRECT + "\n# again\n"}).json()["id"])
    assert after["test_set_version"] == 2
    extra = next(t for t in after["tests"] if t["name"] == "extra")
    assert extra["status"] == "passed" and extra["visibility"] == "public"
    assert after["verdict"] == "accepted"

    api.delete(f"{CASES}/{added.json()['id']}", headers=headers)
    last = wait_done(api, api.post(url, json={"code": CORRECT + "\n# third\n"}).json()["id"])
    assert last["test_set_version"] == 3
    assert "extra" not in {t["name"] for t in last["tests"]}


def test_two_databases_in_one_process_keep_their_own_sets(tmp_path: Path, mha: Problem):
    grading_sets = []
    for name in ("a", "b"):
        engine, sessions = open_database(make_settings(tmp_path / name))
        service = CaseService(make_settings(tmp_path / name), sessions)
        service.add(mha, CaseMeta(f"only-in-{name}", "hidden", 1.0), case_inputs(ord(name)))
        version, cases = grading_set(sessions, mha)
        grading_sets.append((version, [c.name for c in cases][-1]))
        engine.dispose()
    assert grading_sets == [(2, "only-in-a"), (2, "only-in-b")]
