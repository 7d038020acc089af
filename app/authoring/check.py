"""``python -m app problems check``: everything an author needs to know about a problem folder.

It loads the folder (the same loader as start-up, so the same messages), runs the reference on
every case, example and probe, checks that every fault flag changes some output, prints the
diagnosability table and the idiom matrix's coverage, grades the reference, every single-fault
model and the idiom matrix through the real sandbox, and renders the statement's math. Each
defect names its file and field; any defect makes the check fail.
"""

from __future__ import annotations

import html
import json
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from app.core.config import REPO_ROOT
from app.grading.matrix import Entry, coverage, host_matrix, run_in_sandbox
from app.grading.pipeline import grade_submission, input_bytes, run_limits
from app.problems.cases import Inputs
from app.problems.errormodel import flags_mismatch
from app.problems.frameworks import detect_framework, framework_installed
from app.problems.hooks import exception_name
from app.problems.loader import Problem, ProblemLoadError, import_file, load_problem
from app.problems.solutions import single_fault_source
from app.reports.diagnosability import build_report, label
from sandbox.protocol import Sandbox

MATH_SCRIPT = REPO_ROOT / "frontend" / "check-math.mjs"


@dataclass(frozen=True)
class Defect:
    path: Path
    field: str | None
    message: str

    def __str__(self) -> str:
        return (
            f"{self.path}: {self.field}: {self.message}"
            if self.field
            else f"{self.path}: {self.message}"
        )


@dataclass
class CheckResult:
    directory: Path
    defects: list[Defect] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was checked, for the author

    @property
    def ok(self) -> bool:
        return not self.defects


def check_folder(
    directory: Path, sandbox: Sandbox | None, say: Callable[[str], None] = print
) -> CheckResult:
    """Check one folder; ``sandbox`` None skips the graded runs. ``say`` gets each line of the
    report as it is made (the sandbox runs take a while)."""
    result = CheckResult(directory)

    def note(line: str) -> None:
        result.notes.append(line)
        say(line)

    def defect(path: Path, where: str | None, message: str) -> None:
        found = Defect(path, where, message)
        result.defects.append(found)
        say(f"DEFECT {found}")

    _check_math(directory, note, defect)
    try:
        problem = load_problem(directory)
    except ProblemLoadError as exc:
        result.defects.append(Defect(exc.path, None, str(exc).removeprefix(f"{exc.path}: ")))
        say(f"DEFECT {exc}")
        return result
    probes = problem.diagnostics.probes if problem.diagnostics else ()
    note(
        f"{problem.id}: loaded; the reference ran on {len(problem.examples)} examples, "
        f"{len(problem.hidden)} hidden cases and {len(probes)} probes"
    )
    for line in _group_notes(problem):
        note(line)
    _check_sizes(problem, defect)
    entries: list[Entry] = []
    if problem.diagnostics is None:
        note("no faults.toml: wrong answers are graded but not diagnosed")
    else:
        inert = _check_flags(problem, note, defect)
        _diagnosability(problem, note, defect, inert)
        entries = _idiom_coverage(problem, note, defect)
    if sandbox is not None:
        _grade_models(problem, sandbox, note, defect)
        if problem.diagnostics is not None:
            _grade_matrix(problem, entries, sandbox, note, defect)
        _grade_frameworks(problem, entries, sandbox, note, defect)
    return result


Note = Callable[[str], None]
Report = Callable[[Path, str | None, str], None]

# Folder fingerprint -> its defects: the app is built many times in one process (tests, the
# worker and the server side by side), and a folder's files decide its defects alone.
_vetted: dict[tuple[str, str], tuple[str, ...]] = {}


