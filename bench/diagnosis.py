"""How long grading adds after the sandbox run: comparison plus diagnosis, per submission.

    .venv/bin/python bench/diagnosis.py [--repeat 200] [--sandbox-runs 15] [--sandbox bwrap]

Each submission (from tests/grading/corpus) runs ONCE in the real sandbox to get its raw outputs;
that run is not timed. Then ``grade_run`` (compare every case, diagnose from the probes, word the
report) is timed ``--repeat`` times on those outputs and the median and 95th percentile printed.
The one-off cost of building the fault table (once per process) is printed separately, and so
is what the probes add to the sandbox run itself (the same run with and without them).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.core.config import Settings  # noqa: E402
from app.grading.faulttable import fault_table  # noqa: E402
from app.grading.pipeline import build_request, grade_run  # noqa: E402
from app.problems.loader import load_problems  # noqa: E402
from sandbox.factory import make_sandbox  # noqa: E402

SUBMISSIONS = [
    "correct_reshape",
    "correct_loops",
    "missing_wo",
    "unstable_softmax",
    "triple_transposed_order_noback",
    "low_precision",
    "assumes_equal_lengths",
    "non_finite",
    "unrecognized_sigmoid",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--sandbox-runs", type=int, default=15)
    parser.add_argument("--sandbox", default="bwrap", choices=["bwrap", "docker", "process"])
    args = parser.parse_args()

    problem = load_problems(ROOT / "problems")["multi-head-attention"]
    started = time.perf_counter()
    table = fault_table(problem)  # the cached one grade_run uses
    build = time.perf_counter() - started
    print(
        f"fault table: {len(table.combos)} combinations x {len(table.columns)} probes, "
        f"built in {build * 1000:.1f} ms (once per process)"
    )
    settings = Settings(sandbox=args.sandbox, allow_unsafe_sandbox=args.sandbox == "process")
    sandbox = make_sandbox(settings)
    cases = problem.examples + problem.hidden
    corpus = ROOT / "tests" / "grading" / "corpus"

    print(f"{'submission':32} {'verdict':14} {'codes':44} {'median ms':>9} {'p95 ms':>7}")
    medians = []
    for name in SUBMISSIONS:
        code = (corpus / f"{name}.py").read_text()
        run = sandbox.run(build_request(problem, code, cases))
        seconds = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            report = grade_run(problem, cases, run)
            seconds.append(time.perf_counter() - t)
        seconds.sort()
        median = statistics.median(seconds) * 1000
        p95 = seconds[int(0.95 * (len(seconds) - 1))] * 1000
        medians.append(median)
        codes = ", ".join(d.code for d in report.diagnoses) or "-"
        print(f"{name:32} {report.verdict.value:14} {codes[:44]:44} {median:9.2f} {p95:7.2f}")
    print(f"largest median: {max(medians):.2f} ms (budget: 50 ms per submission)")

    # The probes also run inside the sandbox, in the same run: what do they add to it?
    code = (corpus / "correct_loops.py").read_text()
    with_probes = build_request(problem, code, cases)
    without = with_probes.model_copy(update={"cases": with_probes.cases[: len(cases)]})
    timed: dict[str, list[float]] = {"with": [], "without": []}
    for _ in range(args.sandbox_runs):
        for label, request in (("with", with_probes), ("without", without)):
            t = time.perf_counter()
            sandbox.run(request)
            timed[label].append(time.perf_counter() - t)
    on, off = (statistics.median(timed[k]) * 1000 for k in ("with", "without"))
    print(
        f"sandbox run of correct_loops, median of {args.sandbox_runs}: {off:.0f} ms without the "
        f"{len(with_probes.cases) - len(cases)} probes, {on:.0f} ms with them (+{on - off:.0f} ms)"
    )


if __name__ == "__main__":
    main()
