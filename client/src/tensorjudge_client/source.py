"""Turns a function object into code the grader can run on its own: the function's source plus
what it uses from its module (imports, helper functions, simple constants)."""

from __future__ import annotations

import ast
import builtins
import contextlib
import inspect
import symtable
import sys
import textwrap
import types
import warnings
from collections.abc import Callable, Iterator
from typing import Any

# Module-level values copied into the submission as literals.
_LITERALS = (int, float, complex, str, bytes, bool, type(None))


class SourceError(ValueError):
    """The function's source cannot be found or cannot stand alone."""


class MissingNamesWarning(UserWarning):
    """The function uses names that are not sent with it: on the grader they raise
    ``NameError``."""


def free_names(source: str) -> set[str]:
    """Names the code reads from its module (not assigned inside it, not parameters), in the
    function and everything nested in it. Read from the source's symbol table, so an attribute
    (``np.exp``'s ``exp``) is not taken for a name."""
    found: set[str] = set()

    def walk(table: symtable.SymbolTable, top: bool) -> None:
        for symbol in table.get_symbols():
            if not symbol.is_referenced():
                continue
            if (top and not symbol.is_imported()) or symbol.is_global():
                found.add(symbol.get_name())
        for child in table.get_children():
            walk(child, False)

    walk(symtable.symtable(source, "<function>", "exec"), True)
    return found


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


def _constant_source(value: Any) -> str | None:
    """The text of a plain constant: a literal's repr, or a frozenset of literals (whose repr
    is no literal); its elements sorted, so the same constant always reads the same."""
    if isinstance(value, frozenset) and all(_is_literal(v) for v in value):
        return f"frozenset({{{', '.join(sorted(map(repr, value)))}}})" if value else "frozenset()"
    return repr(value) if _is_literal(value) else None


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
    # Free names of every function sent, and the names the sent code defines.
    used: dict[str, None] = {}
    carried: set[str] = set()

    def visit(f: types.FunctionType) -> str:
        seen.add(id(f))
        own = _source(f)
        carried.add(f.__name__)
        # A syntax error is the grader's to report, with its line.
        with contextlib.suppress(SyntaxError):
            used.update(dict.fromkeys(sorted(free_names(own))))
        for name in dict.fromkeys(_global_names(f.__code__)):
            if name not in f.__globals__:
                continue  # a builtin, an attribute name, or not defined yet
            value = f.__globals__[name]
            if inspect.isfunction(value) and value.__module__ == f.__module__:
                # A helper beside it: its source goes along (it cannot be imported from a
                # notebook or from the student's own file inside the sandbox).
                if id(value) not in seen:
                    definitions.append(visit(value))
                carried.add(name)
                continue
            line = _import_line(name, value)
            if line is not None:
                carried.add(name)
                if line not in imports:
                    imports.append(line)
            elif (text := _constant_source(value)) is not None:
                carried.add(name)
                assignment = f"{name} = {text}"
                if assignment not in definitions:
                    definitions.append(assignment)
        return own

    main = visit(fn)
    missing = [n for n in used if n not in carried and not hasattr(builtins, n)]
    if missing:
        warnings.warn(missing_message(fn, missing), MissingNamesWarning, stacklevel=_caller_level())
    parts = ["\n".join(imports)] if imports else []
    parts += [d.strip() for d in definitions]
    parts.append(main.strip())
    return "\n\n\n".join(parts) + "\n"


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside this package: the student's cell or
    script, whichever client call led here."""
    level = 1
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith(
        "tensorjudge_client"
    ):
        level, frame = level + 1, frame.f_back
    return level


def missing_message(fn: Callable[..., Any], missing: list[str]) -> str:
    """Which names, and what to do: the function is sent anyway (the grader has the final say,
    and a name may be meant to fail)."""
    many = len(missing) > 1
    return (
        f"{fn.__name__} uses {', '.join(missing)}, which the grader will not have: only "
        "imports, helper functions and plain constants are sent along with a function, so "
        f"{'they raise' if many else 'it raises'} NameError there. Define "
        f"{'them' if many else 'it'} inside the function, or submit the code as text."
    )
