"""Reading a module's imports from its source, without running it (architecture tests)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Import:
    module: str  # "" for ``from . import x``
    level: int  # 0: absolute; n: relative, n dots
    line: int


def imports(path: Path) -> list[Import]:
    """Every import in ``path``, including those inside functions: a lazy import still couples
    two modules."""
    found: list[Import] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [Import(alias.name, 0, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append(Import(node.module or "", node.level, node.lineno))
    return found


def modules(folder: Path) -> list[Path]:
    """The Python files under ``folder``, compiled caches left out."""
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)
