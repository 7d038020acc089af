"""Where the suite's time goes, from pytest's JUnit XML: the slowest tests and the time per area.

    python .ci/test-times.py var/ci/junit-*.xml [--slowest 30]

An area is a test's folder under tests/ (tests/sandbox, tests/lti, ...). With parallel workers the
areas' times add up to more than the wall clock: they are the time each area kept a worker busy.
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def _area(classname: str) -> str:
    parts = classname.split(".")
    return "/".join(parts[:2]) if parts[0] == "tests" and len(parts) > 2 else parts[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("junit", type=Path, nargs="+")
    parser.add_argument("--slowest", type=int, default=30)
    args = parser.parse_args()

    cases = []
    for path in args.junit:
        for case in ET.parse(path).getroot().iter("testcase"):
            classname = case.get("classname", "")
            seconds = float(case.get("time", "0"))
            cases.append((seconds, f"{classname}::{case.get('name', '')}", _area(classname)))

    per_area: dict[str, list[float]] = defaultdict(list)
    for seconds, _, area in cases:
        per_area[area].append(seconds)

    total = sum(seconds for seconds, _, _ in cases)
    print(f"\n{len(cases)} tests, {total:.0f} s of test time (setup, call and teardown)")
    print(f"\nThe {args.slowest} slowest:")
    for seconds, name, _ in sorted(cases, reverse=True)[: args.slowest]:
        print(f"  {seconds:8.1f} s  {name}")
    print("\nPer area:")
    for area, times in sorted(per_area.items(), key=lambda item: -sum(item[1])):
        print(f"  {sum(times):8.0f} s  {len(times):5d} tests  {area}")


if __name__ == "__main__":
    main()
