"""Turns a function object into code the grader can run on its own: the function's source plus
what it uses from its module (imports, helper functions, simple constants)."""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
import types
from collections.abc import Callable, Iterator
from typing import Any

# Module-level values copied into the submission as literals.
_LITERALS = (int, float, complex, str, bytes, bool, type(None))


class SourceError(ValueError):
    """The function's source cannot be found or cannot stand alone."""


def _global_names(code: types.CodeType) -> Iterator[str]:
    """Names the code (and its nested functions, lambdas, comprehensions) looks up globally."""
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _global_names(const)


def _is_literal(value: Any) -> bool:
    """A value whose repr reads back as the same value (so not nan, not an array)."""
    if isinstance(value, tuple):
        return all(_is_literal(v) for v in value)
    if not isinstance(value, _LITERALS):
        return False
    try:
        return bool(ast.literal_eval(repr(value)) == value)
    except (ValueError, SyntaxError):
        return False


def _import_line(name: str, value: Any) -> str | None:
    """``import numpy as np`` / ``from math import sqrt``, when ``value`` came from a module."""
    if isinstance(value, types.ModuleType):
        module = value.__name__
        if module == name:
            return f"import {module}"
        parent, _, last = module.rpartition(".")
        if parent and last == name:
            return f"from {parent} import {name}"
        return f"import {module} as {name}"
    module_name = getattr(value, "__module__", None)
    attr = getattr(value, "__name__", None)
    if not isinstance(module_name, str) or not isinstance(attr, str):
        return None
    home = sys.modules.get(module_name)
    if home is None or module_name == "__main__" or getattr(home, attr, None) is not value:
        return None
    return f"from {module_name} import {attr}" + ("" if attr == name else f" as {name}")


def _source(fn: Callable[..., Any]) -> str:
    if getattr(fn, "__name__", "") == "<lambda>":
        raise SourceError("submit a function defined with def, not a lambda")
    try:
        return textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError) as exc:
        raise SourceError(
            f"cannot read the source of {fn!r} ({exc}); pass the code as a string instead"
        ) from None


def function_source(fn: Callable[..., Any]) -> str:
    """The function's source, preceded by the module-level imports, helper functions (defined
    in the same module, recursively) and literal constants it refers to."""
    if not inspect.isfunction(fn):
        raise SourceError(f"expected a function or code text, got {type(fn).__name__}")
    imports: list[str] = []
    definitions: list[str] = []
    seen: set[int] = set()

    def visit(f: types.FunctionType) -> str:
        seen.add(id(f))
        own = _source(f)
        for name in dict.fromkeys(_global_names(f.__code__)):
            if name not in f.__globals__:
                continue  # a builtin, an attribute name, or not defined yet
            value = f.__globals__[name]
            if inspect.isfunction(value) and value.__module__ == f.__module__:
                # A helper beside it: its source goes along (it cannot be imported from a
                # notebook or from the student's own file inside the sandbox).
                if id(value) not in seen:
                    definitions.append(visit(value))
                continue
            line = _import_line(name, value)
            if line is not None:
                if line not in imports:
                    imports.append(line)
            elif _is_literal(value):
                assignment = f"{name} = {value!r}"
                if assignment not in definitions:
                    definitions.append(assignment)
        return own

    main = visit(fn)
    parts = ["\n".join(imports)] if imports else []
    parts += [d.strip() for d in definitions]
    parts.append(main.strip())
    return "\n\n\n".join(parts) + "\n"
