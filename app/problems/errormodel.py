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

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from app.problems.cases import Inputs
from app.problems.spec import ProblemSpec, Slug

# The grader's own checks. Their codes are fixed; each problem words them for its students.
CONTRACT_CODES = (
    "input-mutated",
    "low-precision",
    "shape-mismatch",
    "non-finite-output",
    "assumes-equal-lengths",
    "unrecognized",
)


class ErrorModelError(ValueError):
    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Wording(_Strict):
    title: str = Field(min_length=1, max_length=120)
    explanation: str = Field(min_length=1, max_length=1000)
    hint: str = Field(min_length=1, max_length=500)


class FaultSpec(Wording):
    requirement: Slug
    # Reference flags that all express this one misconception; empty means just the code.
    variants: list[str] = []
    # Faults of one group are alternatives (one scale, one softmax axis): never combined.
    group: str | None = None


class DiagnosisSettings(_Strict):
    # Largest difference / largest expected value, per probe, for the "low-precision" match.
    low_precision: float = Field(default=5e-3, gt=0, lt=1)
    max_faults: int = Field(default=3, ge=1, le=4)


class ErrorModel(_Strict):
    diagnosis: DiagnosisSettings = DiagnosisSettings()
    faults: dict[Slug, FaultSpec] = Field(min_length=1)
    contract: dict[str, Wording]

    @field_validator("contract")
    @classmethod
    def _contract_codes(cls, contract: dict[str, Wording]) -> dict[str, Wording]:
        missing = [c for c in CONTRACT_CODES if c not in contract]
        if missing:
            raise ValueError(f"missing {missing}")
        extra = sorted(set(contract) - set(CONTRACT_CODES))
        if extra:
            raise ValueError(f"unknown codes {extra}; the codes are {list(CONTRACT_CODES)}")
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


def read_error_model(path: Path, spec: ProblemSpec, reference_flags: object) -> ErrorModel:
    """Parse and cross-check ``faults.toml``; raises ``ErrorModelError`` naming the field."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ErrorModelError(f"invalid TOML: {exc}") from exc
    try:
        model = ErrorModel.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or None
        raise ErrorModelError(first["msg"], field) from exc
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
    # For the contract check "assumes-equal-lengths": do the sequences here have equal lengths?
    equal_lengths: bool = False


# Given the submission's output on every probe (None where it raised or has the wrong shape),
# return (requirement id, evidence) for each requirement a property shows is broken.
PropertyCheck = Callable[[Mapping[str, np.ndarray | None]], list[tuple[str, str]]]


def no_properties(outputs: Mapping[str, np.ndarray | None]) -> list[tuple[str, str]]:
    return []


@dataclass(frozen=True)
class Diagnostics:
    """Everything the grader needs to diagnose one problem's wrong answers."""

    error_model: ErrorModel
    probes: tuple[Probe, ...]
    implicated: PropertyCheck
    # The reference with fault flags: reference(*args, faults=frozenset(flags)).
    faulty_reference: Callable[..., np.ndarray]
