"""``problems check`` grades a folder's PyTorch writing: its PyTorch reference
(``solution_torch.py``: every fault flag written in torch, the plain call correct) through the idiom
matrix, the plain call and each habit of faults.toml ``[habits]``, in the real sandbox; a fault
written in torch diagnosed otherwise than in NumPy, a flag the torch reference lacks, a habit
diagnosed as anything but what it expects, an edit that does not apply, or a missing solution is
a defect naming faults.toml's field or the file."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from app.authoring.check import Defect, _grade_frameworks, _takes_the_flags
from app.grading.matrix import Entry, host_matrix
from app.problems.loader import ProblemLoadError, load_problem
from sandbox.backends.runtime import find_torch
from sandbox.protocol import Sandbox
from tests.conftest import PROBLEMS_DIR
from tests.grading.conftest import bwrap  # noqa: F401  (the real sandbox fixture)
from tests.support.folders import edit

pytestmark = pytest.mark.skipif(find_torch() is None, reason="the torch extra is not installed")

HABIT = """
[habits.fill-where-kept]
framework = "torch"
expect = "mask-inverted"
edits = [["masked_fill(mask,", "masked_fill(~mask,"]]
seen_in = "a test"
"""


def masked_copy(tmp_path: Path) -> Path:
    target = tmp_path / "masked-attention"
    shutil.copytree(
        PROBLEMS_DIR / "masked-attention", target, ignore=shutil.ignore_patterns("__pycache__")
    )
    return target


def framework_check(
    folder: Path, sandbox: Sandbox | None, matrix: bool = False
) -> tuple[list[str], list[Defect]]:
    """The check's framework pass on ``folder``; with ``matrix``, the idiom matrix too."""
    notes: list[str] = []
    defects, defect = collector()
    problem = load_problem(folder)
    entries: list[Entry] = host_matrix(problem) if matrix else []
    _grade_frameworks(problem, entries, sandbox, notes.append, defect)  # type: ignore[arg-type]
    return notes, defects


def collector() -> tuple[list[Defect], Callable[[Path, str | None, str], None]]:
    """A list of defects, and the ``defect`` callback of the check that fills it."""
    defects: list[Defect] = []

    def defect(path: Path, where: str | None, message: str) -> None:
        defects.append(Defect(path, where, message))

    return defects, defect


@pytest.mark.slow
def test_a_fault_written_wrong_in_torch_is_a_defect_of_the_torch_reference(
    tmp_path: Path,
    bwrap: Sandbox,  # noqa: F811
) -> None:
    folder = masked_copy(tmp_path)
    solution = folder / "solution_torch.py"
    # The torch reference's scale-dv now scales by sqrt(d_k), as the correct call does; NumPy's
    # still scales by sqrt(d_v). Only the models run in torch can show the difference.
    edit(solution, "math.sqrt(v.shape[-1])", "math.sqrt(q.shape[-1])")
    notes, defects = framework_check(folder, bwrap, matrix=True)
    assert defects, notes
    assert {(d.path, d.field) for d in defects} == {(solution, None)}, defects
    assert all("'scale-dv'" in d.message for d in defects), defects
    assert any(
        d.message.startswith(
            "in the sandbox written in torch (solution_torch.py) ['scale-dv'] is diagnosed as "
        )
        for d in defects
    ), defects
    # The plain call is untouched, and still accepted.
    assert "sandbox (torch): the solution is accepted" in notes


def test_a_flag_the_torch_reference_lacks_is_a_defect(tmp_path: Path) -> None:
    folder = masked_copy(tmp_path)
    solution = folder / "solution_torch.py"
    edit(solution, '        "mask-fill-tiny",\n', "")
    defects, defect = collector()
    assert not _takes_the_flags(load_problem(folder), solution, defect)
    assert defects == [
        Defect(
            solution,
            "FAULTS",
            "flags differ from solution_torch.py FAULTS: only in faults.toml ['mask-fill-tiny'], "
            "only in solution_torch.py []",
        )
    ]


@pytest.mark.slow
def test_a_habit_diagnosed_otherwise_and_an_edit_that_does_not_apply_are_defects(
    tmp_path: Path,
    bwrap: Sandbox,  # noqa: F811
) -> None:
    folder = masked_copy(tmp_path)
    faults = folder / "faults.toml"
    # The shipped habit now claims another fault; a second one edits text the solution lacks.
    edit(faults, 'expect = "mask-inverted"', 'expect = "mask-ignored"')
    faults.write_text(faults.read_text() + HABIT.replace("masked_fill(mask,", "masked_fill(m,"))
    notes, defects = framework_check(folder, bwrap)
    assert "sandbox (torch): the solution is accepted" in notes
    by_field = {d.field: d for d in defects}
    assert set(by_field) == {"habits.masked-fill-keep-mask", "habits.fill-where-kept"}, defects
    wrong = by_field["habits.masked-fill-keep-mask"]
    assert wrong.path == faults
    assert wrong.message == "diagnosed as mask-inverted, not 'mask-ignored'"
    assert "'masked_fill(m,' is not in the solution" in by_field["habits.fill-where-kept"].message


def test_a_folder_offering_torch_without_a_solution_is_a_defect(tmp_path: Path) -> None:
    folder = masked_copy(tmp_path)
    (folder / "solution_torch.py").unlink()
    # No sandbox run is reached: the missing file is the defect.
    _notes, defects = framework_check(folder, None)
    assert [(d.path, d.message) for d in defects] == [
        (
            folder / "solution_torch.py",
            "missing: frameworks lists 'torch'; a correct solution in it",
        )
    ]


def test_a_habit_must_expect_a_code_of_the_model(tmp_path: Path) -> None:
    folder = masked_copy(tmp_path)
    faults = folder / "faults.toml"
    faults.write_text(faults.read_text() + HABIT.replace('"mask-inverted"', '"no-such-fault"'))
    with pytest.raises(ProblemLoadError, match=r"habits\.fill-where-kept: expect 'no-such-fault'"):
        load_problem(folder)
