"""The five attention problems in PyTorch, graded for real: each offers a torch starter, accepts a
correct PyTorch solution and names a fault written in PyTorch's own habits, on the fork server
(whose zygote preloads torch). Skipped where the ``torch`` extra is not installed."""

from __future__ import annotations

import ast
from collections.abc import Iterator

import pytest

from app.grading.compare import HIDDEN_WORDING
from app.grading.pipeline import build_request, grade_submission
from app.problems.crashes import CRASH_HINTS
from app.problems.errormodel import Habit
from app.problems.frameworks import detect_framework
from app.problems.loader import Problem
from sandbox.backends.bwrap import BwrapSandbox
from sandbox.backends.forkserver import ForkServerSandbox
from sandbox.backends.runtime import find_torch
from tests.problems.torch_solutions import HABITS, SOLUTIONS

pytestmark = [
    pytest.mark.skipif(find_torch() is None, reason="the torch extra is not installed"),
    pytest.mark.timeout(300),
]


@pytest.fixture(scope="module")
def fork_server() -> Iterator[ForkServerSandbox]:
    server = ForkServerSandbox(BwrapSandbox())
    assert server.preload_torch
    try:
        yield server
    finally:
        server.close()


@pytest.mark.parametrize("problem_id", sorted(SOLUTIONS))
def test_every_attention_problem_offers_a_torch_starter(
    problems: dict[str, Problem], problem_id: str
) -> None:
    problem = problems[problem_id]
    assert problem.frameworks == ("numpy", "torch")
    starter = problem.starters["torch"]
    assert detect_framework(starter) == "torch"
    names = [n.name for n in ast.parse(starter).body if isinstance(n, ast.FunctionDef)]
    assert names == [problem.spec.function_name]
    assert problem.spec.forbidden.torch  # each forbids the API that is the whole answer


@pytest.mark.slow
@pytest.mark.parametrize("problem_id", sorted(SOLUTIONS))
def test_a_correct_pytorch_solution_is_accepted(
    problems: dict[str, Problem], fork_server: ForkServerSandbox, problem_id: str
) -> None:
    report = grade_submission(problems[problem_id], SOLUTIONS[problem_id], fork_server)
    assert report.framework == "torch"
    assert report.verdict == "accepted", (report.error, report.diagnoses)


@pytest.mark.slow
@pytest.mark.parametrize(("problem_id", "name", "habit"), HABITS, ids=[h[1] for h in HABITS])
def test_a_pytorch_habit_is_diagnosed(
    problems: dict[str, Problem],
    fork_server: ForkServerSandbox,
    problem_id: str,
    name: str,
    habit: Habit,
) -> None:
    code = habit.apply(SOLUTIONS[problem_id])
    report = grade_submission(problems[problem_id], code, fork_server)
    assert report.framework == "torch"
    if habit.expect in CRASH_HINTS:  # a crash named on the public cases
        assert report.verdict == "runtime_error", report.error
        assert {t.crash for t in report.tests if t.visibility == "public"} == {habit.expect}
        return
    assert report.verdict == "wrong_answer", report.error
    assert habit.expect in {d.code for d in report.diagnoses}, [d.code for d in report.diagnoses]


def test_the_habits_cover_pytorchs_own() -> None:
    """The issue's habits, each in some problem's error model: nn.Linear's x @ W.T, softmax over
    the wrong dim, masked_fill with the mask inverted, triu's diagonal, float32 from
    torch.tensor, .view() after a transpose."""
    expected = {
        "weights-transposed",
        "softmax-wrong-axis",
        "mask-inverted",
        "diagonal-blocked",
        "low-precision",
        "view-not-contiguous",
    }
    assert expected <= {habit.expect for _, _, habit in HABITS}


