"""Reads ``problems/<id>/`` folders into ``Problem`` objects, failing loudly on anything malformed.

A problem folder holds:

- ``problem.toml``  the spec (see ``app.problems.spec.ProblemSpec``);
- ``statement.md``  markdown with ``$...$`` math, served to students;
- ``starter.py``    the code the editor opens with (NumPy), and ``starter_torch.py`` when
  ``frameworks`` lists "torch";
- ``reference.py``  the trusted solution: never served, never sent into a sandbox;
- ``cases.py``      ``public_examples()``, ``hidden_cases(rng)`` and optionally two hooks:
  ``check_case(inputs, dims)`` for constraints the signature cannot express, and
  ``case_warnings(inputs, dims)`` for the problem's own instructor warnings (see
  ``app.problems.hooks``);
- ``faults.toml`` and ``probes.py`` (optional, together): the error model and the probe inputs
  that diagnose wrong answers (see ``app.problems.errormodel``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import numpy as np
from pydantic import ValidationError

from app.core.errors import first_error
from app.problems.cases import (
    Dims,
    Inputs,
    InvalidCase,
    Result,
    TestCase,
    bind_dims,
    output_shapes,
    parts_of,
    with_defaults,
)
from app.problems.errormodel import (
    Diagnostics,
    ErrorModelError,
    Probe,
    no_properties,
    read_error_model,
)
from app.problems.frameworks import framework_installed
from app.problems.hooks import (
    CaseCheck,
    WarningHook,
    check_hidden_raises,
    exception_name,
    no_check,
    no_warnings,
)
from app.problems.spec import ProblemSpec

REQUIRED_FILES = ("problem.toml", "statement.md", "starter.py", "reference.py", "cases.py")


class ProblemLoadError(Exception):
    """A problem folder is malformed. The message names the file and, where known, the field."""

    def __init__(self, path: Path, message: str, field: str | None = None) -> None:
        where = f"{path}: {field}: " if field else f"{path}: "
        super().__init__(where + message)
        self.path = path
        self.field = field


class ReferenceOutputError(ValueError):
    """The reference returned something that does not fit ``returns``."""


@dataclass(frozen=True)
class Problem:
    spec: ProblemSpec
    directory: Path
    statement_markdown: str
    starter_code: str
    reference: Callable[..., Any]
    check_case: CaseCheck
    examples: tuple[TestCase, ...]
    hidden: tuple[TestCase, ...]
    # None when the folder has no faults.toml: wrong answers are then graded, not diagnosed.
    diagnostics: Diagnostics | None = None
    warnings_hook: WarningHook = no_warnings
    # The folder's hidden cases generated from another seed (expected outputs from the reference,
    # in this process): per-student hidden cases. None for a problem built without a folder.
    hidden_from_seed: Callable[[int], tuple[TestCase, ...]] | None = None
    # The folder's contents (sha256 over every file): what is derived from the folder once per
    # process (the fault table, start-up vetting) is kept under it. "" without a folder.
    fingerprint: str = ""
    # The editor's starter per framework the folder offers ("numpy" is ``starter_code``).
    starters: dict[str, str] = field(default_factory=dict)
    # Frameworks this server does not offer even where installed (``Settings.offer_torch``).
    frameworks_off: frozenset[str] = frozenset()

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def frameworks(self) -> tuple[str, ...]:
        """The frameworks a submission may use here: the folder's, those this host runs and
        offers."""
        return tuple(
            f
            for f in self.spec.frameworks
            if f == "numpy" or (framework_installed(f) and f not in self.frameworks_off)
        )

    @property
    def frameworks_unavailable(self) -> tuple[str, ...]:
        """The folder's frameworks this server does not offer (not installed, or switched off)."""
        offered = self.frameworks
        return tuple(f for f in self.spec.frameworks if f not in offered)

    def validate_inputs(self, inputs: Inputs) -> Dims:
        """Signature check plus the problem's own constraints; raises ``InvalidCase``."""
        dims = bind_dims(self.spec, inputs)
        self.check_case(inputs, dims)
        return dims

    def evaluate(
        self, inputs: Inputs, faults: frozenset[str] = frozenset()
    ) -> tuple[np.ndarray, ...]:
        """The reference's outputs, float64, one per output of ``returns``: the one place the
        reference runs, with fault flags or without. It runs on copies, so a case's inputs are
        never touched by it; an omitted optional parameter is passed as None. Raises what the
        reference raises, or ``ReferenceOutputError`` when its result does not fit ``returns``."""
        args = [_copy(inputs.get(p.name)) for p in self.spec.params]
        result = self.reference(*args, faults=faults) if faults else self.reference(*args)
        n = len(self.spec.outputs)
        if not self.spec.multiple_outputs:
            if isinstance(result, tuple | list) and not isinstance(result, np.ndarray):
                raise ReferenceOutputError(
                    f"returned a {type(result).__name__}; problem.toml returns one array"
                )
            return (np.asarray(result, dtype=np.float64),)
        if not isinstance(result, tuple | list) or len(result) != n:
            raise ReferenceOutputError(
                f"returned {type(result).__name__}; problem.toml returns a tuple of {n} arrays"
            )
        return tuple(np.asarray(part, dtype=np.float64) for part in result)

    def solve(self, inputs: Inputs) -> Result:
        """The correct result as the function returns it: an array, or a tuple of them."""
        parts = self.evaluate(inputs)
        return parts if self.spec.multiple_outputs else parts[0]

    def with_expected(self, case: TestCase) -> TestCase:
        case = replace(case, inputs=with_defaults(self.spec, case.inputs))
        dims = self.validate_inputs(case.inputs)
        if case.raises is not None:
            check_hidden_raises(case.raises, case.visibility)
            raised = self.raised_by(case.inputs)
            if raised != case.raises:
                did = f"raised {raised}" if raised else "returned normally"
                raise InvalidCase("raises", f"expects {case.raises}, but the reference {did}")
            return replace(case, expected=None)
        try:
            parts = self.evaluate(case.inputs)
        except ReferenceOutputError as exc:
            raise InvalidCase("expected", f"the reference {exc}") from None
        for output, got, want in zip(
            self.spec.outputs, parts, output_shapes(self.spec, dims), strict=True
        ):
            if got.shape != want:
                raise InvalidCase(
                    f"expected.{output.name}" if self.spec.multiple_outputs else "expected",
                    f"reference returned shape {got.shape}, not {want}",
                )
        return replace(case, expected=parts if self.spec.multiple_outputs else parts[0])

    def raised_by(self, inputs: Inputs) -> str | None:
        """The name of the exception type the reference raises on ``inputs``, or None."""
        try:
            with np.errstate(all="ignore"):
                self.evaluate(inputs)
        except ReferenceOutputError:
            raise
        except Exception as exc:
            return exception_name(exc)
        return None


