"""What the server returns, kept as the JSON it sent: fields this client does not know yet stay
reachable through ``raw`` and ``[...]``, and are shown by the generic parts of the views."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from tensorjudge_client import html, view


class Record:
    """A JSON object from the server with attribute-style reads of the fields views need."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)

    def _list(self, key: str) -> list[dict[str, Any]]:
        return view.dicts(self.raw.get(key))

    def to_json(self) -> str:
        return json.dumps(self.raw, indent=2, ensure_ascii=False)

    @property
    def id(self) -> str:
        return str(self.raw.get("id", ""))

    @property
    def requirements(self) -> list[dict[str, Any]]:
        return self._list("requirements")


class ProblemSummary(Record):
    """One row of ``GET /api/problems``; ``judge.problem(summary.id)`` fetches the statement."""

    @property
    def title(self) -> str:
        return str(self.raw.get("title", self.id))

    @property
    def difficulty(self) -> str:
        return str(self.raw.get("difficulty", ""))

    @property
    def summary(self) -> str:
        return str(self.raw.get("summary", ""))

    def __repr__(self) -> str:
        return f"<Problem {self.id!r}: {self.title} ({self.difficulty})>"

    def _repr_html_(self) -> str:
        return html.records_html("Problem", [self.raw])


R = TypeVar("R", bound=Record)


class Records(list[R], Generic[R]):
    """A list of records that shows as one table (text in a REPL, HTML in Jupyter); still a
    plain list to iterate, index and ``len``. ``row``: what a record shows as its table row
    (default: its JSON as it is)."""

    def __init__(
        self,
        title: str,
        items: list[R],
        row: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(items)
        self.title = title
        self.row = row

    @property
    def raw(self) -> list[dict[str, Any]]:
        return [r.raw for r in self]

    @property
    def rows(self) -> list[dict[str, Any]]:
        return [self.row(r) for r in self.raw] if self.row else self.raw

    def __repr__(self) -> str:
        return view.to_text(view.records_table(self.title, self.rows))

    def _repr_html_(self) -> str:
        return html.records_html(self.title, self.rows)


class Course(Record):
    """One of my courses (``GET /api/courses``): ``id``, ``title``, my ``role``."""

    @property
    def course_id(self) -> int:
        return int(self.raw["id"])

    @property
    def title(self) -> str:
        return str(self.raw.get("title", self.id))

    @property
    def role(self) -> str:
        return str(self.raw.get("role", ""))

    def __repr__(self) -> str:
        return f"<Course {self.id}: {self.title} ({self.role})>"


class Assignment(Record):
    """An assignment of one of my courses; ``mine`` holds my own due date, the credit a
    submission earns now and the attempts I am allowed (students only)."""

    @property
    def assignment_id(self) -> int:
        return int(self.raw["id"])

    @property
    def course_id(self) -> int:
        return int(self.raw["course_id"])

    @property
    def title(self) -> str:
        return str(self.raw.get("title", self.id))

    @property
    def problem_ids(self) -> list[str]:
        return [str(p.get("problem_id")) for p in self._list("problems")]

    @property
    def mine(self) -> dict[str, Any] | None:
        mine = self.raw.get("mine")
        return mine if isinstance(mine, dict) else None

    def __repr__(self) -> str:
        return view.to_text(view.records_table("Assignment", [view.assignment_row(self.raw)]))

    def _repr_html_(self) -> str:
        return html.records_html("Assignment", [view.assignment_row(self.raw)])


class Attempts(Record):
    """My standing on one problem of an assignment (``.../problems/{id}/attempts``): attempts
    used and allowed, the credit a submission earns now and its rule, the feedback I get."""

    @property
    def problem_id(self) -> str:
        return str(self.raw.get("problem_id", ""))

    @property
    def attempts_used(self) -> int:
        return int(self.raw.get("attempts_used", 0))

    @property
    def attempts_left(self) -> int | None:
        """None: no maximum."""
        allowed = self.raw.get("attempts_allowed")
        return max(0, int(allowed) - self.attempts_used) if isinstance(allowed, int) else None

    @property
    def open(self) -> bool:
        return bool(self.raw.get("open"))

    @property
    def credit_now(self) -> float:
        return float(self.raw.get("credit_now", 0.0))

    @property
    def rule(self) -> str:
        return str(self.raw.get("rule", ""))

    def __repr__(self) -> str:
        return view.attempts_line(self.raw)

    def _repr_html_(self) -> str:
        return html.records_html("Attempts", [view.attempts_row(self.raw)])


class Problem(Record):
    """``GET /api/problems/{id}``. In Jupyter it shows as Markdown (math rendered there)."""

    @property
    def title(self) -> str:
        return str(self.raw.get("title", self.id))

    @property
    def statement(self) -> str:
        return str(self.raw.get("statement_markdown", ""))

    @property
    def starter_code(self) -> str:
        return str(self.raw.get("starter_code", ""))

    def starter(self, framework: str = "numpy") -> str | None:
        """The starter written in ``framework`` ("numpy", "torch"), or None where the problem
        (or its server) does not offer it. A server from before frameworks offers NumPy only."""
        starters = self.raw.get("starters") or {"numpy": self.starter_code}
        code = starters.get(framework) if isinstance(starters, dict) else None
        return str(code) if code is not None else None

    @property
    def function_name(self) -> str | None:
        name = self.raw.get("function_name")
        return name if isinstance(name, str) else None

    @property
    def examples(self) -> list[dict[str, Any]]:
        return self._list("examples")

    def _repr_markdown_(self) -> str:
        return view.problem_markdown(self.raw)

    def __repr__(self) -> str:
        return view.to_text(view.problem_renderable(self.raw))


class Result(Record):
    """A finished submission (``GET /api/submissions/{id}`` once ``status`` is ``done``). Its
    HTML view (Jupyter) is the web page's result panel; its text view suits a plain REPL."""

    @property
    def verdict(self) -> str | None:
        verdict = self.raw.get("verdict")
        return verdict if isinstance(verdict, str) else None

    @property
    def accepted(self) -> bool:
        return self.verdict == "accepted"

    @property
    def score(self) -> float | None:
        score = self.raw.get("score")
        return float(score) if isinstance(score, int | float) else None

    @property
    def diagnoses(self) -> list[dict[str, Any]]:
        return self._list("diagnoses")

    @property
    def tests(self) -> list[dict[str, Any]]:
        return self._list("tests")

    def _repr_html_(self) -> str:
        return html.result_html(self.raw)

    def __repr__(self) -> str:
        return view.to_text(view.result_renderable(self.raw))
