"""A problem's error model (``faults.toml``) and its probe inputs (``probes.py``).

The error model names the misconceptions the grader can diagnose. Each fault is a flag of the
reference (``reference.py`` lists them in ``FAULTS`` and takes ``faults=frozenset(...)``), so the
grader reproduces a wrong answer by calling the reference with flags, never with a copy of it.
Probes are inputs the submission also runs on, chosen so that every combination of up to three
faults gives a different output; property probes feed checks that point at a requirement when no
combination explains an output.
"""

from __future__ import annotations

import itertools
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from app.core.errors import first_error
from app.problems.cases import Inputs, Result
from app.problems.crashes import CRASH_HINTS
from app.problems.spec import Framework, ProblemSpec, Slug, StrictModel

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
    # A fault whose mistake is a number (a head count fixed in the code): the values the search
    # tries, each the reference flag "<code>=<value>". The wording may say "{value}".
    values: list[int] = Field(default_factory=list, max_length=16)
    # A group is one axis of choice (the scale, which keys are visible, how they are hidden):
    # its faults are alternative values of it and never combine. Different groups are
    # independent axes, so their faults do combine unless an ``exclude`` entry says otherwise.
    # A fault may sit in several groups (a habit spanning two steps excludes the faults of each).
    group: str | list[str] | None = None

    @property
    def groups(self) -> list[str]:
        if self.group is None:
            return []
        return [self.group] if isinstance(self.group, str) else list(self.group)

    @field_validator("values")
    @classmethod
    def _distinct_values(cls, values: list[int]) -> list[int]:
        if len(set(values)) != len(values):
            raise ValueError("values repeat")
        return values


class Idiom(StrictModel):
    """Ways of writing one step that must not change the diagnosis (a fill value of -1e9 for
    -inf, a mask added rather than applied with ``where``). The reference's plain call is the
    first way; each form is a reference flag for another. Forms that give the same outputs as
    the plain call everywhere cost nothing: the table keeps one row per behaviour."""

    title: str = Field(min_length=1, max_length=120)
    forms: list[str] = Field(min_length=1, max_length=8)


class Habit(StrictModel):
    """One mistake as students make it in a framework's own idiom (``x @ W.T`` as ``nn.Linear``
    stores it, ``F.softmax(dim=-2)``): the folder's correct solution in that framework
    (``solution_<framework>.py``) with a few text edits. ``problems check`` grades each one in the
    sandbox; its diagnosis must name ``expect``."""

    framework: Framework
    # A fault or contract code of this model, or a crash the grader names (``CRASH_HINTS``).
    expect: Slug
    # (old, new) replacements of the solution's text, each ``old`` found in it.
    edits: list[tuple[str, str]] = Field(min_length=1, max_length=12)
    # Where the habit was seen in public code (repository and path), as the corpus cites it.
    seen_in: str = Field(min_length=1, max_length=300)

    def apply(self, solution: str) -> str:
        """The solution with this habit; ``ValueError`` when an edit's text is not in it."""
        for old, new in self.edits:
            if old not in solution:
                raise ValueError(f"the edit's text {old!r} is not in the solution")
            solution = solution.replace(old, new)
        return solution


class Exclusion(StrictModel):
    """Faults of independent axes that still never combine: together they describe no function
    (a reduction on the wrong axis of a gradient that reduces nothing) or one fault makes the
    other moot (no mask at all, and how the mask is applied)."""

    faults: list[Slug] = Field(min_length=2, max_length=4)
    why: str = Field(min_length=1, max_length=300)


class DiagnosisSettings(StrictModel):
    # The most a "low-precision" answer may differ from the correct one, relative to the largest
    # expected value of the probe: a cap on the rounding noise of float32/float16 answers.
    low_precision: float = Field(default=5e-3, gt=0, lt=1)
    max_faults: int = Field(default=3, ge=1, le=4)


