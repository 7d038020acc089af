"""Every starter, and the one ``problems new`` writes, begins with ``import numpy as np``: code
written the natural way (``np.exp(...)``) must not fail with ``NameError: name 'np'``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from app.authoring.skeleton import write_skeleton
from app.problems.loader import load_problem, problem_folders
from tests.conftest import PROBLEMS_DIR

FIXTURES = Path(__file__).parent
FOLDERS = [
    *problem_folders(PROBLEMS_DIR),
    FIXTURES / "fixtures" / "contract-demo",
    FIXTURES / "fixtures-variadic" / "variadic-demo",
]


def first_statement(starter: Path) -> str:
    tree = ast.parse(starter.read_text(encoding="utf-8"))
    body = tree.body
    # A module docstring may come first; the import is the first statement after it.
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    assert body, f"{starter} is empty"
    return ast.unparse(body[0])


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_every_starter_imports_numpy_first(folder: Path) -> None:
    assert first_statement(folder / "starter.py") == "import numpy as np"


def test_every_problem_folder_is_covered() -> None:
    assert len(problem_folders(PROBLEMS_DIR)) >= 5


def test_the_skeleton_starter_imports_numpy_first(tmp_path: Path) -> None:
    folder = write_skeleton("row-scale", tmp_path)
    assert first_statement(folder / "starter.py") == "import numpy as np"


def starter_call(folder: Path, function_name: str) -> str:
    """``name(a, b, axis=-1)`` as the starter declares its entry point."""
    tree = ast.parse((folder / "starter.py").read_text(encoding="utf-8"))
    (fn,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function_name]
    args = fn.args.args
    defaults = [None] * (len(args) - len(fn.args.defaults)) + list(fn.args.defaults)
    pairs = zip(args, defaults, strict=True)
    parts = [a.arg if d is None else f"{a.arg}={ast.unparse(d)}" for a, d in pairs]
    return f"{function_name}({', '.join(parts)})"


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_the_signature_shows_the_starters_defaults(folder: Path) -> None:
    spec = load_problem(folder).spec
    assert spec.signature.split(" -> ")[0] == starter_call(folder, spec.function_name)


def test_the_softmax_backward_signature_shows_axis_default() -> None:
    spec = load_problem(PROBLEMS_DIR / "softmax-backward").spec
    assert spec.signature == "softmax_backward(probabilities, upstream, axis=-1) -> np.ndarray"
