"""A run that failed before any case, told the way a student reads it: what kind of failure, a
headline of its own (a missing function is not "does not compile") and the line it points to."""

from __future__ import annotations

import re

from app.grading.schemas import LoadFailure, LoadFailureKind
from sandbox.inside.errors import SUBMISSION_FILENAME
from sandbox.protocol import CaseError, RunResult

_LINE = re.compile(rf'File "{re.escape(SUBMISSION_FILENAME)}", line (\d+)')
# The worker names these two itself; any other type is what Python raised.
_ENTRY_POINT = {"MissingEntryPoint": "missing_function", "EntryPointNotCallable": "not_callable"}
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}
_MAX_MESSAGE = 300


def load_failure(run: RunResult, function_name: str) -> LoadFailure | None:
    err = run.load_error
    if err is None or run.status not in ("compile_error", "runtime_error"):
        return None
    kind = _kind(run.status, err)
    line = _line(err.traceback)
    message = _one_line(err)
    titles: dict[LoadFailureKind, str] = {
        "syntax_error": "Syntax error",
        "import_error": "Import error",
        "missing_function": f"No function named {function_name}",
        "not_callable": f"{function_name} is not a function",
        "raised_on_import": "Error while loading your code",
    }
    title = titles[kind]
    if line is not None and kind not in ("missing_function", "not_callable"):
        title += f" on line {line}"
    return LoadFailure(kind=kind, title=title, message=message, line=line)


def _kind(status: str, err: CaseError) -> LoadFailureKind:
    if status == "runtime_error":
        return "raised_on_import"
    if err.type in _ENTRY_POINT:
        return _ENTRY_POINT[err.type]  # type: ignore[return-value]
    if err.type in _IMPORT_ERRORS:
        return "import_error"
    return "syntax_error"


def _line(traceback: str) -> int | None:
    # The innermost frame of the submission's own file is the line to mark.
    found = _LINE.findall(traceback)
    line = int(found[-1]) if found else 0
    return line if line >= 1 else None


def _one_line(err: CaseError) -> str:
    """The last line of the traceback ("SyntaxError: expected ':'"), else type and message."""
    if err.type in _ENTRY_POINT:
        text = err.message
    else:
        lines = [x.strip() for x in err.traceback.splitlines() if x.strip()]
        text = lines[-1] if lines else f"{err.type}: {err.message}"
    first = text.splitlines()[0] if text else err.type
    return first[:_MAX_MESSAGE]