def startup_defects(problems: list[Problem]) -> dict[str, list[str]]:
    """The defects of ``check`` that need no sandbox and no diagnosability table, by problem id,
    for start-up: statement math that does not parse, a fault flag that changes nothing (a
    function with that mistake would be accepted). A folder with any of them is not served."""
    keys = {p.id: (str(p.directory.resolve()), p.fingerprint) for p in problems}
    fresh = [p for p in problems if keys[p.id] not in _vetted]
    math = _math_errors([p.directory / "statement.md" for p in fresh])
    for problem in fresh:
        found: list[str] = []

        def defect(path: Path, where: str | None, message: str) -> None:
            found.append(str(Defect(path, where, message)))  # noqa: B023 (used at once)

        for error in math.get(problem.directory / "statement.md", []):
            defect(problem.directory / "statement.md", "math", error)
        if problem.diagnostics is not None:
            _check_flags(problem, lambda line: None, defect)
        _check_sizes(problem, defect)
        _vetted[keys[problem.id]] = tuple(found)
    return {p.id: list(_vetted[keys[p.id]]) for p in problems}


def _check_sizes(problem: Problem, defect: Report) -> None:
    """Every case and probe fits the sandbox's input region (``Limits.input_bytes``): a larger
    one could not be run, and every submission would end in an internal error."""
    limit = run_limits(problem).input_bytes
    probes = problem.diagnostics.probes if problem.diagnostics else ()
    calls = [(c.name, c.inputs) for c in (*problem.examples, *problem.hidden)]
    for name, inputs in calls + [(p.name, p.inputs) for p in probes]:
        need = input_bytes(problem, inputs)
        if need > limit:
            defect(
                problem.directory,
                name,
                f"its inputs take {need} bytes in the sandbox; the limit is {limit}",
            )


