"""Grades one submission: one sandbox run over the cases and the probes, then comparison and
diagnosis here, outside the sandbox. Expected outputs never enter the ``RunRequest``."""

from __future__ import annotations

import time
from collections.abc import Sequence

from app.grading import determinism, explain
from app.grading.calls import calls_of
from app.grading.compare import RUN_SECONDS_STEP, compare_cases, rounded, score, verdict
from app.grading.diagnose import diagnose
from app.grading.faulttable import fault_table
from app.grading.loadfailure import load_failure
from app.grading.schemas import CaseReport, Diagnosis, GradeReport, PublicView, RequirementResult
from app.grading.verdicts import Verdict
from app.problems.cases import Inputs, TestCase
from app.problems.crashes import crash_hint
from app.problems.frameworks import framework_for
from app.problems.loader import Problem
from sandbox.backends.runtime import TORCH_RUNTIME_MB
from sandbox.inside.frameworks import FORBIDDEN_ERROR
from sandbox.protocol import (
    ArgValue,
    CaseArgs,
    CaseOutcome,
    Limits,
    RunRequest,
    RunResult,
    Sandbox,
)
from sandbox.wire import case_need


def build_request(
    problem: Problem, code: str, cases: Sequence[TestCase], framework: str | None = None
) -> RunRequest:
    """``framework``: the one the student chose; by default the one the code's imports show."""
    spec = problem.spec
    chosen = framework_for(problem.frameworks, code, framework)
    limits = run_limits(problem)
    if chosen == "torch":
        limits = limits.model_copy(update={"runtime_mb": TORCH_RUNTIME_MB})
    return RunRequest(
        code=code,
        function_name=spec.function_name,
        param_names=[p.name for p in spec.params],
        outputs=len(spec.outputs) if spec.multiple_outputs else None,
        cases=list(calls_of(problem, cases, lambda: _calls(problem, cases))),
        limits=limits,
        framework="torch" if chosen == "torch" else "numpy",
        forbidden=list(getattr(spec.forbidden, chosen)),
    )


def _calls(problem: Problem, cases: Sequence[TestCase]) -> list[CaseArgs]:
    probes = problem.diagnostics.probes if problem.diagnostics else ()
    case_names = {c.name for c in cases}
    clash = sorted(case_names & {p.name for p in probes})
    if clash:
        raise ValueError(f"case names {clash} are also probe names")
    repeat = determinism.repeated(cases, probes)
    if repeat and determinism.repeat_name(repeat[0]) in case_names | {p.name for p in probes}:
        raise ValueError(f"the name {determinism.repeat_name(repeat[0])!r} is reserved")
    names = [p.name for p in problem.spec.params]
    # Every public case (the folder's examples and instructors' stored ones) before any hidden
    # one: what a public case prints is shown, so none may run once hidden inputs were seen.
    # Then the hidden cases, the probes, and the repeated call of the determinism check last:
    # if the run is cut short, they are what is lost.
    public = [c for c in cases if c.visibility == "public"]
    hidden = [c for c in cases if c.visibility != "public"]
    again = []
    if repeat:
        name, inputs = repeat
        again = [
            CaseArgs(name=determinism.repeat_name(name), args=_args(inputs, names), hidden=True)
        ]
    return (
        [CaseArgs(name=c.name, args=_args(c.inputs, names)) for c in public]
        + [CaseArgs(name=c.name, args=_args(c.inputs, names), hidden=True) for c in hidden]
        + [CaseArgs(name=p.name, args=_args(p.inputs, names), hidden=True) for p in probes]
        + again
    )


def run_limits(problem: Problem) -> Limits:
    spec = problem.spec
    return Limits(
        cpu_seconds=spec.limits.cpu_seconds,
        wall_seconds=spec.limits.wall_seconds,
        memory_mb=spec.limits.memory_mb,
    )


def input_bytes(problem: Problem, inputs: Inputs) -> int:
    """How many bytes a case with ``inputs`` takes in the sandbox's input region: at most
    ``run_limits(problem).input_bytes``."""
    names = [p.name for p in problem.spec.params]
    return case_need(CaseArgs(name="case", args=_args(inputs, names)), names)


def _args(inputs: Inputs, names: Sequence[str]) -> dict[str, ArgValue]:
    """Every parameter's value; an omitted optional one is None."""
    return {name: inputs.get(name) for name in names}


