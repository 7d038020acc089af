"""The error model loads with the problem, and a malformed one stops start-up naming the file
and the field."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.problems.errormodel import CONTRACT_CODES
from app.problems.loader import Problem, ProblemLoadError, load_problem
from tests.support.folders import edit

SOURCE = Path(__file__).resolve().parents[2] / "problems" / "multi-head-attention"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    target = tmp_path / "multi-head-attention"
    shutil.copytree(SOURCE, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def test_error_model_is_loaded(mha: Problem):
    diagnostics = mha.diagnostics
    assert diagnostics is not None
    model = diagnostics.error_model
    # The grader's own checks, and the one this problem declares for itself.
    assert set(model.contract) == {*CONTRACT_CODES, "assumes-equal-lengths"}
    assert model.partial_checks() == [("assumes-equal-lengths", "equal-lengths", False)]
    assert {
        "weights-transposed", "self-attention-only", "reshape-order", "no-head-transpose",
        "scale-dmodel", "no-scale", "scale-dk-not-sqrt", "softmax-wrong-axis", "global-softmax",
        "unstable-softmax", "no-transpose-back", "missing-wo", "wo-transposed",
        "no-input-projections", "causal-mask-applied", "single-head", "fixed-heads",
    } == set(model.faults)  # fmt: skip
    # A mistake that is a number: one flag per value the search tries.
    assert model.flags("fixed-heads") == [f"fixed-heads={h}" for h in (2, 4, 8)]
    # An idiom: the plain way of writing, then each form.
    assert model.writings() == [frozenset(), frozenset({"causal-fill-inf"})]
    # Reshaping straight to the heads and straight back is one habit: one code, two variants.
    assert model.flags("no-head-transpose") == [
        "no-head-transpose", "no-head-transpose/plain-merge"
    ]  # fmt: skip
    requirement_ids = [r.id for r in mha.spec.requirements]
    for fault in model.faults.values():
        assert fault.requirement in requirement_ids
        assert fault.title and fault.explanation and fault.hint


def test_folder_without_faults_toml_still_loads_undiagnosed(folder: Path):
    (folder / "faults.toml").unlink()
    (folder / "probes.py").unlink()
    assert load_problem(folder).diagnostics is None


@pytest.mark.parametrize(
    ("old", "new", "field", "words"),
    [
        ('requirement = "scale-scores"', 'requirement = "scaling"',
         "faults.scale-dmodel.requirement", "not a requirement"),
        ('hint = "Use merged @ W_o."\n', "", "faults.wo-transposed.hint", "Field required"),
        ("[contract.unrecognized]", "[contract.mystery]", "contract", "missing"),
        ('group = "wo"\n\n[faults.wo-transposed]', 'group = "wo"\n\n[faults.wo-flipped]', "faults",
         "wo-flipped"),
        ('low_precision = 5e-3', 'low_precision = 2', "diagnosis.low_precision", "less than"),
        ('forms = ["causal-fill-inf"]', 'forms = ["missing-wo"]', None, "already a flag"),
        ('values = [2, 4, 8]', 'values = [2, 2]', "faults.fixed-heads.values", "repeat"),
        ('values = [2, 4, 8]', 'values = [2]\nvariants = ["x"]', "faults",
         "variants or values"),
        ("[contract.input-mutated]", '[[exclude]]\nfaults = ["no-scale", "no-such"]\nwhy = "."\n\n'
         "[contract.input-mutated]", None, "not faults"),
    ],
)  # fmt: skip
def test_malformed_faults_toml_names_file_and_field(folder, old, new, field, words):
    edit(folder / "faults.toml", old, new)
    with pytest.raises(ProblemLoadError) as info:
        load_problem(folder)
    assert info.value.path == folder / "faults.toml"
    assert info.value.field == field
    assert words in str(info.value)


def test_reference_must_declare_its_flags(folder: Path):
    edit(folder / "reference.py", "FAULTS = frozenset(", "FLAGS = frozenset(")
    edit(folder / "reference.py", "set(faults) - FAULTS", "set(faults) - FLAGS")
    with pytest.raises(ProblemLoadError, match="FAULTS") as info:
        load_problem(folder)
    assert info.value.path == folder / "faults.toml"


def test_probes_are_required_and_validated(folder: Path):
    edit(folder / "probes.py", '("cross-8x4", 1, 5, 3, 8, 4)', '("cross-8x4", 1, 5, 3, 8, 3)')
    with pytest.raises(ProblemLoadError, match="not divisible") as info:
        load_problem(folder)
    assert info.value.path == folder / "probes.py"
    assert info.value.field == "probes()[probe-cross-8x4]"
    (folder / "probes.py").unlink()
    with pytest.raises(ProblemLoadError, match="missing") as info:
        load_problem(folder)
    assert info.value.path == folder / "probes.py"
