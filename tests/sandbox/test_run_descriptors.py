"""The job and the result stream are out of the submission's reach: no other process of its run
lets it open their descriptors through ``/proc/PID/fd``. A process that did (bwrap's own pid-1
reaper, dumpable and holding the run's stdin and stdout) would let a submission running as the
pipes' owner (a grader that is not root) read every case before the supervisor does and write
the whole result stream itself."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from sandbox.backends.bwrap import BwrapSandbox
from sandbox.protocol import Sandbox
from tests.sandbox.helpers import FAST, phased_request, run

pytestmark = pytest.mark.timeout(120)

LIST_OTHERS_FDS = r"""
import json, os

reachable = {}
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != os.getpid():
        try:
            reachable[pid] = sorted(os.listdir(f"/proc/{pid}/fd"))
        except OSError:
            pass
print(json.dumps(reachable))

def f(a, n):
    return a * n
"""


def test_no_other_process_of_the_run_exposes_its_descriptors(sandbox: Sandbox) -> None:
    result = run(sandbox, LIST_OTHERS_FDS)
    assert result.status == "ok", result.message
    assert json.loads(result.stdout) == {}


# Stashes each hidden case's input, then writes a complete result stream of its own (every case
# "passed" with no output, an end frame whose import-time output is the stash) straight into the
# run's result stream, and exits.
FORGE_THROUGH_PID_1 = r"""
import json, os, struct

def frame(obj):
    payload = json.dumps(obj).encode()
    return struct.pack(">cQ", b"J", len(payload)) + payload

def f(a, n):
    if n >= 2:
        with open("/tmp/stash", "a") as stash:
            stash.write(repr(a.tolist()))
    if n == 3:
        try:
            fd = os.open("/proc/1/fd/1", os.O_WRONLY)
        except OSError:
            return a * n
        data = b"".join(
            frame({"type": "case", "index": i, "error": None, "mutated_inputs": [],
                   "seconds": 0.0, "output": False})
            for i in range(3)
        )
        data += frame({"type": "end", "completed": True, "worker_exit": 0,
                       "worker_signal": None, "worker_cpu_seconds": 0.1, "output_killed": False,
                       "result_overflow": False, "stdout": "", "stderr": "", "stdout_bytes": 0,
                       "stderr_bytes": 0,
                       "phases": [{"case": None, "stdout": "STOLEN " + open("/tmp/stash").read(),
                                   "stderr": ""}]})
        os.write(fd, data)
        os._exit(0)
    return a * n
"""


def test_a_submission_running_as_the_graders_uid_cannot_forge_the_result_stream() -> None:
    sandbox = BwrapSandbox()
    # As when the grader is not root: the run keeps the grader's uid, which owns the run's pipes.
    sandbox.switch_uid = False
    sandbox.host_uids = None
    hidden = [np.full((2, 3), 1000.0 + i) for i in range(2)]
    cases = [("public", np.arange(6.0).reshape(2, 3), False)]
    cases += [(f"hidden-{i}", a, True) for i, a in enumerate(hidden)]
    result = sandbox.run(phased_request(FORGE_THROUGH_PID_1, cases, FAST))
    assert result.status == "ok", result.message
    assert "STOLEN" not in result.import_stdout + result.stdout
    outputs = [outcome.output for outcome in result.cases]
    assert all(o is not None for o in outputs), "a case has no output: a forged result"
    for n, (output, a) in enumerate(zip(outputs, [cases[0][1], *hidden], strict=True), start=1):
        assert output is not None and np.array_equal(output, a * n)


LIST_OWN_FDS = r"""
import json, os

own = {}
for fd in os.listdir("/proc/self/fd"):
    try:
        own[fd] = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        pass  # the listing's own, closed by now
print(json.dumps(own))

def f(a, n):
    return a * n
"""


def test_a_host_holding_many_descriptors_leaves_none_in_a_run(
    bwrap_sandbox: BwrapSandbox,
) -> None:
    """The zygote's open-file limit (64) bounds only the descriptors it opens itself: what the
    host gave it above that number (its control socket, filters and user namespace get the
    host's lowest free numbers) must still be closed in every run."""
    from sandbox.backends.forkserver import ForkServerSandbox

    # Fill the host's low descriptor numbers, so the zygote's are above its own limit.
    held = [os.open("/dev/null", os.O_RDONLY) for _ in range(200)]
    try:
        server = ForkServerSandbox(bwrap_sandbox)
    finally:
        for fd in held:
            os.close(fd)
    try:
        assert server.wait_ready()
        zygote = server.zygote_pid()
        assert zygote is not None
        held_by_zygote = max(max(_fds(pid), default=0) for pid in _tree(zygote))
        assert held_by_zygote > 64, "the condition was not made: the zygote's fds are all low"
        result = run(server, LIST_OWN_FDS)
        assert result.status == "ok", result.message + result.stderr
        own = json.loads(result.stdout)
        # 0-2, the result and acknowledgement pipes: nothing of the zygote's or the host's.
        assert len(own) <= 5, sorted(own.values())
        assert not any(t.startswith(("socket:", "user:", "/memfd")) for t in own.values()), own
    finally:
        server.close()


def _tree(root: int) -> list[int]:
    """``root`` and its descendants (the bwrap launcher, bwrap's reaper, the zygote)."""
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                todo += [int(c) for c in fh.read().split()]
    return found


def _fds(pid: int) -> list[int]:
    try:
        return [int(fd) for fd in os.listdir(f"/proc/{pid}/fd")]
    except OSError:
        return []
