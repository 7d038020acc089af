"""What the problems API returns. Only public material appears in these models."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from app.problems.cases import Result, TestCase
from app.problems.loader import Problem
from app.problems.spec import AnyParam, ProblemLimits


class ProblemSummary(BaseModel):
    id: str
    title: str
    difficulty: str
    summary: str


class RequirementOut(BaseModel):
    id: str
    title: str
    text: str


class ExampleOut(BaseModel):
    name: str
    inputs: dict[str, Any]
    # One array (nested lists), or for several outputs an object with one per name; null for
    # an example that requires an exception (``raises``).
    output: Any
    raises: str | None = None


class ParamOut(BaseModel):
    name: str
    kind: str
    shape: list[str] | None = None
    dtype: str | None = None  # arrays: "float64" or "bool"
    optional: bool = False
    # ints and floats: the bounds, inclusive, and the default the signature shows (a case may
    # omit a float that has one; an int's default is only shown).
    minimum: int | float | None = None
    maximum: int | float | None = None
    default: int | float | None = None


class OutputOut(BaseModel):
    name: str
    shape: list[str]


class ProblemDetail(BaseModel):
    id: str
    title: str
    difficulty: str
    summary: str
    statement_markdown: str
    starter_code: str
    # The starter per framework this problem offers on this host ("numpy" always, "torch" where
    # the folder has one and torch is installed): the editor's framework switch. A submission is
    # graded in the framework its imports show.
    starters: dict[str, str] = {}
    # The folder's frameworks this server does not offer (torch not installed, or switched off
    # with GRADER_OFFER_TORCH=false): the page says so instead of hiding the switch silently.
    frameworks_unavailable: list[str] = []
    function_name: str
    signature: str
    params: list[ParamOut]
    outputs: list[OutputOut]
    # True when the function returns a tuple with one array per entry of ``outputs``.
    multiple_outputs: bool = False
    requirements: list[RequirementOut]
    examples: list[ExampleOut]
    limits: ProblemLimits


def to_json_value(value: Any) -> Any:
    return value.tolist() if hasattr(value, "tolist") else value


def result_to_json(problem: Problem, result: Result | None) -> Any:
    """An array as nested lists; several outputs as an object with one per name."""
    if isinstance(result, tuple):
        return {o.name: part.tolist() for o, part in zip(problem.spec.outputs, result, strict=True)}
    return to_json_value(result)


def example_out(problem: Problem, case: TestCase) -> ExampleOut:
    return ExampleOut(
        name=case.name,
        inputs={p.name: to_json_value(case.inputs.get(p.name)) for p in problem.spec.params},
        output=result_to_json(problem, case.expected),
        raises=case.raises,
    )


def param_out(param: AnyParam) -> ParamOut:
    # ParamOut holds the fields of every kind of parameter; a kind leaves the others None.
    return ParamOut.model_validate(param.model_dump())


def summary_out(problem: Problem) -> ProblemSummary:
    s = problem.spec
    return ProblemSummary(id=s.id, title=s.title, difficulty=s.difficulty, summary=s.summary)


def detail_out(problem: Problem) -> ProblemDetail:
    s = problem.spec
    return ProblemDetail(
        id=s.id,
        title=s.title,
        difficulty=s.difficulty,
        summary=s.summary,
        statement_markdown=problem.statement_markdown,
        starter_code=problem.starter_code,
        starters={f: problem.starters.get(f, problem.starter_code) for f in problem.frameworks},
        frameworks_unavailable=list(problem.frameworks_unavailable),
        function_name=s.function_name,
        signature=s.signature,
        params=[param_out(p) for p in s.params],
        outputs=[OutputOut(name=o.name, shape=o.shape) for o in s.outputs],
        multiple_outputs=s.multiple_outputs,
        requirements=[RequirementOut(id=r.id, title=r.title, text=r.text) for r in s.requirements],
        examples=[example_out(problem, c) for c in problem.examples],
        limits=s.limits,
    )
