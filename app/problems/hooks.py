"""What a problem folder's ``cases.py`` may define besides its cases, and their defaults.

- ``check_case(inputs, dims)``: raise ``InvalidCase`` for a case the signature allows but the
  problem does not (``d_model % num_heads != 0``, a mask of the wrong shape...).
- ``case_warnings(inputs, dims)``: the problem's own warnings for instructor cases that are valid
  but weak for diagnosis (a single head, a saturated softmax...), as ``CaseWarning`` objects. A
  warning's ``about`` lists the dimensions it covers, so the generic ``unit-dimension`` warning
  is not given again for them.

``dims`` holds every symbolic dimension's size by name and every variadic group's sizes as a
tuple under its starred name (``dims["*lead"] == (2, 4)``); a relation between groups, such as
a mask that must broadcast to the scores, is checked here (``app.problems.cases.broadcastable``).
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, Field

from app.problems.cases import Dims, Inputs, InvalidCase, Visibility
from sandbox.inside.errors import HIDDEN_EXCEPTION_NAMES


class CaseWarning(BaseModel):
    code: str
    message: str
    # Dimensions this warning speaks for: never serialized, only read while warnings are made.
    about: tuple[str, ...] = Field(default=(), exclude=True)


CaseCheck = Callable[[Inputs, Dims], None]
WarningHook = Callable[[Inputs, Dims], list[CaseWarning]]


def no_check(inputs: Inputs, dims: Dims) -> None:
    return None


def no_warnings(inputs: Inputs, dims: Dims) -> list[CaseWarning]:
    return []


def exception_name(exc: BaseException) -> str:
    """An exception's type as the sandbox runner reports it: the bare name for built-in types
    (``ValueError``), ``module.QualName`` for the others."""
    cls = type(exc)
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def check_hidden_raises(raises: str | None, visibility: Visibility) -> None:
    """A hidden case can require only an exception type the sandbox names for hidden cases
    (``HIDDEN_EXCEPTION_NAMES``): every other type is reported there as ``Exception``, so
    requiring it (or ``Exception`` itself, which then means "some other type") could not be
    judged."""
    if raises is None or visibility != "hidden":
        return
    if raises == "Exception" or raises not in HIDDEN_EXCEPTION_NAMES:
        allowed = ", ".join(sorted(HIDDEN_EXCEPTION_NAMES - {"Exception"}))
        raise InvalidCase(
            "raises",
            f"a hidden case can require only one of {allowed}: the sandbox does not name "
            f"{raises} for a hidden case",
        )
