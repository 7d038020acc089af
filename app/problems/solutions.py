"""Solutions built from a problem folder alone, for the tools that grade a problem end to end
(``problems check``, ``make bench``, the compose stack check): the reference itself, and the
reference with one fault flag on, which is exactly a student making that one mistake.

Standard library only: the stack check imports this with any ``python3``."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path


def single_fault_source(reference_source: str, function_name: str, flag: str) -> str:
    """``reference.py`` made into a submission that always makes the mistake ``flag``."""
    return (
        f"{reference_source}\n\n_reference_{function_name} = {function_name}\n\n\n"
        f"def {function_name}(*args):\n"
        f"    return _reference_{function_name}(*args, faults=frozenset({{{flag!r}}}))\n"
    )


def planned_faults_source(
    reference_source: str, function_name: str, plans: list[list[str]], calls_per_plan: int
) -> str:
    """A reference (``reference.py``, or a framework's ``solution_<framework>.py``, which takes
    the same flags) made into a submission that makes the mistakes ``plans[0]`` on its first
    ``calls_per_plan`` calls, then ``plans[1]``, and so on: many models in one sandbox run."""
    return (
        f"{reference_source}\n\n_reference_{function_name} = {function_name}\n"
        f"_PLANS = {[frozenset(p) for p in plans]!r}\n_CALLS = [0]\n\n\n"
        f"def {function_name}(*args):\n"
        f"    plan = _PLANS[_CALLS[0] // {calls_per_plan}]\n"
        f"    _CALLS[0] += 1\n"
        f"    return _reference_{function_name}(*args, faults=plan)\n"
    )


@dataclass(frozen=True)
class Solutions:
    correct: str
    wrong: str
    wrong_code: str  # the fault code the grader must name for ``wrong``


def solutions(folder: Path, fault: str | None = None) -> Solutions:
    """The reference and a single-fault model of ``fault`` (default: the first fault of
    ``faults.toml``)."""
    spec = tomllib.loads((folder / "problem.toml").read_text(encoding="utf-8"))
    faults = tomllib.loads((folder / "faults.toml").read_text(encoding="utf-8"))["faults"]
    code = fault or next(iter(faults))
    flag = (faults[code].get("variants") or [code])[0]
    reference = (folder / "reference.py").read_text(encoding="utf-8")
    return Solutions(
        correct=reference,
        wrong=single_fault_source(reference, spec["function_name"], flag),
        wrong_code=code,
    )
