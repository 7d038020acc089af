"""``python -m app problems new`` and ``check``: every folder under problems/ passes the check
(the reference and each single-fault model graded in the real sandbox), a fresh skeleton passes
it, and every defect is reported with its file and field."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.problems.loader import ProblemLoadError, load_problem, problem_folders
from sandbox.backends.runtime import find_torch
from tests.conftest import PROBLEMS_DIR
from tests.support.folders import edit

DEMO = Path(__file__).parent / "fixtures" / "contract-demo"
VARIADIC = Path(__file__).parent / "fixtures-variadic" / "variadic-demo"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", "problems", *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=cwd,
    )


@pytest.mark.parametrize(
    "folder", [*problem_folders(PROBLEMS_DIR), DEMO, VARIADIC], ids=lambda p: p.name
)
def test_every_problem_folder_passes_the_check(folder: Path):
    done = run("check", str(folder))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"== {folder.name}: OK" in done.stdout
    assert "sandbox: the reference is accepted" in done.stdout
    assert "statement: every formula parses" in done.stdout
    if (folder / "solution_torch.py").is_file() and find_torch() is not None:
        # The PyTorch writing: the matrix with every fault written in torch, the solution and
        # its habits.
        assert re.search(
            r"idiom matrix written in torch \(solution_torch.py\), (\d+) models graded, \1 "
            r"diagnosed as on the host",
            done.stdout,
        ), done.stdout
        assert "sandbox (torch): the solution is accepted" in done.stdout


def test_a_new_skeleton_passes_the_check(tmp_path: Path):
    made = run("new", "row-scale", "--dir", str(tmp_path))
    assert made.returncode == 0, made.stderr
    folder = tmp_path / "row-scale"
    assert load_problem(folder).spec.function_name == "row_scale"
    done = run("check", str(folder))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sandbox: no-scale" in done.stdout and "diagnosed no-scale" in done.stdout
    again = run("new", "row-scale", "--dir", str(tmp_path))
    assert again.returncode == 1 and "already exists" in again.stderr


def copy_of(source: Path, tmp_path: Path) -> Path:
    target = tmp_path / source.name
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def test_a_folder_that_does_not_load_fails_with_the_start_up_message(tmp_path: Path):
    folder = copy_of(DEMO, tmp_path)
    edit(folder / "problem.toml", "minimum = 1, maximum = 8", 'minimum = "one", maximum = 8')
    with pytest.raises(ProblemLoadError) as info:
        load_problem(folder)
    done = run("check", str(folder), "--no-sandbox")
    assert done.returncode == 1
    assert f"DEFECT {info.value}" in done.stdout
    assert "problem.toml: params.3.int.minimum:" in done.stdout


def test_defects_are_all_reported_with_file_and_field(tmp_path: Path):
    folder = copy_of(DEMO, tmp_path)
    # A flag the reference ignores, and a formula KaTeX cannot parse.
    edit(folder / "reference.py", 'if "no-scale" in faults:', "if False:")
    edit(folder / "statement.md", r"\sqrt{d}\,\tau}", r"\sqrt{d}\,\tau")
    done = run("check", str(folder), "--no-sandbox")
    assert done.returncode == 1, done.stdout
    out = done.stdout
    assert f"DEFECT {folder / 'statement.md'}: math: ParseError" in out
    assert (
        f"DEFECT {folder / 'faults.toml'}: faults.no-scale: the flag 'no-scale' changes no output"
        in out
    )
    assert f"DEFECT {folder / 'cases.py'}: hidden_cases(): no case fails" in out
    # ...and what follows from the dead flag: it passes every case and the probes cannot tell it
    # from no mistake. The combinations it makes look alike are its defect, not the other
    # faults': none of them is blamed.
    assert "== contract-demo: 4 defect(s)" in out
    defects = [line for line in out.splitlines() if line.startswith("DEFECT")]
    for good in ("temperature-multiplied", "mask-inverted", "softmax-wrong-axis"):
        assert not any(good in line for line in defects), defects


def test_a_model_the_diagnosis_misnames_is_a_defect(tmp_path: Path):
    folder = copy_of(DEMO, tmp_path)
    # Two flags that now do the same thing: graded, one is diagnosed as the other.
    edit(
        folder / "reference.py",
        "scale = np.sqrt(d) / temperature",
        "scale = temperature",
    )
    done = run("check", str(folder))
    assert done.returncode == 1
    assert (
        f"DEFECT {folder / 'probes.py'}: probes(): the probes cannot tell 'no-scale'" in done.stdout
    )
    assert "is diagnosed as" in done.stdout or "is accepted" in done.stdout
