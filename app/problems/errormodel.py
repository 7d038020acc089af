"""A problem's error model (``faults.toml``) and its probe inputs (``probes.py``).

The error model names the misconceptions the grader can diagnose. Each fault is a flag of the
reference (``reference.py`` lists them in ``FAULTS`` and takes ``faults=frozenset(...)``), so the
grader reproduces a wrong answer by calling the reference with flags, never with a copy of it.
Probes are inputs the submission also runs on, chosen so that every combination of up to three
faults gives a different output; property probes feed checks that point at a requirement when no
combination explains an output.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator

from app.core.errors import first_error
from app.problems.cases import Inputs, Result
from app.problems.spec import ProblemSpec, Slug, StrictModel

# The grader's own checks, which apply to every problem. Their codes are fixed; each problem
# words them for its students.
CONTRACT_CODES = (
    "input-mutated",
    "low-precision",
    "shape-mismatch",
    "non-finite-output",
    "unrecognized",
)


class ErrorModelError(ValueError):
    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class Wording(StrictModel):
    title: str = Field(min_length=1, max_length=120)
    explanation: str = Field(min_length=1, max_length=1000)
    hint: str = Field(min_length=1, max_length=500)


class ContractWording(Wording):
    # Set for a check the problem declares itself (e.g. "assumes-equal-lengths"): the output is
    # explained on the probes that carry this mark and wrong or failing on the others.
    explained_on: Slug | None = None
    # What the other probes must show: "wrong-or-failing" (any mismatch), or "failing" (the
    # function raises on at least one of them, as code written for one rank or without a KV
    # cache does), which keeps a plain wrong answer out of the check.
    elsewhere: Literal["wrong-or-failing", "failing"] = "wrong-or-failing"


class FaultSpec(Wording):
    requirement: Slug
    # Reference flags that all express this one misconception; empty means just the code.
    variants: list[str] = Field(default_factory=list)
    # Faults of one group are alternatives (one scale, one softmax axis): never combined. A
    # fault may sit in several groups (a habit spanning two steps excludes the faults of each).
    group: str | list[str] | None = None

    @property
    def groups(self) -> list[str]:
        if self.group is None:
            return []
        return [self.group] if isinstance(self.group, str) else list(self.group)


class DiagnosisSettings(StrictModel):
    # The most a "low-precision" answer may differ from the correct one, relative to the largest
    # expected value of the probe: a cap on the rounding noise of float32/float16 answers.
    low_precision: float = Field(default=5e-3, gt=0, lt=1)
    max_faults: int = Field(default=3, ge=1, le=4)


class ErrorModel(StrictModel):
    diagnosis: DiagnosisSettings = DiagnosisSettings()
    faults: dict[Slug, FaultSpec] = Field(min_length=1)
    contract: dict[Slug, ContractWording]

    @field_validator("contract")
    @classmethod
    def _contract_codes(cls, contract: dict[str, ContractWording]) -> dict[str, ContractWording]:
        missing = [c for c in CONTRACT_CODES if c not in contract]
        if missing:
            raise ValueError(f"missing {missing}")
        for code, wording in contract.items():
            if code in CONTRACT_CODES and wording.explained_on is not None:
                raise ValueError(f"{code}: the grader's own check takes no explained_on")
            if code not in CONTRACT_CODES and wording.explained_on is None:
                raise ValueError(
                    f"{code}: not one of the grader's checks {list(CONTRACT_CODES)}; a check of "
                    f'the problem\'s own needs explained_on = "<probe mark>"'
                )
        return contract

    @field_validator("faults")
    @classmethod
    def _fault_codes(cls, faults: dict[str, FaultSpec]) -> dict[str, FaultSpec]:
        clash = sorted(set(faults) & set(CONTRACT_CODES))
        if clash:
            raise ValueError(f"{clash} are contract codes")
        seen: dict[str, str] = {}
        for code, fault in faults.items():
            for flag in fault.variants or [code]:
                if flag in seen:
                    raise ValueError(f"{code}: variant {flag!r} also belongs to {seen[flag]}")
                seen[flag] = code
        return faults

    def flags(self, code: str) -> list[str]:
        return list(self.faults[code].variants) or [code]

    def all_flags(self) -> set[str]:
        return {flag for code in self.faults for flag in self.flags(code)}

    def wording(self, code: str) -> Wording:
        return self.faults[code] if code in self.faults else self.contract[code]

    def partial_checks(self) -> list[tuple[str, str, bool]]:
        """(code, probe mark, only where failing elsewhere) of each check the problem declares,
        in file order."""
        return [
            (code, w.explained_on, w.elsewhere == "failing")
            for code, w in self.contract.items()
            if w.explained_on
        ]


def read_error_model(path: Path, spec: ProblemSpec, reference_flags: object) -> ErrorModel:
    """Parse and cross-check ``faults.toml``; raises ``ErrorModelError`` naming the field."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ErrorModelError(f"invalid TOML: {exc}") from exc
    try:
        model = ErrorModel.model_validate(raw)
    except ValidationError as exc:
        field, message = first_error(exc)
        raise ErrorModelError(message, field) from exc
    requirement_ids = [r.id for r in spec.requirements]
    for code, fault in model.faults.items():
        if fault.requirement not in requirement_ids:
            raise ErrorModelError(
                f"{fault.requirement!r} is not a requirement of problem.toml {requirement_ids}",
                f"faults.{code}.requirement",
            )
    if not isinstance(reference_flags, frozenset | set):
        raise ErrorModelError("reference.py must define FAULTS, the set of flags it understands")
    declared = model.all_flags()
    if declared != set(reference_flags):
        raise ErrorModelError(
            f"flags differ from reference.py FAULTS: only in faults.toml "
            f"{sorted(declared - set(reference_flags))}, only in reference.py "
            f"{sorted(set(reference_flags) - declared)}",
            "faults",
        )
    return model


ProbePurpose = Literal["fault", "property"]


@dataclass(frozen=True)
class Probe:
    """An input the submission runs on for diagnosis only: it never counts towards the score."""

    name: str
    inputs: Inputs
    # "fault": compared against every fault combination; "property": read by the property checks.
    purpose: ProbePurpose = "fault"
    # Marks read by the problem's own contract checks (``explained_on`` in faults.toml), e.g.
    # {"equal-lengths"}: the probes on which a partly working function still works.
    marks: frozenset[str] = frozenset()
    # The exception type the correct function raises here (a fault probe only): a mistake that
    # skips a required check shows only on such inputs. A submission raising the same type
    # matches every combination that raises it.
    raises: str | None = None
    # What sets this probe apart, as a phrase after "the probes with": "a query with every key
    # blocked", "a KV cache". The evidence of a diagnosis names probes by it (and by their
    # sizes), never by their values or by what the submission did there.
    about: str = ""


# Given the submission's result on every probe (an array, or a tuple of arrays for a problem
# with several outputs; None where it raised or has the wrong shape), return (requirement id,
# evidence) for each requirement a property shows is broken.
PropertyCheck = Callable[[Mapping[str, Result | None]], list[tuple[str, str]]]


def no_properties(outputs: Mapping[str, Result | None]) -> list[tuple[str, str]]:
    return []


@dataclass(frozen=True)
class Diagnostics:
    """Everything the grader needs to diagnose one problem's wrong answers."""

    error_model: ErrorModel
    probes: tuple[Probe, ...]
    implicated: PropertyCheck
