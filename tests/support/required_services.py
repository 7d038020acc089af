"""CI's refusal of skipped service tests: with ``TJ_REQUIRE_SERVICES=1`` (set by ``.ci/run``), a
test skipped because PostgreSQL or the Docker engine could not be started fails instead.

On a developer's machine those tests skip with a banner, so the rest of the suite still runs;
in CI a skip would let the run pass without ever exercising them.
"""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest

REQUIRE_SERVICES = "TJ_REQUIRE_SERVICES"

# Every skip for a missing service starts with one of these (tests/conftest.py's ``postgres``
# fixture, tests/sandbox/docker_support.py), and no other skip does.
POSTGRES_SKIPPED = "PostgreSQL tests SKIPPED"
DOCKER_SKIPPED = "DOCKER SANDBOX TESTS SKIPPED"


def required() -> bool:
    return os.environ.get(REQUIRE_SERVICES) == "1"


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.skipped and required():
        reason = _skip_reason(report)
        # pytest prefixes the reason ("Skipped: "), so the banner is looked for inside it.
        if any(banner in reason for banner in (POSTGRES_SKIPPED, DOCKER_SKIPPED)):
            report.outcome = "failed"
            report.longrepr = f"{REQUIRE_SERVICES}=1 refuses this skip: {reason}"
    return report
