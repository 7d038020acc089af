"""What the problems API returns. Only public material appears in these models."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from app.problems.cases import TestCase
from app.problems.loader import Problem
from app.problems.spec import Limits


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
    output: Any


class ParamOut(BaseModel):
    name: str
    kind: str
    shape: list[str] | None = None


class ProblemDetail(BaseModel):
    id: str
    title: str
    difficulty: str
    summary: str
    statement_markdown: str
    starter_code: str
    function_name: str
    signature: str
    params: list[ParamOut]
    requirements: list[RequirementOut]
    examples: list[ExampleOut]
    limits: Limits


def to_json_value(value: Any) -> Any:
    return value.tolist() if hasattr(value, "tolist") else value


def example_out(case: TestCase) -> ExampleOut:
    return ExampleOut(
        name=case.name,
        inputs={k: to_json_value(v) for k, v in case.inputs.items()},
        output=to_json_value(case.expected),
    )


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
        function_name=s.function_name,
        signature=s.signature,
        params=[
            ParamOut(name=p.name, kind=p.kind, shape=getattr(p, "shape", None)) for p in s.params
        ],
        requirements=[RequirementOut(id=r.id, title=r.title, text=r.text) for r in s.requirements],
        examples=[example_out(c) for c in problem.examples],
        limits=s.limits,
    )
