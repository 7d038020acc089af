"""Our similarity ranking (app/similarity/analysis.py) against Dolos, the education field's
reference (the npm package @dodona/dolos-lib, the library under the `dolos` CLI), on the same
classes. Not part of the suite: Dolos needs node and a native tree-sitter build.

    npm install --prefix /tmp/dolos @dodona/dolos-lib@3.5.1   # once, outside the repository
    .venv/bin/python bench/dolos_compare.py --dolos /tmp/dolos [--students 300]

Two classes of multi_head_attention code:

- "independent": six correct solutions written independently and two planted copies of one
  of them (variables renamed, statements reordered, comments changed): tests/similarity's
  class. The false-positive rate is on its 15 independent pairs.
- "synthetic": bench/similarity.py's class of ``--students``: each student's version of one of
  the six (their own statements and idioms), and two planted copies of student 150's code.

For each tool: where the pairs of the planted trio rank, the independent pairs it ranks among
or above them, its own cut (ours lists a pair from 30 % shared and returns only those; Dolos
has no cut and scores every pair), the highest independent pair, and the wall time. Dolos runs
twice: as its CLI does by default, and ignoring fingerprints in more than 10 % of the files
(its ``maxFingerprintPercentage``), the rule ours applies.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from itertools import combinations
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.core.config import REPO_ROOT
from app.similarity.analysis import Entry, rank
from tests.similarity.solutions import (
    COPY_RENAMED,
    COPY_REORDERED,
    INDEPENDENT,
    own_version,
    planted_copy,
)

STARTER = (REPO_ROOT / "problems" / "multi-head-attention" / "starter.py").read_text()

# Dolos as its CLI runs it (python, its default k-gram and window; with a share, fingerprints in
# more than that share of the files ignored, as ours does), every pair with its similarity, as
# JSON on stdout.
DOLOS_SCRIPT = """
import { Dolos } from "@dodona/dolos-lib";
const [dir, share, ...files] = process.argv.slice(2);
const options = { language: "python" };
if (share !== "none") options.maxFingerprintPercentage = Number(share);
const dolos = new Dolos(options);
const report = await dolos.analyzePaths(files.map((f) => `${dir}/${f}`));
const out = report.allPairs().map((p) => ({
  a: p.leftFile.path.split("/").pop().replace(/\\.py$/, ""),
  b: p.rightFile.path.split("/").pop().replace(/\\.py$/, ""),
  similarity: p.similarity,
}));
process.stdout.write(JSON.stringify(out));
"""


def independent_class() -> dict[str, str]:
    return dict(INDEPENDENT) | {"copy_renamed": COPY_RENAMED, "copy_reordered": COPY_REORDERED}


def synthetic_class(students: int) -> dict[str, str]:
    rng = random.Random(39)
    bases = list(INDEPENDENT.values())
    codes = {f"s{n:03d}": own_version(bases[n % len(bases)], rng) for n in range(students)}
    codes["s005"] = planted_copy(codes["s150"], rng)
    codes["s077"] = planted_copy(codes["s150"], rng)
    return codes


def ours(codes: dict[str, str]) -> tuple[list[tuple[frozenset[str], float]], float]:
    entries = [Entry(i + 1, name, name, code) for i, (name, code) in enumerate(codes.items())]
    start = time.perf_counter()
    pairs = rank(entries, STARTER, max_pairs=len(codes) ** 2)
    wall = time.perf_counter() - start
    return [(frozenset({p.a, p.b}), p.code_share) for p in pairs], wall


def dolos(
    prefix: Path, codes: dict[str, str], share: float | None = None
) -> tuple[list[tuple[frozenset[str], float]], float]:
    with tempfile.TemporaryDirectory() as tmp:
        for name, code in codes.items():
            (Path(tmp) / f"{name}.py").write_text(code, encoding="utf-8")
        script = prefix / "compare.mjs"
        script.write_text(DOLOS_SCRIPT, encoding="utf-8")
        start = time.perf_counter()
        done = subprocess.run(
            ["node", str(script), tmp, "none" if share is None else str(share)]
            + [f"{n}.py" for n in codes],
            cwd=prefix,
            check=True,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - start
    found = json.loads(done.stdout)
    ranked = sorted(found, key=lambda p: -p["similarity"])
    return [(frozenset({p["a"], p["b"]}), p["similarity"]) for p in ranked], wall


def summary(
    tool: str,
    pairs: list[tuple[frozenset[str], float]],
    wall: float,
    trio: set[str],
    independent: set[frozenset[str]],
    cut: float | None,
) -> str:
    planted = {frozenset(p) for p in combinations(sorted(trio), 2)}
    ranks = [n + 1 for n, (pair, _) in enumerate(pairs) if pair in planted]
    shares = [s for pair, s in pairs if pair in planted]
    lowest = min(shares) if shares else 0.0
    above = sum(1 for pair, s in pairs if pair in independent and s >= lowest)
    listed = sum(1 for pair, s in pairs if pair in independent and (cut is None or s >= cut))
    top_independent = max((s for pair, s in pairs if pair in independent), default=0.0)
    cut_text = f"listed (>= {cut:.0%})" if cut is not None else "with any similarity"
    # Ours returns only the pairs it lists: "highest" is then the highest listed.
    return (
        f"  {tool}: planted pairs ranked {ranks} ({', '.join(f'{s:.2f}' for s in shares)}); "
        f"independent pairs at or above the lowest planted: {above} of {len(independent)}; "
        f"{cut_text}: {listed}; highest independent {top_independent:.2f}; {wall:.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dolos", type=Path, required=True, help="where @dodona/dolos-lib is")
    parser.add_argument("--students", type=int, default=300)
    args = parser.parse_args()
    from app.similarity.analysis import REPORT_SHARE

    small = independent_class()
    trio = {"reshape", "copy_renamed", "copy_reordered"}
    independent = {frozenset(p) for p in combinations(sorted(INDEPENDENT), 2) if not set(p) <= trio}
    print(f"independent: 6 correct solutions and 2 planted copies ({len(independent)} pairs)")
    print(summary("ours", *ours(small), trio, independent, REPORT_SHARE))
    print(summary("Dolos", *dolos(args.dolos, small), trio, independent, None))
    print(summary("Dolos, >10 % ignored", *dolos(args.dolos, small, 0.1), trio, independent, None))

    big = synthetic_class(args.students)
    trio = {"s150", "s005", "s077"}
    # Students on different bases wrote independently; those on the same base did not.
    bases = {name: int(name[1:]) % len(INDEPENDENT) for name in big}
    different = {
        frozenset((a, b))
        for a, b in combinations(sorted(big), 2)
        if bases[a] != bases[b] and not {a, b} & trio
    }
    print(f"synthetic: {args.students} students ({len(different)} pairs on different solutions)")
    print(summary("ours", *ours(big), trio, different, REPORT_SHARE))
    print(summary("Dolos", *dolos(args.dolos, big), trio, different, None))
    print(summary("Dolos, >10 % ignored", *dolos(args.dolos, big, 0.1), trio, different, None))


if __name__ == "__main__":
    main()