def _math_errors(statements: list[Path]) -> dict[Path, list[str]]:
    """Every statement's math errors, rendered by one node process; none when node or the front
    end's packages are missing (``check`` says so)."""
    node = shutil.which("node")
    if not statements or node is None or not (REPO_ROOT / "frontend" / "node_modules").is_dir():
        return {}
    run = subprocess.run(
        [node, str(MATH_SCRIPT), "--batch"],
        input=json.dumps([p.read_text(encoding="utf-8") for p in statements]),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if run.returncode != 0:
        return {p: [f"could not be rendered: {run.stderr.strip()[-300:]}"] for p in statements}
    found = json.loads(run.stdout)
    return {
        p: [html.unescape(e) for e in errors] for p, errors in zip(statements, found, strict=True)
    }


def _group_notes(problem: Problem) -> list[str]:
    """How many axes each variadic group (``*lead``) takes across the cases and probes: a group
    tried at one rank only leaves the other ranks untested."""
    probes = problem.diagnostics.probes if problem.diagnostics else ()
    ranks: dict[str, set[int]] = {}
    for inputs in [c.inputs for c in problem.examples + problem.hidden] + [
        p.inputs for p in probes
    ]:
        for name, size in problem.validate_inputs(inputs).items():
            if isinstance(size, tuple):
                ranks.setdefault(name, set()).add(len(size))
    return [
        f"shapes: {name} takes {', '.join(map(str, sorted(found)))} axes across the cases and "
        f"probes" + (" (one rank only: the others are untested)" if len(found) == 1 else "")
        for name, found in sorted(ranks.items())
    ]


def _check_math(directory: Path, note: Note, defect: Report) -> None:
    statement = directory / "statement.md"
    node = shutil.which("node")
    if not statement.is_file():
        return  # the loader reports the missing file
    if node is None or not (REPO_ROOT / "frontend" / "node_modules" / "katex").is_dir():
        note("statement math NOT checked: needs node and the front end's packages (make frontend)")
        return
    run = subprocess.run(
        [node, str(MATH_SCRIPT)],
        input=statement.read_text(encoding="utf-8"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if run.returncode != 0:
        defect(statement, None, f"could not be rendered: {run.stderr.strip()[-500:]}")
        return
    errors = [html.unescape(json.loads(line)) for line in run.stdout.splitlines() if line]
    for error in errors:
        defect(statement, "math", error)
    if not errors:
        note("statement: every formula parses")


def _check_flags(problem: Problem, note: Note, defect: Report) -> set[str]:
    """Every flag must change the output of some case or probe: otherwise the grader could never
    tell that mistake from a correct answer. Returns the faults with such an inert flag."""
    inert: set[str] = set()
    assert problem.diagnostics is not None
    model = problem.diagnostics.error_model
    every = [(c.inputs, c.raises) for c in problem.examples + problem.hidden]
    every += [(p.inputs, p.raises) for p in problem.diagnostics.probes]
    inputs = [i for i, raises in every if raises is None]
    correct = [problem.evaluate(i) for i in inputs]
    # Where the function must raise, a flag shows by raising something else or returning.
    errors = [(i, raises) for i, raises in every if raises is not None]
    for code in model.faults:
        for flag in model.flags(code):
            if not any(
                _differs(problem, i, flag, want) for i, want in zip(inputs, correct, strict=True)
            ) and not any(_raised_by(problem, i, flag) != raises for i, raises in errors):
                inert.add(code)
                defect(
                    problem.directory / "faults.toml",
                    f"faults.{code}",
                    f"the flag {flag!r} changes no output of any case or probe",
                )
    note(f"every one of {len(model.all_flags())} fault flags was checked on every input")
    return inert


def _raised_by(problem: Problem, inputs: Inputs, flag: str) -> str | None:
    try:
        with np.errstate(all="ignore"):
            problem.evaluate(inputs, frozenset({flag}))
    except Exception as exc:
        return exception_name(exc)
    return None


def _differs(problem: Problem, inputs: Inputs, flag: str, want: tuple[np.ndarray, ...]) -> bool:
    try:
        with np.errstate(all="ignore"):
            got = problem.evaluate(inputs, frozenset({flag}))
    except Exception:
        return True
    return any(
        g.shape != w.shape or not np.allclose(g, w, equal_nan=True, rtol=1e-12, atol=0)
        for g, w in zip(got, want, strict=True)
    )


def _diagnosability(
    problem: Problem, note: Note, defect: Report, inert: set[str] | None = None
) -> None:
    assert problem.diagnostics is not None
    model = problem.diagnostics.error_model
    cases = problem.examples + problem.hidden
    report = build_report(problem, 1, cases, model.diagnosis.max_faults)
    note(
        f"diagnosability: {report.combinations} fault combinations, {report.cases} cases, "
        f"{report.fault_probes} fault probes"
    )
    note(f"  {'fault':<28} {'caught by':>9}  told apart by cases / with probes")
    # A fault no case catches (or whose flag changes nothing) is indistinguishable from no
    # mistake, so every other fault is confused with itself plus that one: the defect is that
    # fault's alone, and the others are not blamed for it.
    blind = set(inert or ()) | {row.code for row in report.faults if not row.caught}

    def beyond_blind(combination: str) -> frozenset[str]:
        return frozenset(c for c in combination.split(" + ") if c not in blind) - {"(correct)"}

    for row in report.faults:
        by_cases = "yes" if row.told_apart_by_cases else "no"
        with_probes = "yes" if row.told_apart_with_probes else "no"
        note(f"  {row.code:<28} {row.caught_by:>9}  {by_cases:>5} / {with_probes}")
        if not row.caught:
            defect(
                problem.directory / "cases.py",
                "hidden_cases()",
                f"no case fails a function with only the mistake {row.code!r}: it would be "
                f"accepted",
            )
        groups = [g for g in report.confusable_with_probes if row.code in g]
        if (
            not row.told_apart_with_probes
            and row.code not in blind
            and groups
            and all(len({beyond_blind(c) for c in g}) == 1 for g in groups)
        ):
            blamed = ", ".join(sorted(blind))
            note(f"  {row.code} is confused only with itself plus {blamed}: blamed on {blamed}")
        elif not row.told_apart_with_probes:
            defect(
                problem.directory / "probes.py",
                "probes()",
                f"the probes cannot tell {row.code!r} from another combination of mistakes",
            )
    pairs = [g for g in report.confusable_with_probes if all(s.count("+") <= 1 for s in g)]
    note(
        f"  pairs told apart: {report.pairs.told_apart_with_probes} of {report.pairs.total} "
        f"with the probes ({report.pairs.told_apart_by_cases} by the cases alone)"
    )
    for group in pairs:
        note(f"  the probes cannot tell apart: {' | '.join(group)}")
    if report.missed:
        note(f"  combinations no case fails: {', '.join(report.missed[:10])}")


def _idiom_coverage(problem: Problem, note: Note, defect: Report) -> list[Entry]:
    """The idiom matrix on the host: each single fault and pair, in every way of writing."""
    assert problem.diagnostics is not None
    model = problem.diagnostics.error_model
    entries = host_matrix(problem)
    found = coverage(problem, entries)
    idioms = "; ".join(
        f"{name} ({1 + len(idiom.forms)} ways)" for name, idiom in model.idioms.items()
    )
    ways = f"{found.ways} way{'s' if found.ways != 1 else ''}"
    note(f"idioms: {idioms or 'none declared'}; {ways} of writing the function")
    note(
        f"  idiom matrix: singles told apart {found.singles_told_apart} of {found.singles}, pairs "
        f"{found.pairs_told_apart} of {found.pairs} (every fault and pair, in every way)"
    )
    for entry in entries:
        # Written the plain way, the diagnosability table above already reports it.
        if entry.combo.size == 1 and entry.combo.idiom and not entry.told_apart:
            defect(
                problem.directory / "probes.py",
                "probes()",
                f"written as {sorted(entry.combo.flags)}, the mistake "
                f"{label(entry.combo.codes)!r} is diagnosed as "
                f"{' | '.join(label(f) for f in entry.found) or 'nothing'}",
            )
    return entries


def _grade_matrix(
    problem: Problem,
    entries: list[Entry],
    sandbox: Sandbox,
    note: Note,
    defect: Report,
    framework: str = "numpy",
) -> None:
    """The idiom matrix graded through the real sandbox, one run per way of writing; with
    ``framework`` "torch", written with ``solution_torch.py`` and run as PyTorch jobs, where each
    model must be diagnosed as the NumPy one is on the host."""
    graded = run_in_sandbox(problem, sandbox, [e.combo for e in entries], framework)
    wrong = [
        (e, got)
        for e, got in zip(entries, graded, strict=True)
        if got != (e.found if not e.told_apart else (e.combo.codes,))
    ]
    singles = sum(e.combo.size == 1 for e in entries)
    singles_wrong = sum(e.combo.size == 1 for e, _ in wrong)
    if framework == "numpy":
        job, path, where = "", problem.directory / "faults.toml", "idioms"
    else:
        job = f" written in {framework} (solution_{framework}.py)"
        path, where = problem.directory / f"solution_{framework}.py", None
    note(
        f"sandbox: idiom matrix{job}, {len(entries)} models graded, "
        f"{len(entries) - len(wrong)} diagnosed as on the host (single faults "
        f"{singles - singles_wrong} of {singles})"
    )
    for entry, got in wrong[:10]:
        defect(
            path,
            where,
            f"in the sandbox{job} {sorted(entry.combo.flags)} is diagnosed as "
            f"{' | '.join(label(f) for f in got) or 'nothing'}",
        )


def _grade_models(problem: Problem, sandbox: Sandbox, note: Note, defect: Report) -> None:
    """The reference, then each fault flag on its own, graded exactly as a submission is."""
    source = (problem.directory / "reference.py").read_text(encoding="utf-8")
    report = grade_submission(problem, source, sandbox)
    note(f"sandbox: the reference is {report.verdict.value}")
    if report.verdict.value != "accepted":
        failing = "; ".join(f"{t.name}: {t.message}" for t in report.tests if t.status != "passed")
        defect(
            problem.directory / "reference.py",
            problem.spec.function_name,
            f"graded in the sandbox as {report.verdict.value}: {report.error or failing}",
        )
    if problem.diagnostics is None:
        return
    model = problem.diagnostics.error_model
    name = problem.spec.function_name
    for code in model.faults:
        for flag in model.flags(code):
            graded = grade_submission(problem, single_fault_source(source, name, flag), sandbox)
            codes = sorted({d.code for d in graded.diagnoses})
            named = ", ".join(codes) or "-"
            note(f"sandbox: {flag:<28} {graded.verdict.value:<14} diagnosed {named}")
            if graded.verdict.value == "accepted":
                defect(
                    problem.directory / "cases.py",
                    "hidden_cases()",
                    f"a function with only the mistake {flag!r} is accepted",
                )
            elif codes != [code]:
                defect(
                    problem.directory / "faults.toml",
                    f"faults.{code}",
                    f"a function with only the mistake {flag!r} is diagnosed as "
                    f"{label(frozenset(codes))}, not {code!r}",
                )


def _grade_frameworks(
    problem: Problem, entries: list[Entry], sandbox: Sandbox, note: Note, defect: Report
) -> None:
    """Each framework beside NumPy the folder offers: its starter is read as that framework; its
    reference (``solution_<framework>.py``) takes every flag of the error model, and the idiom
    matrix written with it (each fault's arithmetic the framework's own) is diagnosed as the NumPy
    one; its plain call is accepted; and each of its habits (faults.toml ``[habits]``) is
    diagnosed as the habit expects."""
    for framework in problem.spec.frameworks:
        if framework == "numpy":
            continue
        if not framework_installed(framework):
            note(f"{framework}: NOT checked, not installed on this host")
            continue
        starter = problem.directory / f"starter_{framework}.py"
        if detect_framework(problem.starters[framework]) != framework:
            defect(starter, None, f"does not import {framework}: it would be graded as NumPy")
        path = problem.directory / f"solution_{framework}.py"
        if not path.is_file():
            defect(path, None, f"missing: frameworks lists {framework!r}; a correct solution in it")
            continue
        if problem.diagnostics is not None and _takes_the_flags(problem, path, defect) and entries:
            _grade_matrix(problem, entries, sandbox, note, defect, framework)
        solution = path.read_text(encoding="utf-8")
        report = grade_submission(problem, solution, sandbox, framework=framework)
        note(f"sandbox ({framework}): the solution is {report.verdict.value}")
        if report.verdict.value != "accepted":
            failing = "; ".join(
                f"{t.name}: {t.message}" for t in report.tests if t.status != "passed"
            )
            defect(path, None, f"graded as {report.verdict.value}: {report.error or failing}")
        if problem.diagnostics is not None:
            _grade_habits(problem, framework, solution, sandbox, note, defect)


def _takes_the_flags(problem: Problem, path: Path, defect: Report) -> bool:
    """Whether a framework's reference (``solution_<framework>.py``, trusted as reference.py
    is: imported here, on the host) lists in ``FAULTS`` exactly the flags of the error model,
    each fault written in that framework."""
    assert problem.diagnostics is not None
    try:
        module = import_file(path, f"tensorjudge_check_{problem.id.replace('-', '_')}_{path.stem}")
    except ProblemLoadError as exc:
        defect(path, None, str(exc).removeprefix(f"{path}: "))
        return False
    mismatch = flags_mismatch(
        problem.diagnostics.error_model, getattr(module, "FAULTS", None), path.name
    )
    if mismatch:
        defect(path, "FAULTS", mismatch)
    return mismatch is None


def _grade_habits(
    problem: Problem, framework: str, solution: str, sandbox: Sandbox, note: Note, defect: Report
) -> None:
    assert problem.diagnostics is not None
    faults = problem.directory / "faults.toml"
    for name, habit in problem.diagnostics.error_model.habits.items():
        if habit.framework != framework:
            continue
        try:
            code = habit.apply(solution)
        except ValueError as exc:
            defect(faults, f"habits.{name}", f"{exc} (solution_{framework}.py)")
            continue
        graded = grade_submission(problem, code, sandbox, framework=framework)
        named = sorted(
            {d.code for d in graded.diagnoses} | {t.crash for t in graded.tests if t.crash}
        )
        note(
            f"sandbox ({framework}): habit {name:<22} {graded.verdict.value:<14} "
            f"diagnosed {', '.join(named) or '-'}"
        )
        if habit.expect not in named:
            defect(
                faults,
                f"habits.{name}",
                f"diagnosed as {', '.join(named) or 'nothing'}, not {habit.expect!r}",
            )
