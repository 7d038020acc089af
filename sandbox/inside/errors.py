"""What a case's error says: described by the worker, cleaned by the supervisor and, for a hidden
case, cut down to a category. The host imports the caps and the names from here too."""

from __future__ import annotations

from typing import Any

# The file name the submission is compiled under: its tracebacks keep only frames of this file.
SUBMISSION_FILENAME = "submission.py"
MAX_TYPE_NAME = 200
MAX_MESSAGE = 4096
MAX_TRACEBACK = 16384
MAX_BASES = 16

# The exception types a hidden case's error may name, so that an expected-error case can be
# judged outside the sandbox: a short fixed list of standard ones. Any other (a class the
# submission defines is ``submission.Name``) is reported as ``Exception``. The name is still the
# submission's to choose, but only among these, and the host never shows it.
HIDDEN_EXCEPTION_NAMES = frozenset(
    {
        "ArithmeticError",
        "AssertionError",
        "Exception",
        "FloatingPointError",
        "IndexError",
        "KeyError",
        "LookupError",
        "MemoryError",
        "NotImplementedError",
        "OverflowError",
        "RuntimeError",
        "TypeError",
        "ValueError",
        "ZeroDivisionError",
        "numpy.linalg.LinAlgError",
    }
)
# What a hidden case's error may say: one of these, nothing more (``InvalidOutput``: the result
# was not what the job asks for).
# ``ForbiddenAPI``: it called an API the problem forbids (``frameworks.forbid``).
HIDDEN_ERROR_TYPES = HIDDEN_EXCEPTION_NAMES | {"InvalidOutput", "ForbiddenAPI"}


def type_name(obj: Any) -> str:
    try:
        cls = type(obj)
        return (
            f"{cls.__module__}.{cls.__qualname__}" if cls.__module__ != "builtins" else cls.__name__
        )
    except Exception:
        return "an object of an unprintable type"


def describe(exc: BaseException) -> dict[str, Any]:
    """Type, message and the traceback trimmed to the submission's own frames."""
    import traceback

    try:
        message = str(exc)[:MAX_MESSAGE]
    except BaseException:
        message = "<exception message could not be printed>"
    try:
        frames = [
            f for f in traceback.extract_tb(exc.__traceback__) if f.filename == SUBMISSION_FILENAME
        ]
        if isinstance(exc, SyntaxError) and exc.lineno is not None:
            text = "".join(traceback.format_exception_only(type(exc), exc))
        else:
            lines = traceback.StackSummary.from_list(frames).format()
            text = "Traceback (most recent call last):\n" + "".join(lines) if lines else ""
            text += f"{type_name(exc)}: {message}\n"
    except BaseException:
        text = ""
    # numpy raises its own MemoryError subclasses; the host only needs to know it was memory.
    name = "MemoryError" if isinstance(exc, MemoryError) else type_name(exc)
    return {
        "type": name[:MAX_TYPE_NAME],
        "message": message,
        "traceback": text[-MAX_TRACEBACK:],
        "bases": bases_of(exc),
    }


def bases_of(exc: BaseException) -> list[str]:
    """The names of the exception's base classes, nearest first: an expected error may be met
    by a subclass of the type a case requires (a ``ShapeError(ValueError)``)."""
    try:
        mro = type(exc).__mro__[1:]
        names = [
            c.__name__ if c.__module__ == "builtins" else f"{c.__module__}.{c.__qualname__}"
            for c in mro
            if c not in (BaseException, object)
        ]
        return [n[:MAX_TYPE_NAME] for n in names[:MAX_BASES]]
    except BaseException:
        return []


def clean_error(err: Any) -> dict[str, Any]:
    """An error as the worker (untrusted) reported it, reduced to three capped strings."""
    if not isinstance(err, dict):
        return {"type": "Error", "message": "malformed error report", "traceback": "", "bases": []}
    bases = err.get("bases")
    return {
        "type": str(err.get("type", "Error"))[:MAX_TYPE_NAME],
        "message": str(err.get("message", ""))[:MAX_MESSAGE],
        "traceback": str(err.get("traceback", ""))[:MAX_TRACEBACK],
        "bases": [str(b)[:MAX_TYPE_NAME] for b in bases[:MAX_BASES]]
        if isinstance(bases, list)
        else [],
    }


def error_category(error: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a hidden case's error may say: its type if it is one of ``HIDDEN_ERROR_TYPES``."""
    if error is None:
        return None
    # A type outside the list is named by its nearest listed base (a ShapeError(ValueError) is
    # a ValueError); the bases kept are listed names only.
    bases = [b for b in error.get("bases", []) if b in HIDDEN_EXCEPTION_NAMES]
    kind = error["type"] if error["type"] in HIDDEN_ERROR_TYPES else (bases or ["Exception"])[0]
    return {"type": kind, "message": "", "traceback": "", "bases": bases}
