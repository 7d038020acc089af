"""A malformed problem folder fails loading with a message naming the file and the field."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.core.config import Settings
from app.main import create_app
from app.problems.loader import ProblemLoadError, load_problem, load_problems
from tests.conftest import PROBLEMS_DIR


@pytest.fixture
def problem_dir(tmp_path: Path) -> Path:
    target = tmp_path / "problems" / "multi-head-attention"
    shutil.copytree(PROBLEMS_DIR / "multi-head-attention", target)
    return target


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1))


def _error(problem_dir: Path) -> str:
    with pytest.raises(ProblemLoadError) as info:
        load_problem(problem_dir)
    return str(info.value)


def test_copy_of_real_problem_loads(problem_dir: Path):
    assert load_problem(problem_dir).id == "multi-head-attention"


@pytest.mark.parametrize(
    "name", ["problem.toml", "statement.md", "starter.py", "reference.py", "cases.py"]
)
def test_missing_file_is_named(problem_dir: Path, name: str):
    (problem_dir / name).unlink()
    assert _error(problem_dir) == f"{problem_dir / name}: missing"


def test_invalid_toml_names_the_file(problem_dir: Path):
    _edit(problem_dir / "problem.toml", 'title = "Multi-head attention"', "title = ")
    message = _error(problem_dir)
    assert message.startswith(f"{problem_dir / 'problem.toml'}: invalid TOML")


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ('difficulty = "medium"', 'difficulty = "impossible"', "difficulty"),
        ("cpu_seconds = 5", "cpu_seconds = -1", "limits.cpu_seconds"),
        ("rtol = 1e-7", 'rtol = "tight"', "tolerance.rtol"),
        ('id = "scale-scores"', 'id = "Scale Scores!"', "requirements.2.id"),
        ('{ name = "num_heads", kind = "int"', '{ name = "num_heads", kind = "string"', "params.7"),
        ('summary = "Implement', 'colour = "red"\nsummary = "Implement', "colour"),
    ],
)
def test_bad_field_is_named(problem_dir: Path, old: str, new: str, field: str):
    _edit(problem_dir / "problem.toml", old, new)
    message = _error(problem_dir)
    assert message.startswith(f"{problem_dir / 'problem.toml'}: {field}"), message


def test_an_int_default_outside_its_bounds_is_refused(problem_dir: Path):
    toml = problem_dir / "problem.toml"
    _edit(toml, "minimum = 1, maximum = 64 }", "minimum = 1, maximum = 64, default = 0 }")
    message = _error(problem_dir)
    assert message.startswith(f"{problem_dir / 'problem.toml'}: params.7"), message
    assert "default 0 is outside [1, 64]" in message


def test_duplicate_requirement_ids_are_rejected(problem_dir: Path):
    _edit(problem_dir / "problem.toml", 'id = "scale-scores"', 'id = "split-heads"')
    assert "duplicate names ['split-heads']" in _error(problem_dir)


def test_id_must_match_folder(problem_dir: Path):
    renamed = problem_dir.with_name("attention")
    problem_dir.rename(renamed)
    assert _error(renamed) == (
        f"{renamed / 'problem.toml'}: id: is 'multi-head-attention' but the folder is 'attention'"
    )


def test_reference_without_entry_point(problem_dir: Path):
    _edit(problem_dir / "reference.py", "def multi_head_attention(", "def attention(")
    assert _error(problem_dir) == (
        f"{problem_dir / 'reference.py'}: defines no function 'multi_head_attention'"
    )


def test_reference_that_fails_to_import(problem_dir: Path):
    (problem_dir / "reference.py").write_text("import numpy as np\nraise RuntimeError('boom')\n")
    assert "reference.py: failed to import: RuntimeError: boom" in _error(problem_dir)


def test_case_with_inconsistent_shape_names_the_case_and_input(problem_dir: Path):
    _edit(
        problem_dir / "cases.py",
        '"V": rng.standard_normal((batch, n_k, d_model)),',
        '"V": rng.standard_normal((batch, n_k + 1, d_model)),',
    )
    message = _error(problem_dir)
    assert message.startswith(
        f"{problem_dir / 'cases.py'}: public_examples()[two-heads]: V: axis 1"
    )


def test_case_violating_problem_constraint(problem_dir: Path):
    _edit(
        problem_dir / "cases.py",
        '_case("two-heads", rng, 1, 3, 3, 4, 2,',
        '_case("two-heads", rng, 1, 3, 3, 4, 3,',
    )
    assert "num_heads: d_model=4 is not divisible by num_heads=3" in _error(problem_dir)


def test_empty_problems_dir(tmp_path: Path):
    with pytest.raises(ProblemLoadError, match="contains no problem folders"):
        load_problems(tmp_path)


def test_app_refuses_to_start_with_a_malformed_problem(problem_dir: Path, tmp_path: Path):
    _edit(problem_dir / "problem.toml", 'difficulty = "medium"', 'difficulty = "impossible"')
    settings = Settings(data_dir=tmp_path / "data", problems_dir=problem_dir.parent)
    with pytest.raises(ProblemLoadError, match=r"problem\.toml: difficulty"):
        create_app(settings)


def test_a_hidden_case_may_not_share_an_example_name(problem_dir: Path):
    # Results are matched by name: such a case would be graded against the example's output.
    _edit(
        problem_dir / "cases.py", '("self-2-heads", 1, 4, 4, 8, 2)', '("two-heads", 1, 4, 4, 8, 2)'
    )
    message = _error(problem_dir)
    assert "case names ['two-heads'] are used by both" in message
    assert "hidden_cases()" in message
