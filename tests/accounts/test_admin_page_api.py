"""What the admin page reads: accounts found by a search, and the configuration in force with
every secret redacted (a setting holding a credential shows only that it is set; a URL's
password is masked), to administrators only."""

from __future__ import annotations

import json

from pydantic import SecretStr

from tests.accounts.conftest import MakeClient
from tests.support.people import seed_people

SECRETS = {
    "smtp_password": "smtp-pass-4417",
    "oidc_client_secret": "oidc-secret-5521",
    "metrics_token": SecretStr("metrics-token-6630"),
    "case_seed_secret": SecretStr("case-seed-7749"),
    "redis_url": "redis://:redis-pass-8858@127.0.0.1:6379/0",
}
PLAIN = ("smtp-pass-4417", "oidc-secret-5521", "metrics-token-6630", "case-seed-7749",
         "redis-pass-8858")  # fmt: skip


def test_admins_search_people_by_name_or_email(make_client: MakeClient):
    api = make_client()
    people = seed_people(api.app.state.sessions)  # type: ignore[attr-defined]
    admin = people.headers("admin")
    found = api.get("/api/admin/users", params={"q": "STUDENT"}, headers=admin).json()
    emails = sorted(u["email"] for u in found["items"])
    assert emails == ["other_student@example.edu", "student@example.edu", "student_b@example.edu"]
    assert found["total"] == 3
    # "_" is a character to find, not LIKE's wildcard: "t_s" matches no one here.
    assert api.get("/api/admin/users?q=t_s", headers=admin).json()["total"] == 0
    by_name = api.get("/api/admin/users?q=other instructor", headers=admin).json()
    assert [u["email"] for u in by_name["items"]] == ["other_instructor@example.edu"]
    for who in ("instructor", "student"):
        got = api.get("/api/admin/users?q=student", headers=people.headers(who))
        assert got.status_code == 403


def test_the_configuration_in_force_redacts_every_secret(make_client: MakeClient):
    api = make_client(**SECRETS)
    people = seed_people(api.app.state.sessions)  # type: ignore[attr-defined]
    got = api.get("/api/admin/config", headers=people.headers("admin"))
    assert got.status_code == 200, got.text
    for secret in PLAIN:
        assert secret not in got.text, secret
    rows = {row["name"]: row for row in got.json()}
    for name in ("GRADER_SMTP_PASSWORD", "GRADER_OIDC_CLIENT_SECRET", "GRADER_METRICS_TOKEN",
                 "GRADER_CASE_SEED_SECRET"):  # fmt: skip
        assert rows[name]["value"] == "(set, hidden)" and rows[name]["redacted"], name
    assert rows["GRADER_REDIS_URL"]["value"] == "redis://:***@127.0.0.1:6379/0"
    assert rows["GRADER_SMTP_PORT"] == {
        "name": "GRADER_SMTP_PORT", "value": "25", "default": True, "redacted": False
    }  # fmt: skip
    assert rows["GRADER_SMTP_USER"]["value"] is None
    assert len(rows) == len(json.loads(got.text))  # one row per setting
    for who in ("anonymous", "instructor", "ta", "student"):
        refused = api.get("/api/admin/config", headers=people.headers(who))
        assert refused.status_code == (401 if who == "anonymous" else 403), who
