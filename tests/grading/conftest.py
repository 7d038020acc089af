from __future__ import annotations

import pytest

from app.core.config import Settings
from app.grading.faulttable import FaultTable, fault_table
from app.problems.loader import Problem
from sandbox.factory import make_sandbox
from sandbox.protocol import Sandbox


@pytest.fixture(scope="session")
def bwrap() -> Sandbox:
    """The real bubblewrap sandbox: the grading tests run submissions exactly as production does."""
    return make_sandbox(Settings(sandbox="bwrap"))


@pytest.fixture(scope="session")
def table(mha: Problem) -> FaultTable:
    return fault_table(mha)
