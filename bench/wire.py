"""Host and in-sandbox costs of the runner's wire format on the full grading job (examples, hidden
cases and probes of multi-head-attention), without a sandbox:

    .venv/bin/python bench/wire.py [repeats]

Prints median milliseconds of: encode_job, the supervisor's job read + setup (runner run natively
in a subprocess, as the sandbox would), and interpret (parse + validate the result stream).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.grading.pipeline import build_request  # noqa: E402
from app.problems.loader import load_problems  # noqa: E402
from sandbox import wire  # noqa: E402
from sandbox.backends.common import RawRun, interpret  # noqa: E402

SETUP = """
import sys, time, os
sys.path[:0] = [{sandbox!r}, {site!r}]
from inside import job, runner, supervisor
runner.preload()
t0 = time.perf_counter()
reader = job.JobReader(sys.stdin.buffer)
sup = supervisor.Supervisor(reader.json(), reader)
sys.stderr.write("%f\\n" % (time.perf_counter() - t0))
sup.run()
os._exit(0)
"""


def median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.2f} ms"


def main(repeats: int) -> None:
    problem = load_problems(ROOT / "problems")["multi-head-attention"]
    code = (ROOT / "tests/grading/corpus/correct_reshape.py").read_text()
    request = build_request(problem, code, problem.examples + problem.hidden)
    encode = []
    for _ in range(repeats):
        t = time.perf_counter()
        job = wire.encode_job(request)
        encode.append(time.perf_counter() - t)
    setup, parse = [], []
    import numpy as np

    site = str(Path(np.__file__).resolve().parents[1])
    script = SETUP.format(sandbox=str(ROOT / "sandbox"), site=site)
    for _ in range(min(repeats, 20)):
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-c", script], input=job, capture_output=True, check=True
        )
        setup.append(float(done.stderr.decode().split()[0]))
    for _ in range(repeats):
        t = time.perf_counter()
        result = interpret(RawRun(stdout=done.stdout), request, "bench")
        parse.append(time.perf_counter() - t)
    assert result.status == "ok", result.message
    cases = len(request.cases)
    print(f"job: {cases} cases, {len(job)} bytes")
    print(f"encode_job        {median_ms(encode)}")
    print(f"supervisor setup  {median_ms(setup)}  (read early section, lay inputs, parse specs)")
    print(f"interpret         {median_ms(parse)}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
