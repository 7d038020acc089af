"""The keeper that holds what every run shares resident (sandbox/backends/residency.py) reaches
every page of it: each file of a tree, the fork server zygote's memory, the docker image's
layers. The channel it closes is attacked in test_page_cache.py; here, that it covers all."""

from __future__ import annotations

import math
import os
import threading
from pathlib import Path

import pytest
from sqlalchemy.orm import sessionmaker

from sandbox.backends import residency
from sandbox.backends.bwrap import BwrapSandbox
from sandbox.backends.forkserver import ForkServerSandbox
from tests.sandbox.docker_support import docker_sandbox_or_skip

PAGE = residency.PAGE


def test_every_page_of_every_regular_file_is_read(tmp_path: Path) -> None:
    sizes = {"a": 1, "b": PAGE, "c": PAGE + 1, "deep/d": 10 * PAGE + 5, "e": 0}
    for name, size in sizes.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(os.urandom(size))
    os.symlink(tmp_path / "deep/d", tmp_path / "link")  # the file is counted once, not twice
    os.mkfifo(tmp_path / "fifo")  # opened without blocking and skipped
    assert residency.touch_files([tmp_path]) == sum(math.ceil(s / PAGE) for s in sizes.values())


def test_a_round_steps_aside_between_slices(tmp_path: Path) -> None:
    """The host's pause is called after every slice of pages, and a round waits in it: here a
    pause that blocks until let go holds the round (no page after it is read meanwhile)."""
    (tmp_path / "big").write_bytes(b"x" * (3 * residency.SLICE_PAGES * PAGE + PAGE))
    paused = threading.Semaphore(0)
    go = threading.Event()
    pauses: list[int] = []

    def pause() -> None:
        pauses.append(1)
        paused.release()
        assert go.wait(30)

    done: list[int] = []
    residency.pause_rounds_with(pause)
    try:
        keeper = residency.ResidencyKeeper("test", files=lambda: [tmp_path], period=0)
        round_ = threading.Thread(target=lambda: done.append(keeper.touch_once()))
        round_.start()
        assert paused.acquire(timeout=30)
        assert (done, keeper.rounds, len(pauses)) == ([], 0, 1)  # held in the first pause
        go.set()
        round_.join(30)
    finally:
        residency.pause_rounds_with(None)
    assert done == [3 * residency.SLICE_PAGES + 1]
    assert len(pauses) == 3


def test_a_grading_process_s_rounds_step_aside_for_acceptance(
    bwrap_sandbox: BwrapSandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where graders run (the API process, embedded), the sandbox they build has its keepers'
    rounds wait for submissions being accepted, as the graders themselves do."""
    from app.core.config import Settings
    from app.submissions.pressure import PRESSURE
    from app.worker.runtime import grading_context

    monkeypatch.setattr("sandbox.factory.make_sandbox", lambda settings: bwrap_sandbox)
    residency.pause_rounds_with(None)
    try:
        context = grading_context(Settings(data_dir=tmp_path), sessionmaker(), {})
        context.make_sandbox(context.settings)
        assert residency.rounds_pause() == PRESSURE.yield_to_acceptance
    finally:
        residency.pause_rounds_with(None)


def test_the_keeper_goes_round_until_stopped(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x" * (3 * PAGE))
    rounds = threading.Semaphore(0)

    def files() -> list[Path]:
        rounds.release()
        return [tmp_path]

    keeper = residency.ResidencyKeeper("test", files=files, period=0.01).start()
    try:
        for _ in range(3):
            assert rounds.acquire(timeout=10)
    finally:
        keeper.stop()
    assert keeper.rounds >= 2
    assert residency.ResidencyKeeper("off", files=files, period=0).start()._thread is None


def test_the_bwrap_backend_keeps_its_whole_tree(bwrap_sandbox: BwrapSandbox) -> None:
    tree = bwrap_sandbox.tree()
    assert bwrap_sandbox.residency.period > 0
    pages = bwrap_sandbox.residency.touch_once()
    # Every page of the tree's files (tmpfs sizes count whole pages, so this is a lower bound).
    assert pages * PAGE >= 0.9 * tree.size_bytes, (pages, tree.size_bytes)


def test_the_fork_server_keeps_its_zygote_s_memory(own_fork_server: ForkServerSandbox) -> None:
    [pid] = own_fork_server._zygote_process()
    with open(f"/proc/{pid}/cmdline", "rb") as fh:
        assert b"zygote" in fh.read().split(b"\0")
    # numpy imported: tens of MiB of the zygote's memory, all of it readable by the keeper.
    assert own_fork_server.residency.touch_once() * PAGE > 20 << 20


def test_the_docker_backend_keeps_its_image_s_layers() -> None:
    docker = docker_sandbox_or_skip()
    layers = docker.layer_dirs()
    assert layers and all(d.is_dir() for d in layers)
    # The image's Python is in one of them, and all its pages are read.
    assert any(list(d.glob("usr/lib/python3*")) for d in layers), layers
    assert docker.residency.touch_once() > 1000