def _copy(value: Any) -> Any:
    return value.copy() if isinstance(value, np.ndarray) else value


def import_file(path: Path, module_name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ProblemLoadError(path, "cannot be imported")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise ProblemLoadError(path, f"failed to import: {type(exc).__name__}: {exc}") from exc
    return module


def _read_spec(path: Path) -> ProblemSpec:
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ProblemLoadError(path, f"invalid TOML: {exc}") from exc
    try:
        return ProblemSpec.model_validate(raw)
    except ValidationError as exc:
        field, message = first_error(exc)
        raise ProblemLoadError(path, message, field=field) from exc


def _build_cases(
    problem: Problem, path: Path, cases: Sequence[Any], label: str, visibility: str
) -> tuple[TestCase, ...]:
    built: list[TestCase] = []
    names: set[str] = set()
    for index, case in enumerate(cases):
        if not isinstance(case, TestCase):
            raise ProblemLoadError(path, "must return TestCase objects", field=f"{label}[{index}]")
        if case.name in names:
            raise ProblemLoadError(path, f"duplicate case name {case.name!r}", field=label)
        names.add(case.name)
        try:
            built.append(problem.with_expected(replace(case, visibility=visibility)))  # type: ignore[arg-type]
        except InvalidCase as exc:
            raise ProblemLoadError(path, str(exc), field=f"{label}[{case.name}]") from exc
        except Exception as exc:  # the reference itself failed: name the case, not a traceback
            raise ProblemLoadError(
                path, f"the reference raised {exception_name(exc)}: {exc}", f"{label}[{case.name}]"
            ) from exc
    if not built:
        raise ProblemLoadError(path, "returned no cases", field=label)
    return tuple(built)


# An unchanged folder is loaded once per process (a process that builds several apps, or
# loads for `problems check` and then serves, pays its imports and reference outputs once).
_LOADED: dict[tuple[Path, str], Problem] = {}


def load_problem(directory: Path) -> Problem:
    for name in REQUIRED_FILES:
        if not (directory / name).is_file():
            raise ProblemLoadError(directory / name, "missing")
    fingerprint = folder_fingerprint(directory)
    key = (directory.resolve(), fingerprint)
    loaded = _LOADED.get(key)
    if loaded is None:
        loaded = _LOADED[key] = _load_problem(directory, fingerprint)
    return loaded


def _load_problem(directory: Path, fingerprint: str) -> Problem:
    spec = _read_spec(directory / "problem.toml")
    if spec.id != directory.name:
        raise ProblemLoadError(
            directory / "problem.toml", f"is {spec.id!r} but the folder is {directory.name!r}", "id"
        )
    module_prefix = "tensorjudge_problem_" + spec.id.replace("-", "_")
    reference_module = import_file(directory / "reference.py", module_prefix + "_reference")
    reference = getattr(reference_module, spec.function_name, None)
    if not callable(reference):
        raise ProblemLoadError(
            directory / "reference.py", f"defines no function {spec.function_name!r}"
        )
    cases_path = directory / "cases.py"
    cases_module = import_file(cases_path, module_prefix + "_cases")
    for fn in ("public_examples", "hidden_cases"):
        if not callable(getattr(cases_module, fn, None)):
            raise ProblemLoadError(cases_path, f"defines no function {fn}()")
    problem = Problem(
        spec=spec,
        directory=directory,
        fingerprint=fingerprint,
        statement_markdown=(directory / "statement.md").read_text(encoding="utf-8"),
        starter_code=(directory / "starter.py").read_text(encoding="utf-8"),
        starters=_starters(directory, spec),
        reference=reference,
        check_case=_hook(cases_path, cases_module, "check_case", no_check),
        warnings_hook=_hook(cases_path, cases_module, "case_warnings", no_warnings),
        examples=(),
        hidden=(),
    )
    examples = _build_cases(
        problem, cases_path, cases_module.public_examples(), "public_examples()", "public"
    )
    hidden = _build_cases(
        problem,
        cases_path,
        cases_module.hidden_cases(np.random.default_rng(spec.seed)),
        "hidden_cases()",
        "hidden",
    )
    # Results are matched to cases by name: a hidden case named like an example would be graded
    # against the example's expected output.
    shared = sorted({c.name for c in examples} & {c.name for c in hidden})
    if shared:
        raise ProblemLoadError(
            cases_path,
            f"case names {shared} are used by both public_examples() and hidden_cases()",
            field="hidden_cases()",
        )
    diagnostics = None
    if (directory / "faults.toml").is_file():
        diagnostics = _load_diagnostics(problem, reference_module, module_prefix)

    def hidden_from_seed(seed: int) -> tuple[TestCase, ...]:
        generated = cases_module.hidden_cases(np.random.default_rng(seed))
        return _build_cases(problem, cases_path, generated, "hidden_cases()", "hidden")

    return replace(
        problem,
        examples=_read_only(examples),
        hidden=_read_only(hidden),
        diagnostics=diagnostics,
        hidden_from_seed=hidden_from_seed,
    )


def _read_only(cases: tuple[TestCase, ...]) -> tuple[TestCase, ...]:
    """The cases with their arrays made read-only: a loaded problem is shared by every app of
    the process (``_LOADED``), so nothing may change a case in place."""
    for case in cases:
        expected = () if case.expected is None else parts_of(case.expected)
        for value in (*case.inputs.values(), *expected):
            if isinstance(value, np.ndarray):
                value.setflags(write=False)
    return cases


def _starters(directory: Path, spec: ProblemSpec) -> dict[str, str]:
    starters = {"numpy": (directory / "starter.py").read_text(encoding="utf-8")}
    for framework in spec.frameworks:
        if framework == "numpy":
            continue
        path = directory / f"starter_{framework}.py"
        if not path.is_file():
            raise ProblemLoadError(path, f"missing: frameworks lists {framework!r}", "frameworks")
        starters[framework] = path.read_text(encoding="utf-8")
    return starters


def _hook(path: Path, module: ModuleType, name: str, default: Any) -> Any:
    hook = getattr(module, name, default)
    if not callable(hook):
        raise ProblemLoadError(path, "is not a function", field=name)
    return hook


def _load_diagnostics(problem: Problem, reference_module: ModuleType, prefix: str) -> Diagnostics:
    directory = problem.directory
    try:
        model = read_error_model(
            directory / "faults.toml", problem.spec, getattr(reference_module, "FAULTS", None)
        )
    except ErrorModelError as exc:
        raise ProblemLoadError(directory / "faults.toml", exc.message, exc.field) from exc
    probes_path = directory / "probes.py"
    if not probes_path.is_file():
        raise ProblemLoadError(probes_path, "missing (faults.toml needs probe inputs)")
    module = import_file(probes_path, prefix + "_probes")
    if not callable(getattr(module, "probes", None)):
        raise ProblemLoadError(probes_path, "defines no function probes(rng)")
    probes = tuple(module.probes(np.random.default_rng(problem.spec.seed)))
    for index, probe in enumerate(probes):
        if not isinstance(probe, Probe) or probe.purpose not in ("fault", "property"):
            raise ProblemLoadError(probes_path, "must return Probe objects", f"probes()[{index}]")
    probes = tuple(replace(p, inputs=with_defaults(problem.spec, p.inputs)) for p in probes)
    names: set[str] = set()
    for index, probe in enumerate(probes):
        label = f"probes()[{index}]"
        if probe.raises is not None and probe.purpose != "fault":
            raise ProblemLoadError(probes_path, "only a fault probe may expect an error", label)
        if probe.name in names:
            raise ProblemLoadError(probes_path, f"duplicate probe name {probe.name!r}", label)
        names.add(probe.name)
        try:
            problem.with_expected(TestCase(probe.name, probe.inputs, raises=probe.raises))
        except InvalidCase as exc:
            raise ProblemLoadError(probes_path, str(exc), field=f"probes()[{probe.name}]") from exc
        except Exception as exc:
            raise ProblemLoadError(
                probes_path,
                f"the reference raised {exception_name(exc)}: {exc}",
                f"probes()[{probe.name}]",
            ) from exc
    fault_probes = [p for p in probes if p.purpose == "fault"]
    if not fault_probes:
        raise ProblemLoadError(probes_path, "returned no fault probes", field="probes()")
    for code, mark, _ in model.partial_checks():
        marked = sum(mark in p.marks for p in fault_probes)
        if not 0 < marked < len(fault_probes):
            raise ProblemLoadError(
                probes_path,
                f"contract.{code} needs fault probes with and without the mark {mark!r} "
                f"({marked} of {len(fault_probes)} have it)",
                field="probes()",
            )
    return Diagnostics(
        error_model=model,
        probes=probes,
        implicated=getattr(module, "implicated", no_properties),
    )


# Start-up's extra checks (``problems check`` without the sandbox): defects by problem id.
Vet = Callable[[list["Problem"]], dict[str, list[str]]]


class FoldersRefused(ProblemLoadError):
    """One or more folders cannot be served: every one is named with its defects, a few lines
    each, so start-up says what to fix without a traceback."""

    def __init__(self, root: Path, refused: dict[Path, list[str]]) -> None:
        lines = [f"{len(refused)} problem folder(s) cannot be served; fix them or move them out:"]
        for directory, defects in refused.items():
            lines.append(f"  {directory}:")
            lines += [f"    - {d}" for d in defects]
        lines.append("  (python -m app problems check FOLDER prints the whole report)")
        Exception.__init__(self, "\n".join(lines))
        self.path = root
        self.field = None
        self.refused = refused


def load_problems(
    root: Path,
    extra: Sequence[Path] = (),
    vet: Vet | None = None,
    frameworks_off: frozenset[str] = frozenset(),
) -> dict[str, Problem]:
    """Every problem folder under ``root`` and under each folder of ``extra`` (a course's own
    problems, ``GRADER_PROBLEM_DIRS``). Ids are unique across all of them. ``vet`` adds the
    start-up checks; any folder that fails to load or is vetted with defects refuses them all,
    every such folder named (``FoldersRefused``). ``frameworks_off``: frameworks no problem
    offers on this server (``frameworks_off(settings)``)."""
    problems: dict[str, Problem] = {}
    refused: dict[Path, list[str]] = {}
    for base in (root, *extra):
        if not base.is_dir():
            raise ProblemLoadError(base, "problems directory does not exist")
        for directory in problem_folders(base):
            try:
                problem = load_problem(directory)
            except ProblemLoadError as exc:
                refused[directory] = [str(exc).removeprefix(f"{directory}/")]
                continue
            other = problems.get(problem.id)
            if other is not None:
                raise ProblemLoadError(
                    directory / "problem.toml",
                    f"{problem.id!r} is also the id of {other.directory}",
                    "id",
                )
            problems[problem.id] = replace(problem, frameworks_off=frameworks_off)
    if vet is not None and problems:
        for problem_id, defects in vet(list(problems.values())).items():
            if defects:
                refused[problems[problem_id].directory] = defects
    if refused:
        raise FoldersRefused(root, refused)
    if not problems:
        raise ProblemLoadError(root, "contains no problem folders")
    return problems


def problem_folders(base: Path) -> list[Path]:
    return sorted(
        p
        for p in base.iterdir()
        if p.is_dir() and not p.name.startswith(".") and p.name != "__pycache__"
    )


def folder_fingerprint(directory: Path) -> str:
    """sha256 over the relative path and bytes of every file of a problem folder (bytecode
    caches left out): equal for two loads of an unchanged folder."""
    digest = hashlib.sha256()
    for path in sorted(p for p in directory.rglob("*") if p.is_file() and p.suffix != ".pyc"):
        digest.update(str(path.relative_to(directory)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def frameworks_off(settings: FrameworkSettings) -> frozenset[str]:
    """The frameworks this server's settings switch off (``GRADER_OFFER_TORCH=false``)."""
    return frozenset() if settings.offer_torch else frozenset({"torch"})


class FrameworkSettings(Protocol):
    @property
    def offer_torch(self) -> bool: ...
