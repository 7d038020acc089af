"""Solve TensorJudge problems from Python: ``Judge(url).submit(problem_id, function)``."""

from tensorjudge_client.errors import JudgeError, ServerUnreachable
from tensorjudge_client.judge import Judge
from tensorjudge_client.models import (
    Assignment,
    Attempts,
    Course,
    Problem,
    ProblemSummary,
    Records,
    Result,
)
from tensorjudge_client.source import MissingNamesWarning, SourceError, function_source
from tensorjudge_client.version import __version__

__all__ = [
    "Assignment",
    "Attempts",
    "Course",
    "Judge",
    "JudgeError",
    "MissingNamesWarning",
    "Problem",
    "ProblemSummary",
    "Records",
    "Result",
    "ServerUnreachable",
    "SourceError",
    "__version__",
    "function_source",
]
