"""The unsafe ``process`` backend and the backend factory."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from app.core.config import Settings
from sandbox.backends.bwrap import BwrapSandbox
from sandbox.backends.forkserver import ForkServerSandbox
from sandbox.backends.pool import WarmPoolSandbox
from sandbox.backends.process import ProcessSandbox
from sandbox.factory import UnsafeSandboxRefused, make_sandbox
from tests.sandbox.helpers import IDENTITY, run

pytestmark = pytest.mark.timeout(60)


def test_settings_refuse_the_process_backend_without_opt_in(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="GRADER_ALLOW_UNSAFE_SANDBOX"):
        Settings(sandbox="process", data_dir=tmp_path)


def test_make_sandbox_refuses_it_even_from_unvalidated_settings(tmp_path: Path) -> None:
    settings = Settings.model_construct(sandbox="process", allow_unsafe_sandbox=False)
    with pytest.raises(UnsafeSandboxRefused, match="without isolation"):
        make_sandbox(settings)


def test_process_backend_with_opt_in_warns_and_runs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings(sandbox="process", allow_unsafe_sandbox=True, data_dir=tmp_path)
    with caplog.at_level(logging.WARNING):
        sandbox = make_sandbox(settings)
    assert isinstance(sandbox, ProcessSandbox)
    assert any("WITHOUT isolation" in r.getMessage() for r in caplog.records)
    a = np.arange(4.0)
    result = run(sandbox, IDENTITY, cases=[{"a": a, "n": 5}])
    assert result.status == "ok" and result.backend == "process"
    assert result.cases[0].output is not None
    np.testing.assert_array_equal(result.cases[0].output, a * 5)


def test_process_backend_still_enforces_time(tmp_path: Path) -> None:
    result = run(ProcessSandbox(), "import time\ndef f(a, n):\n    time.sleep(60)\n")
    assert result.status == "time_limit_exceeded"


def test_bwrap_is_the_default(tmp_path: Path) -> None:
    forked = make_sandbox(Settings(data_dir=tmp_path))
    assert isinstance(forked, ForkServerSandbox)  # bwrap, each run forked from a zygote
    try:
        assert isinstance(forked.inner, BwrapSandbox) and forked.name == "bwrap"
    finally:
        forked.close()
    sandbox = make_sandbox(Settings(data_dir=tmp_path, sandbox_forkserver=False))
    assert isinstance(sandbox, WarmPoolSandbox)  # bwrap, served from a warm pool
    try:
        assert isinstance(sandbox.inner, BwrapSandbox)
        assert sandbox.name == "bwrap" and sandbox.size == 2
    finally:
        sandbox.close()
    cold = make_sandbox(Settings(data_dir=tmp_path, sandbox_forkserver=False, sandbox_warm_pool=0))
    assert isinstance(cold, BwrapSandbox)


@pytest.mark.parametrize("preload", [True, False])
def test_the_warm_pool_preloads_torch_as_the_setting_says(tmp_path: Path, preload: bool) -> None:
    settings = Settings(data_dir=tmp_path, sandbox_forkserver=False, sandbox_preload_torch=preload)
    pool = make_sandbox(settings)
    assert isinstance(pool, WarmPoolSandbox)
    try:
        # Where torch is in the runtime, and the setting allows it.
        assert pool.preload_torch == (preload and pool.inner.runtime.has_torch)
    finally:
        pool.close()
