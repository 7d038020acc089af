"""The CI switch on skipped service tests (tests/support/required_services.py), proved on a
small inner pytest run where PostgreSQL and the Docker engine are really unreachable."""

from __future__ import annotations

import pytest

from sandbox.backends.docker import DEFAULT_IMAGE, DockerSandbox, DockerUnavailableError
from tests.sandbox import docker_support
from tests.support import services
from tests.support.required_services import REQUIRE_SERVICES

pytest_plugins = ["pytester"]

INNER_CONFTEST = """
from tests.conftest import postgres, pytest_runtest_makereport
"""

INNER_TESTS = """
import pytest

from tests.sandbox.docker_support import docker_sandbox_or_skip


def test_needs_postgresql(postgres):
    pass


def test_needs_docker():
    docker_sandbox_or_skip()


def test_skips_for_another_reason():
    pytest.skip("this host lets the grader create no cgroup")
"""


def _unreachable_docker() -> DockerSandbox | DockerUnavailableError:
    try:
        return DockerSandbox(image=DEFAULT_IMAGE, base_url="unix:///nonexistent/docker.sock")
    except DockerUnavailableError as exc:
        return exc


@pytest.fixture
def no_services(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """An inner run on which neither PostgreSQL's server binaries nor a Docker engine exist."""
    monkeypatch.setattr(services, "_pg_bin", lambda name: None)
    monkeypatch.setattr(docker_support, "_connect", _unreachable_docker)
    pytester.makeconftest(INNER_CONFTEST)
    pytester.makepyfile(test_inner=INNER_TESTS)
    return pytester


def test_without_the_switch_service_tests_skip(
    no_services: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(REQUIRE_SERVICES, raising=False)
    result = no_services.runpytest_inprocess("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(skipped=3)
    assert result.ret == 0


def test_with_the_switch_a_skipped_service_test_fails_the_run(
    no_services: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(REQUIRE_SERVICES, "1")
    result = no_services.runpytest_inprocess("-p", "no:cacheprovider", "-rs")
    # PostgreSQL's skip is in its fixture's set-up (an error), Docker's in the test (a failure);
    # a skip for any other reason stays a skip.
    result.assert_outcomes(errors=1, failed=1, skipped=1)
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        [
            f"*{REQUIRE_SERVICES}=1 refuses this skip*PostgreSQL tests SKIPPED*",
            f"*{REQUIRE_SERVICES}=1 refuses this skip*DOCKER SANDBOX TESTS SKIPPED*",
        ]
    )