def grade_submission(
    problem: Problem,
    code: str,
    sandbox: Sandbox,
    *,
    cases: Sequence[TestCase] | None = None,
    public_only: bool = False,
    raw_timings: dict[str, float] | None = None,
    framework: str | None = None,
) -> GradeReport:
    """``cases`` defaults to the folder's public examples plus its hidden cases, or with
    ``public_only`` to the examples alone (the grader passes the current test set's cases itself,
    stored ones included). The probes always run along.
    Every time is rounded to ``RUN_SECONDS_STEP``; ``raw_timings``
    receives them unrounded (for metrics: a report's are too coarse for millisecond stages)."""
    start = time.perf_counter()
    if cases is None:
        cases = problem.examples if public_only else problem.examples + problem.hidden
    request = build_request(problem, code, cases, framework)
    run = sandbox.run(request)
    ran = time.perf_counter()
    report = grade_run(problem, cases, run)
    report.framework = request.framework
    forbidden = forbidden_text(request, run)
    if forbidden is not None:
        report.error = forbidden
    timings = {"sandbox": ran - start, **report.timings, "total": time.perf_counter() - start}
    if raw_timings is not None:
        raw_timings.update(timings)
    report.timings = {k: rounded(v, RUN_SECONDS_STEP) for k, v in timings.items()}
    return report


def forbidden_text(request: RunRequest, run: RunResult) -> str | None:
    """What a submission that called a forbidden API is told: worded here, from the problem's
    own list (a public case names the API it hit; a hidden case only that it hit one)."""
    hits = [o for o in run.cases if o.error is not None and o.error.type == FORBIDDEN_ERROR]
    if not hits:
        return None
    named = [
        n
        for o in hits
        for n in request.forbidden
        if o.error and o.error.message.startswith(n + " ")
    ]
    if named:
        return f"Your code calls {named[0]}, which this problem forbids: write it yourself."
    return "Your code calls an API this problem forbids: " + ", ".join(request.forbidden) + "."


def grade_run(problem: Problem, cases: Sequence[TestCase], run: RunResult) -> GradeReport:
    """Everything after the sandbox: compare the cases, diagnose from the probes, word it."""
    start = time.perf_counter()
    reports = compare_cases(cases, run, problem.spec.tolerance, problem.spec.outputs)
    result = verdict(run, reports)
    compared = time.perf_counter()

    accepted = result == Verdict.ACCEPTED
    explained = _explain(problem, cases, run, accepted=accepted, outcomes=run.cases)
    requirements, found, alternatives = explained
    public_view = _public_view(problem, cases, run, reports, full=(accepted, explained))
    done = time.perf_counter()

    probes = problem.diagnostics.probes if problem.diagnostics else ()
    # The repeated call of the determinism check is a hidden one too.
    hidden = any(c.visibility != "public" for c in cases) or bool(
        probes or determinism.repeated(cases, probes)
    )
    cap = run_limits(problem).output_bytes
    stdout, stdout_truncated = shown_output(run, cases, "stdout", hidden, cap)
    stderr, stderr_truncated = shown_output(run, cases, "stderr", hidden, cap)
    return GradeReport(
        verdict=result,
        score=score(cases, reports),
        requirements=requirements,
        diagnoses=found,
        tests=reports,
        stdout=stdout,
        stderr=stderr,
        stdout_truncated=stdout_truncated,
        stderr_truncated=stderr_truncated,
        error=_error_text(run, cases, reports),
        load_failure=load_failure(run, problem.spec.function_name),
        timings={"compare": compared - start, "diagnose": done - compared},
        alternatives=alternatives,
        public_view=public_view,
    )


def _explain(
    problem: Problem,
    cases: Sequence[TestCase],
    run: RunResult,
    *,
    accepted: bool,
    outcomes: Sequence[CaseOutcome],
) -> tuple[list[RequirementResult], list[Diagnosis], list[list[str]]]:
    """Requirements, diagnoses and alternatives from the probes; ``accepted``: every case in
    ``outcomes`` that is graded passed; ``outcomes``: the calls whose inputs the in-place check
    may name."""
    diagnostics = problem.diagnostics
    unstable = determinism.diagnosis(problem, run) if run.status == "ok" else None
    if unstable is not None:
        # Random outputs match no model: the probes' outputs say nothing about the requirements.
        reason = "your function gives different outputs for the same inputs"
        return explain.requirements_unchecked(problem, reason), [unstable], []
    if accepted and diagnostics is None:
        return explain.requirements_passed(problem), [], []
    if run.status != "ok" or diagnostics is None:
        reason = "the run ended before the outputs could be checked" if run.status != "ok" else ""
        return explain.requirements_unchecked(problem, reason), [], []
    names = {c.name for c in cases}
    probe_outcomes = {o.name: o for o in run.cases if o.name not in names}
    finding = diagnose(
        problem, fault_table(problem), probe_outcomes, outcomes, cases_failed=not accepted
    )
    if accepted and not finding.codes and not finding.contract:
        return explain.requirements_passed(problem), [], []
    alternatives: list[list[str]] = []
    if len(finding.alternatives) > 1:
        alternatives = [sorted(a) for a in finding.alternatives]
    model = diagnostics.error_model
    return (
        explain.requirements(problem, model, finding),
        explain.diagnoses(problem, model, finding),
        alternatives,
    )