@pytest.mark.slow
def test_a_forbidden_api_gets_a_verdict_naming_it(
    problems: dict[str, Problem], fork_server: ForkServerSandbox
) -> None:
    code = """
import torch.nn.functional as F
attend = getattr(F, "scaled_dot_product_attention")

def masked_attention(q, k, v, mask=None):
    out = attend(q, k, v, attn_mask=None if mask is None else ~mask)
    return out, out
"""
    report = grade_submission(problems["masked-attention"], code, fork_server)
    assert report.verdict == "runtime_error"
    assert report.error is not None
    assert "torch.nn.functional.scaled_dot_product_attention" in report.error
    assert "forbids" in report.error


def test_the_framework_is_read_from_the_imports(problems: dict[str, Problem]) -> None:
    problem = problems["masked-attention"]
    case = problem.examples[:1]
    torch_request = build_request(problem, "from torch import nn\n", case)
    assert torch_request.framework == "torch"
    assert torch_request.limits.runtime_mb > 0
    assert "torch.nn.functional.scaled_dot_product_attention" in torch_request.forbidden
    numpy_request = build_request(problem, "import numpy as np\n", case)
    assert numpy_request.framework == "numpy"
    assert numpy_request.forbidden == [] and numpy_request.limits.runtime_mb == 0
    # Asked for explicitly, the choice wins over the imports.
    assert build_request(problem, "import numpy\n", case, "torch").framework == "torch"


VIEW_MERGE = (".transpose(1, 2).reshape(b, n_q, d_model)", ".transpose(1, 2).view(b, n_q, d_model)")


@pytest.mark.slow
def test_a_view_after_a_transpose_is_named_on_the_public_cases_only(
    problems: dict[str, Problem], fork_server: ForkServerSandbox
) -> None:
    problem = problems["multi-head-attention"]
    code = SOLUTIONS["multi-head-attention"].replace(*VIEW_MERGE)
    assert code != SOLUTIONS["multi-head-attention"]
    report = grade_submission(problem, code, fork_server)
    hint = CRASH_HINTS["view-not-contiguous"].hint
    public = [t for t in report.tests if t.visibility == "public"]
    hidden = [t for t in report.tests if t.visibility == "hidden"]
    assert public and hidden
    for case in public:
        assert case.crash == "view-not-contiguous"
        assert case.message.startswith("RuntimeError: view size is not compatible")
        assert case.message.endswith(f"({hint})")
    for case in hidden:
        assert case.crash is None
        assert case.message == HIDDEN_WORDING["error"]
    assert report.error is not None and report.error.endswith(hint)


@pytest.mark.slow
def test_a_crash_on_hidden_cases_alone_is_never_named(
    problems: dict[str, Problem], fork_server: ForkServerSandbox
) -> None:
    """The attack: right on the public examples (they run first), then the view crash on every
    later call. Had a hidden case's crash been read, its hint would tell the student so."""
    problem = problems["multi-head-attention"]
    public_calls = len(problem.examples)
    correct = SOLUTIONS["multi-head-attention"]
    crashing = correct.replace(*VIEW_MERGE).replace(
        "def multi_head_attention(", "def _crashing(", 1
    )
    code = (
        correct.replace("def multi_head_attention(", "def _correct(", 1)
        + crashing.split("import torch", 1)[1]
        + f"\n_CALLS = [0]\n\n\ndef multi_head_attention(*args):\n"
        f"    _CALLS[0] += 1\n"
        f"    return (_correct if _CALLS[0] <= {public_calls} else _crashing)(*args)\n"
    )
    report = grade_submission(problem, code, fork_server)
    assert [t.status for t in report.tests if t.visibility == "public"] == ["passed"] * public_calls
    assert any(t.status == "error" for t in report.tests if t.visibility == "hidden")
    assert all(t.crash is None for t in report.tests)
    dumped = report.model_dump_json()
    assert CRASH_HINTS["view-not-contiguous"].hint not in dumped
    assert "view-not-contiguous" not in dumped and ".contiguous()" not in dumped
