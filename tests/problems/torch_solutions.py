"""The PyTorch writings of the attention problems, read from their folders: each folder's correct
solution (``solution_torch.py``) and its PyTorch habits (faults.toml ``[habits]``, each a few
edits of that solution), the same ones ``problems check`` grades."""

from __future__ import annotations

import tomllib

from app.problems.errormodel import Habit
from app.problems.loader import problem_folders
from tests.conftest import PROBLEMS_DIR

_FOLDERS = [f for f in problem_folders(PROBLEMS_DIR) if (f / "solution_torch.py").is_file()]

SOLUTIONS = {f.name: (f / "solution_torch.py").read_text(encoding="utf-8") for f in _FOLDERS}


def _habits() -> list[tuple[str, str, Habit]]:
    """Read without loading the folders (that runs every reference: too slow for collection);
    the loader validates the same tables against the whole error model."""
    found = []
    for folder in _FOLDERS:
        raw = tomllib.loads((folder / "faults.toml").read_text(encoding="utf-8"))
        for name, table in raw.get("habits", {}).items():
            habit = Habit.model_validate(table)
            if habit.framework == "torch":
                found.append((folder.name, name, habit))
    return found


# (problem, habit name, habit): every PyTorch habit of every problem.
HABITS = _habits()
