"""Schemathesis's own engine (what ``schemathesis run --checks all`` runs: examples, coverage,
fuzzing and stateful phases), in process against the ASGI app, with every check."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import schemathesis
from schemathesis.config import SchemathesisConfig
from schemathesis.engine import Status, events, from_schema

from app.core.config import REPO_ROOT
from tests.support.fuzz import in_shard

# A limit on time, not part of what the document promises; the rest is every check there is.
NOT_CHECKED = ["max_response_time"]


@dataclass
class Outcome:
    operations: set[str]
    tested: set[str] = field(default_factory=set)
    # (check title, operation) -> the first failure's message and what answered it.
    failures: dict[tuple[str, str], str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for title, _ in self.failures:
            found[title] = found.get(title, 0) + 1
        return found

    def report(self) -> str:
        lines = [f"{len(self.failures)} failures: {self.counts()}"]
        lines += [f"{op}: {title}: {text}" for (title, op), text in sorted(self.failures.items())]
        return "\n".join(lines + self.errors)


def check_document(
    app: Any, headers: dict[str, str], examples: int, shard: tuple[int, int] = (0, 1)
) -> Outcome:
    """Every operation of ``app``'s document in ``shard`` (its index, the number of shards:
    tests/support/fuzz.py ``in_shard``), with every check and ``headers`` on every request
    (none: a student)."""
    config = SchemathesisConfig.from_path(REPO_ROOT / "schemathesis.toml")
    schema = schemathesis.openapi.from_dict(_shard_of(app.openapi(), shard), config=config)
    schema.app = app  # what ``from_asgi`` sets: requests go to the app in process
    schema.location = "/openapi.json"
    schema.config.update(headers=headers or None, workers=1)
    schema.config.checks.update(included_check_names=["all"], excluded_check_names=NOT_CHECKED)
    schema.config.generation.update(max_examples=examples, database="none")
    operations = {result.ok().label for result in schema.get_all_operations()}
    outcome = Outcome(operations=operations)
    for event in from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            if event.label in operations and event.status != Status.SKIP:
                outcome.tested.add(event.label)
            _collect(event, outcome)
        elif isinstance(event, events.NonFatalError | events.FatalError):
            outcome.errors.append(f"error: {event!r:.2000}")
    return outcome


def _shard_of(document: dict[str, Any], shard: tuple[int, int]) -> dict[str, Any]:
    """The document with only the operations of ``shard`` under ``paths`` (components whole)."""
    paths = {path: item for path, item in document["paths"].items() if in_shard(path, *shard)}
    return {**document, "paths": paths}


def _collect(event: events.ScenarioFinished, outcome: Outcome) -> None:
    recorder = event.recorder
    for case_id, nodes in recorder.checks.items():
        for node in nodes:
            if node.failure_info is None:
                continue
            case = recorder.cases[case_id].value
            interaction = recorder.interactions.get(case_id)
            response = interaction.response if interaction is not None else None
            answer = f"{response.status_code} {response.content[:300]!r}" if response else "-"
            key = (node.failure_info.failure.title, case.operation.label)
            outcome.failures.setdefault(
                key,
                f"{node.failure_info.failure.message.splitlines()[0]} | {case.method} "
                f"{case.formatted_path} query={case.query} body={case.body!r:.200} -> {answer}",
            )
