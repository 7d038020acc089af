"""The runner's warm-up (``runner.warm_up``), which a fork server's spare runs while it waits for
its go-ahead: it must leave nothing behind but touched memory (no descriptor, no byte written),
so a spare that ran it is the same as one that did not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SITE = str(Path(np.__file__).resolve().parents[1])

PROBE = """
import json, os, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
from sandbox.inside import runner
runner.preload()
before = sorted(os.listdir("/proc/self/fd"))
runner.warm_up()
after = sorted(os.listdir("/proc/self/fd"))
print(json.dumps({"before": before, "after": after}))
"""


def test_the_warm_up_leaves_no_descriptor_and_writes_nothing() -> None:
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", PROBE, str(ROOT), SITE],
        capture_output=True,
        timeout=60,
        check=True,
    )
    fds = json.loads(done.stdout.decode().splitlines()[-1])
    assert fds["before"] == fds["after"]
    assert done.stdout.decode().count("\n") == 1  # only the probe's own line
    assert done.stderr == b""