class ErrorModel(StrictModel):
    diagnosis: DiagnosisSettings = DiagnosisSettings()
    faults: dict[Slug, FaultSpec] = Field(min_length=1)
    contract: dict[Slug, ContractWording]
    idioms: dict[Slug, Idiom] = Field(default_factory=dict)
    exclude: list[Exclusion] = Field(default_factory=list)
    habits: dict[Slug, Habit] = Field(default_factory=dict)

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
            if fault.variants and fault.values:
                raise ValueError(f"{code}: a fault has variants or values, not both")
            for flag in _flags_of(code, fault):
                if flag in seen:
                    raise ValueError(f"{code}: variant {flag!r} also belongs to {seen[flag]}")
                seen[flag] = code
        return faults

    @model_validator(mode="after")
    def _idioms_and_exclusions(self) -> ErrorModel:
        fault_flags = self.all_fault_flags()
        seen: set[str] = set()
        for name, idiom in self.idioms.items():
            for form in idiom.forms:
                if form in fault_flags or form in seen or "=" in form:
                    raise ValueError(
                        f"idioms.{name}: form {form!r} is already a flag (or holds '=')"
                    )
                seen.add(form)
        for entry in self.exclude:
            unknown = [c for c in entry.faults if c not in self.faults]
            if unknown:
                raise ValueError(f"exclude: {unknown} are not faults")
        for name, habit in self.habits.items():
            if habit.framework == "numpy":
                raise ValueError(f"habits.{name}: a habit belongs to another framework than NumPy")
            if habit.expect not in (*self.faults, *self.contract, *CRASH_HINTS):
                raise ValueError(
                    f"habits.{name}: expect {habit.expect!r} is no fault, contract code or "
                    f"named crash ({', '.join(CRASH_HINTS)})"
                )
        return self

    def flags(self, code: str) -> list[str]:
        return _flags_of(code, self.faults[code])

    def all_fault_flags(self) -> set[str]:
        return {flag for code in self.faults for flag in self.flags(code)}

    def all_flags(self) -> set[str]:
        """Every flag the reference must understand: the faults' and the idioms' forms."""
        forms = {form for idiom in self.idioms.values() for form in idiom.forms}
        return self.all_fault_flags() | forms

    def writings(self) -> list[frozenset[str]]:
        """Every way of writing the function the idioms allow: one form (or the plain way) per
        idiom, the plain call first."""
        choices = [[None, *idiom.forms] for idiom in self.idioms.values()]
        return [
            frozenset(form for form in chosen if form is not None)
            for chosen in itertools.product(*choices)
        ]

    def excluded(self, codes: Iterable[str]) -> bool:
        chosen = set(codes)
        return any(chosen.issuperset(entry.faults) for entry in self.exclude)

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


def _flags_of(code: str, fault: FaultSpec) -> list[str]:
    if fault.values:
        return [f"{code}={value}" for value in fault.values]
    return list(fault.variants) or [code]


def flag_value(flag: str) -> tuple[str, str] | None:
    """(code, value) of a parameterized fault's flag "<code>=<value>"; None for another flag."""
    code, sep, value = flag.partition("=")
    return (code, value) if sep else None


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
    mismatch = flags_mismatch(model, reference_flags, "reference.py")
    if mismatch:
        raise ErrorModelError(mismatch, "faults")
    return model


def flags_mismatch(model: ErrorModel, flags: object, filename: str) -> str | None:
    """Why ``flags``, the ``FAULTS`` of a reference (``filename``), are not exactly the flags
    of ``model``; None when they are."""
    if not isinstance(flags, frozenset | set):
        return f"{filename} must define FAULTS, the set of flags it understands"
    declared = model.all_flags()
    if declared == set(flags):
        return None
    return (
        f"flags differ from {filename} FAULTS: only in faults.toml "
        f"{sorted(declared - set(flags))}, only in {filename} {sorted(set(flags) - declared)}"
    )


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
