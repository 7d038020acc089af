"""``python -m app tokens ...`` and ``python -m app cases ...`` as real processes."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from tests.instructors.conftest import CASES, PROBLEM, as_json, bearer, case_inputs, make_settings
from tests.support.services import app_command

pytestmark = pytest.mark.timeout(300)


def test_tokens_create_list_revoke(tmp_path: Path):
    data = tmp_path / "data"
    created = app_command(data, "tokens", "create", "--role", "instructor", "--name", "ada")
    assert created.returncode == 0, created.stderr
    token = re.findall(r"^tj_[A-Za-z0-9_\-]{40,}$", created.stdout, re.MULTILINE)
    assert len(token) == 1, created.stdout
    admin = app_command(data, "tokens", "create", "--role", "admin", "--name", "root")
    assert admin.returncode == 0
    duplicate = app_command(data, "tokens", "create", "--role", "admin", "--name", "ada")
    assert duplicate.returncode == 1 and "already exists" in duplicate.stderr
    bad_role = app_command(data, "tokens", "create", "--role", "student", "--name", "x")
    assert bad_role.returncode == 2

    listing = app_command(data, "tokens", "list")
    assert listing.returncode == 0
    assert re.search(r"1\s+instructor\s+active\s+.*ada", listing.stdout)
    assert re.search(r"2\s+admin\s+active\s+.*root", listing.stdout)
    assert token[0] not in listing.stdout, "secrets are printed once, at creation"

    stats = f"/api/problems/{PROBLEM}/stats"
    with TestClient(create_app(make_settings(data))) as api:
        assert api.get(stats, headers=bearer(token[0])).status_code == 200
        revoked = app_command(data, "tokens", "revoke", "ada")
        assert revoked.returncode == 0, revoked.stderr
        assert api.get(stats, headers=bearer(token[0])).status_code == 403
    assert re.search(r"1\s+instructor\s+revoked", app_command(data, "tokens", "list").stdout)
    again = app_command(data, "tokens", "revoke", "1")
    assert again.returncode == 1 and "no active token" in again.stderr


def test_cases_add_list_remove(tmp_path: Path, mha):
    data = tmp_path / "data"
    body = tmp_path / "case.json"
    body.write_text(json.dumps({"name": "from-json", "inputs": as_json(case_inputs(1))}))
    added = app_command(data, "cases", "add", PROBLEM, str(body))
    assert added.returncode == 0, added.stderr
    assert "Test-set version of multi-head-attention: 2" in added.stdout

    inputs = case_inputs(2, num_heads=1)
    buffer = io.BytesIO()
    np.savez(buffer, **inputs, expected=mha.solve(inputs))
    npz = tmp_path / "case.npz"
    npz.write_bytes(buffer.getvalue())
    added = app_command(
        data,
        "cases",
        "add",
        PROBLEM,
        str(npz),
        "--name",
        "from-npz",
        "--visibility",
        "public",
        "--weight",
        "2",
    )
    assert added.returncode == 0, added.stderr
    assert "version of multi-head-attention: 3" in added.stdout
    assert "warning: single-head:" in added.stdout

    bare = tmp_path / "bare.json"  # just the inputs: the name comes from --name
    bare.write_text(json.dumps(as_json(case_inputs(3, d_model=6, num_heads=4))))
    refused = app_command(data, "cases", "add", PROBLEM, str(bare), "--name", "bad")
    assert refused.returncode == 1
    assert "error: inputs.num_heads:" in refused.stderr and "divisible" in refused.stderr
    nameless = app_command(data, "cases", "add", PROBLEM, str(bare))
    assert nameless.returncode == 1 and "error: name:" in nameless.stderr

    listing = app_command(data, "cases", "list", PROBLEM)
    assert listing.returncode == 0, listing.stderr
    assert "test-set version 3" in listing.stdout
    assert re.search(r"1\s+stored\s+hidden\s+1\s+from-json", listing.stdout)
    assert re.search(r"2\s+stored\s+public\s+2\s+from-npz .*warnings: single-head", listing.stdout)
    assert re.search(r"-\s+builtin\s+hidden\s+1\s+self-2-heads", listing.stdout)

    removed = app_command(data, "cases", "remove", PROBLEM, "from-json")
    assert removed.returncode == 0 and "version of multi-head-attention: 4" in removed.stdout
    missing = app_command(data, "cases", "remove", PROBLEM, "from-json")
    assert missing.returncode == 1 and "no stored case" in missing.stderr

    # The API sees what the CLI did: the same service and database.
    token = app_command(
        data, "tokens", "create", "--role", "instructor", "--name", "t"
    ).stdout.split()[-1]
    with TestClient(create_app(make_settings(data))) as api:
        listed = api.get(CASES, headers=bearer(token)).json()
    assert listed["test_set_version"] == 4
    stored = [c for c in listed["cases"] if c["source"] == "stored"]
    assert [(c["name"], c["visibility"], c["weight"]) for c in stored] == [
        ("from-npz", "public", 2.0)
    ]
    assert stored[0]["created_by"].startswith("cli")


def test_cases_on_an_unknown_problem(tmp_path: Path):
    result = app_command(tmp_path / "data", "cases", "list", "no-such-problem")
    assert result.returncode != 0 and "no problem 'no-such-problem'" in result.stderr


@pytest.mark.slow
def test_cases_of_a_course(tmp_path: Path):
    """``--course``: the course's own cases, apart from the catalog's; the course API sees them."""
    from app.courses.models import Course

    data = tmp_path / "data"
    body = tmp_path / "case.json"
    body.write_text(json.dumps({"name": "course-own", "inputs": as_json(case_inputs(4))}))
    with (
        TestClient(create_app(make_settings(data))) as api,
        api.app.state.sessions() as session,  # type: ignore[attr-defined]
    ):
        course = Course(title="CLI course")
        session.add(course)
        session.commit()
        course_id = course.id
    missing = app_command(data, "cases", "add", PROBLEM, str(body), "--course", "999")
    assert missing.returncode != 0 and "no course 999" in missing.stderr
    added = app_command(data, "cases", "add", PROBLEM, str(body), "--course", str(course_id))
    assert added.returncode == 0, added.stderr
    assert f"to course {course_id}" in added.stdout

    own = app_command(data, "cases", "list", PROBLEM, "--course", str(course_id)).stdout
    assert re.search(r"1\s+stored\s+hidden\s+1\s+course-own", own) and "builtin" not in own
    catalog = app_command(data, "cases", "list", PROBLEM).stdout
    assert "course-own" not in catalog and "builtin" in catalog
    assert app_command(data, "cases", "remove", PROBLEM, "course-own").returncode == 1

    token = app_command(data, "tokens", "create", "--role", "admin", "--name", "t").stdout.split()
    with TestClient(create_app(make_settings(data))) as api:
        url = f"/api/courses/{course_id}/problems/{PROBLEM}/test-cases"
        listed = api.get(url, headers=bearer(token[-1])).json()
    assert [c["name"] for c in listed["cases"]] == ["course-own"]
    scope = ("--course", str(course_id))
    removed = app_command(data, "cases", "remove", PROBLEM, "course-own", *scope)
    assert removed.returncode == 0 and "Removed case 1" in removed.stdout
