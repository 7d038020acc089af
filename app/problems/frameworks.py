"""Which framework a submission is written in, and which this host can run.

A submission's framework is read from its own imports (``import torch``, ``from torch...``):
there is nothing to store beside the code, and the grading is the same whatever client sent it.
Everything outside the sandbox stays NumPy; the framework only changes what the function is
handed and may return inside (``sandbox/inside/frameworks.py``).
"""

from __future__ import annotations

import ast
from functools import lru_cache

from sandbox.backends.runtime import find_torch

FRAMEWORKS = ("numpy", "torch")


@lru_cache
def framework_installed(framework: str) -> bool:
    """NumPy always; torch where the optional extra is installed (it is then in the sandbox's
    runtime too)."""
    if framework == "numpy":
        return True
    return framework == "torch" and find_torch() is not None


def detect_framework(code: str) -> str:
    """ "torch" when the code imports torch at any depth, "numpy" otherwise (a submission that
    does not parse is graded as NumPy: its compile error is the sandbox's to report)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return "numpy"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(
            a.name == "torch" or a.name.startswith("torch.") for a in node.names
        ):
            return "torch"
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module is not None
            and (node.module == "torch" or node.module.startswith("torch."))
        ):
            return "torch"
    return "numpy"


def framework_for(offered: tuple[str, ...], code: str, asked: str | None = None) -> str:
    """The framework a submission is graded in: the one asked for, else the one its imports
    show; NumPy when the problem (or this host) does not offer it."""
    chosen = asked or detect_framework(code)
    return chosen if chosen in offered else "numpy"