Explained = tuple[list[RequirementResult], list[Diagnosis], list[list[str]]]


def _public_view(
    problem: Problem,
    cases: Sequence[TestCase],
    run: RunResult,
    reports: Sequence[CaseReport],
    full: tuple[bool, Explained] | None = None,
) -> PublicView:
    """What the public cases and the probes say without any hidden case's outcome: for a
    ``summary`` feedback policy. The hidden cases count only as how many passed. ``full``: the
    whole run's ``accepted`` and ``_explain``, reused (as copies) when the public cases alone
    give ``_explain`` the same inputs, which is the common case (a diagnosis costs more than
    the rest of grading a run)."""
    hidden = {c.name for c in cases if c.visibility != "public"}
    public_reports = [r for r in reports if r.visibility == "public"]
    accepted = all(r.status == "passed" for r in public_reports)
    outcomes = [o for o in run.cases if o.name not in hidden]
    # ``_explain`` reads the cases' outcomes only for the inputs they changed in place.
    if full is not None and full[0] == accepted and _mutated(outcomes) == _mutated(run.cases):
        kept, kept_found, kept_alternatives = full[1]
        requirements = [r.model_copy(deep=True) for r in kept]
        found = [d.model_copy(deep=True) for d in kept_found]
        alternatives = [list(a) for a in kept_alternatives]
    else:
        requirements, found, alternatives = _explain(
            problem, cases, run, accepted=accepted, outcomes=outcomes
        )
    return PublicView(
        requirements=requirements,
        diagnoses=found,
        alternatives=alternatives,
        error=_public_error(run, cases, reports),
        hidden_passed=sum(r.status == "passed" for r in reports if r.visibility != "public"),
        hidden_total=len(reports) - len(public_reports),
    )


def _mutated(outcomes: Sequence[CaseOutcome]) -> set[str]:
    return {name for o in outcomes for name in o.mutated_inputs}


def _public_error(
    run: RunResult, cases: Sequence[TestCase], reports: Sequence[CaseReport]
) -> str | None:
    """``_error_text`` without the hidden cases: only the process's own message (the verdict
    says as much) or a public case's traceback."""
    if run.status != "ok":
        return run.message or run.status.replace("_", " ")
    public = [(c, r) for c, r in zip(cases, reports, strict=True) if c.visibility == "public"]
    return _error_text(run, [c for c, _ in public], [r for _, r in public])


HIDDEN_OUTPUT_NOTE = "[output printed during hidden tests is not shown]\n"


def shown_output(
    run: RunResult, cases: Sequence[TestCase], stream: str, hidden: bool, cap: int
) -> tuple[str, bool]:
    """What the student may see of one stream, and whether it reached the size cap: the
    import-time output and the public examples' output, in order (they all run before any hidden
    case). What a hidden case or a probe printed could carry its inputs, so nothing shown depends
    on it, not even whether it printed: the note is there whenever hidden cases ran and something
    is shown, and the cut is judged on the shown text alone."""
    public = {c.name for c in cases if c.visibility == "public"}
    parts = [getattr(run, f"import_{stream}")]
    parts += [getattr(o, stream) for o in run.cases if o.name in public]
    # A public case the run stopped in (a time limit): what it printed before, last.
    parts.append(getattr(run, f"unfinished_{stream}"))
    shown = "".join(parts)
    truncated = len(shown.encode()) >= cap
    if hidden and shown:
        shown += HIDDEN_OUTPUT_NOTE
    return shown, truncated


def _error_text(run: RunResult, cases: Sequence[TestCase], reports: list[CaseReport]) -> str | None:
    """The process's own message, else the first raising case's traceback; of a hidden case
    only that it raised (its traceback is text the submission writes)."""
    if run.status != "ok":
        return run.message or run.status.replace("_", " ")
    outcomes = {o.name: o for o in run.cases}
    for case, report in zip(cases, reports, strict=True):
        outcome = outcomes.get(case.name)
        if report.status != "error" or outcome is None or outcome.error is None:
            continue
        if case.visibility == "hidden":
            return f"A hidden test {report.message}."
        text = outcome.error.traceback or f"{outcome.error.type}: {outcome.error.message}"
        named = crash_hint(outcome.error.type, outcome.error.message)
        return text if named is None else f"{text.rstrip()}\n\n{named[1]}"
    return None
