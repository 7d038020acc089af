"""A folder that fails ``problems check`` is not served: start-up runs the checks that need no
sandbox (the statement's math, every fault flag changes something) and names each refused
folder with its defects in a few lines, also from ``python -m app serve`` (no traceback). The
check blames a fault that changes nothing, not the good faults it makes look confusable, and the
command docs/problem-authoring.md shows for the demo works as written."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.core.config import REPO_ROOT, Settings
from app.main import create_app
from app.problems.loader import FoldersRefused
from tests.conftest import PROBLEMS_DIR
from tests.support.folders import edit

DEMO = Path(__file__).parent / "fixtures" / "contract-demo"
FLOAT = Path(__file__).parent / "fixtures-float" / "layer-norm"


def copy_of(source: Path, parent: Path) -> Path:
    target = parent / source.name
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def add_inert_fault(folder: Path) -> None:
    """A fault flag whose mistake changes nothing (a copy of Q): a function with it is right."""
    edit(
        folder / "reference.py",
        'FAULTS = frozenset({"no-scale",',
        'FAULTS = frozenset({"copy-q", "no-scale",',
    )
    edit(
        folder / "reference.py",
        "    d = Q.shape[-1]\n",
        '    d = Q.shape[-1]\n    if "copy-q" in faults:\n        Q = Q.copy()\n',
    )
    text = (folder / "faults.toml").read_text()
    (folder / "faults.toml").write_text(
        '[faults.copy-q]\nrequirement = "apply-mask"\ntitle = "A copy"\n'
        'explanation = "Copies Q."\nhint = "None."\n\n' + text
    )


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    """A folder of extra problems: the float demo (good) and a contract demo with bad math and an
    inert fault flag."""
    extra = tmp_path / "extra"
    extra.mkdir()
    copy_of(FLOAT, extra)
    demo = copy_of(DEMO, extra)
    add_inert_fault(demo)
    with (demo / "statement.md").open("a") as statement:
        statement.write("\nA formula that does not parse: $\\frac{1}{$.\n")
    return extra


def test_start_up_refuses_the_folder_and_names_its_defects(tmp_path: Path, broken: Path):
    settings = Settings(
        data_dir=tmp_path / "data", problems_dir=PROBLEMS_DIR, problem_dirs=str(broken)
    )
    with pytest.raises(FoldersRefused) as info:
        create_app(settings)
    assert list(info.value.refused) == [broken / "contract-demo"]
    message = str(info.value)
    assert "statement.md: math:" in message
    assert "faults.copy-q: the flag 'copy-q' changes no output of any case or probe" in message
    assert "layer-norm" not in message  # the good folder beside it is not blamed
    assert len(message.splitlines()) <= 6


def test_serve_prints_a_few_lines_not_a_traceback(tmp_path: Path, broken: Path):
    env = {
        **os.environ,
        "GRADER_DATA_DIR": str(tmp_path / "data"),
        "GRADER_PROBLEMS_DIR": str(PROBLEMS_DIR),
        "GRADER_PROBLEM_DIRS": str(broken),
    }
    done = subprocess.run(
        [sys.executable, "-m", "app", "serve", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("error: 1 problem folder(s) cannot be served")
    assert str(broken / "contract-demo") in done.stderr
    assert len(done.stderr.strip().splitlines()) <= 6, done.stderr


def test_the_check_blames_the_inert_fault_not_the_good_ones(tmp_path: Path):
    demo = copy_of(DEMO, tmp_path)
    add_inert_fault(demo)
    done = subprocess.run(
        [sys.executable, "-m", "app", "problems", "check", str(demo), "--no-sandbox"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1
    defects = [line for line in done.stdout.splitlines() if line.startswith("DEFECT")]
    assert defects and all("copy-q" in line for line in defects), defects
    for good in ("no-scale", "temperature-multiplied", "mask-inverted", "softmax-wrong-axis"):
        assert f"{good} is confused only with itself plus copy-q: blamed on copy-q" in done.stdout


def test_the_documented_check_of_the_demo_works_as_written():
    guide = (REPO_ROOT / "docs" / "problem-authoring.md").read_text()
    commands = re.findall(
        r"^\.venv/bin/python -m app (problems check \S+.*?)(?:\s+#.*)?$", guide, re.M
    )
    demo = next(c for c in commands if "contract-demo" in c)
    done = subprocess.run(
        [sys.executable, "-m", "app", *shlex.split(demo), "--no-sandbox"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "== contract-demo: OK" in done.stdout


def test_an_unknown_id_says_how_to_name_the_folder():
    done = subprocess.run(
        [sys.executable, "-m", "app", "problems", "check", "contract-demo"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPO_ROOT,
        env={**os.environ, "GRADER_PROBLEM_DIRS": ""},
    )
    assert done.returncode == 2
    assert "give the folder's path, or add its parent to GRADER_PROBLEM_DIRS" in done.stderr


def test_a_case_too_large_for_the_sandbox_is_a_defect(tmp_path: Path):
    """A hidden case over the sandbox's input region could never be run: every submission would
    end in an internal error, so the folder is refused at start-up instead."""
    extra = tmp_path / "extra"
    extra.mkdir()
    folder = copy_of(FLOAT, extra)
    edit(
        folder / "cases.py",
        '        _case("one-row", rng, (), 6, eps=0.25),\n',
        '        _case("one-row", rng, (), 6, eps=0.25),\n'
        '        _case("huge", rng, (8400,), 1000),\n',
    )
    settings = Settings(
        data_dir=tmp_path / "data", problems_dir=PROBLEMS_DIR, problem_dirs=str(extra)
    )
    with pytest.raises(FoldersRefused) as info:
        create_app(settings)
    assert list(info.value.refused) == [folder]
    message = str(info.value)
    assert re.search(
        r"huge: its inputs take 672\d{5} bytes in the sandbox; the limit is 67108864", message
    ), message
