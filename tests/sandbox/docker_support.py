"""The Docker engine for the sandbox tests: a ready backend, or a loud skip that says why.

The engine and the image are prepared by `.ci/docker-setup.sh`, which `.ci/run` calls before the
test suite; the tests themselves never install or build anything. A skip happens only where no
engine answers or the image was never built. An image whose runner differs from this checkout's
fails instead: testing a stale runner would prove nothing.
"""

from __future__ import annotations

import os
import sys
from functools import lru_cache

import pytest

from sandbox.backends.docker import (
    DEFAULT_IMAGE,
    DockerSandbox,
    DockerUnavailableError,
    StaleImageError,
)
from tests.support.required_services import DOCKER_SKIPPED

SETUP_COMMAND = "bash .ci/docker-setup.sh"


@lru_cache(maxsize=1)
def _connect() -> DockerSandbox | DockerUnavailableError:
    image = os.environ.get("GRADER_DOCKER_IMAGE", DEFAULT_IMAGE)
    try:
        return DockerSandbox(image=image, base_url=os.environ.get("GRADER_DOCKER_URL") or None)
    except DockerUnavailableError as exc:
        return exc


def _shout(message: str) -> None:
    # Straight to the terminal: pytest captures ordinary output of passing and skipped tests.
    banner = "!" * 78
    print(f"\n{banner}\n{message}\n{banner}", file=sys.__stderr__, flush=True)


def docker_sandbox_or_skip() -> DockerSandbox:
    """The shared docker backend of this test session."""
    outcome = _connect()
    if isinstance(outcome, StaleImageError):
        pytest.fail(f"{outcome}", pytrace=False)
    if isinstance(outcome, DockerUnavailableError):
        reason = (
            f"{DOCKER_SKIPPED}: {outcome}. "
            f"To run them: {SETUP_COMMAND} (as root: installs docker.io, starts dockerd, "
            "builds the image)"
        )
        _shout(reason)
        pytest.skip(reason)
    return outcome
