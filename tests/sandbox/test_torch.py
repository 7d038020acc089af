"""PyTorch submissions in the real sandbox (cold bwrap, the fork server, whose zygote preloads
torch, and docker, whose image holds torch): tensors in and arrays out, forbidden APIs refused
however they are reached, and torch's own ways out closed, each attacked for real. Skipped where
the ``torch`` extra is not installed."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator

import numpy as np
import pytest

from app.grading.matrix import host_matrix, run_in_sandbox
from app.problems.loader import Problem
from sandbox.backends.bwrap import BwrapSandbox
from sandbox.backends.forkserver import ForkServerSandbox
from sandbox.backends.pool import WarmPoolSandbox
from sandbox.backends.runtime import TORCH_RUNTIME_MB, find_torch
from sandbox.protocol import CaseArgs, Limits, RunRequest, RunResult, Sandbox
from tests.sandbox.conftest import AlwaysForked, _docker

pytestmark = [
    pytest.mark.skipif(find_torch() is None, reason="the torch extra is not installed"),
    pytest.mark.timeout(180),
]

# A cold run imports torch itself (about 1.5 s of CPU here): room for it.
TORCH_LIMITS = Limits(
    cpu_seconds=10,
    wall_seconds=30,
    memory_mb=256,
    max_processes=32,
    output_bytes=8192,
    tmpfs_mb=4,
    runtime_mb=TORCH_RUNTIME_MB,
)
SDPA = "torch.nn.functional.scaled_dot_product_attention"
MHA = "torch.nn.MultiheadAttention"


@pytest.fixture(scope="module", params=["bwrap", "bwrap-fork", "docker"])
def torch_sandbox(
    request: pytest.FixtureRequest, bwrap_sandbox: BwrapSandbox, fork_server: ForkServerSandbox
) -> Sandbox:
    if request.param == "bwrap":
        return bwrap_sandbox
    if request.param == "docker":
        # The image holds torch pruned as the runtime tree (sandbox/Dockerfile); each run is a
        # cold container that imports it.
        return _docker()
    assert fork_server.preload_torch  # torch is installed: the zygote has it loaded
    return AlwaysForked(fork_server)


def torch_run(
    sandbox: Sandbox,
    code: str,
    *,
    hidden: bool = False,
    forbidden: tuple[str, ...] = (),
    framework: str = "torch",
) -> RunResult:
    args = {"a": np.arange(6.0).reshape(2, 3), "m": np.eye(2, 3, dtype=bool), "n": 2}
    return sandbox.run(
        RunRequest(
            code=code,
            function_name="f",
            param_names=["a", "m", "n"],
            cases=[CaseArgs(name="case", args=args, hidden=hidden)],
            limits=TORCH_LIMITS,
            framework=framework,  # type: ignore[arg-type]
            forbidden=list(forbidden),
        )
    )


def only_case(result: RunResult) -> tuple[np.ndarray | None, str | None, str]:
    assert result.status == "ok", (result.status, result.message, result.stderr[-2000:])
    (case,) = result.cases
    output = case.output
    assert output is None or isinstance(output, np.ndarray)
    return output, case.error.type if case.error else None, case.error.message if case.error else ""


def test_the_function_gets_tensors_and_its_tensor_comes_back_as_an_array(
    torch_sandbox: Sandbox,
) -> None:
    code = """
import torch

def f(a, m, n):
    assert type(a) is torch.Tensor and a.dtype == torch.float64, (type(a), a.dtype)
    assert type(m) is torch.Tensor and m.dtype == torch.bool
    assert type(n) is int
    assert torch.get_num_threads() == 1 and torch.get_num_interop_threads() == 1
    # requires grad, not contiguous: detached and copied inside, graded as values
    return (a * n).masked_fill(m, -1.0).T.requires_grad_()
"""
    output, error, message = only_case(torch_run(torch_sandbox, code))
    assert error is None, message
    assert output is not None and output.dtype == np.float64
    expected = np.arange(6.0).reshape(2, 3) * 2
    expected[np.eye(2, 3, dtype=bool)] = -1.0
    np.testing.assert_array_equal(output, expected.T)


def test_float32_comes_back_as_float32_for_the_low_precision_diagnosis(
    torch_sandbox: Sandbox,
) -> None:
    code = """
import torch

def f(a, m, n):
    return torch.tensor(a.tolist()) * n  # torch.tensor's default dtype: float32
"""
    output, error, _ = only_case(torch_run(torch_sandbox, code))
    assert error is None and output is not None and output.dtype == np.float32


def test_a_numpy_array_from_a_torch_job_is_refused_naming_the_tensor(
    torch_sandbox: Sandbox,
) -> None:
    code = """
def f(a, m, n):
    return [1.0, 2.0]
"""
    _, error, message = only_case(torch_run(torch_sandbox, code))
    assert error == "InvalidOutput" and "torch.Tensor" in message


@pytest.mark.parametrize(
    "call",
    [
        "F.scaled_dot_product_attention(q, q, q)",
        "sdpa(q, q, q)",  # imported under another name before the call
        "getattr(F, 'scaled_' + 'dot_product_attention')(q, q, q)",
        "torch._C._nn.scaled_dot_product_attention(q, q, q)",  # the private module it came from
        "torch.nn.MultiheadAttention(3, 1)",
        "type('Mine', (torch.nn.MultiheadAttention,), {})",  # a subclass of it
    ],
)
def test_a_forbidden_api_is_refused_however_it_is_reached(
    torch_sandbox: Sandbox, call: str
) -> None:
    code = f"""
import torch
import torch.nn.functional as F
from torch.nn.functional import scaled_dot_product_attention as sdpa

def f(a, m, n):
    q = a.reshape(1, 2, 3)
    try:
        {call}
    except Exception:
        pass  # swallowing the refusal does not hide the call
    return a
"""
    _, error, message = only_case(torch_run(torch_sandbox, code, forbidden=(SDPA, MHA)))
    assert error == "ForbiddenAPI"
    assert message.startswith((SDPA + " ", MHA + " "))


def test_the_same_call_runs_where_the_problem_forbids_nothing(torch_sandbox: Sandbox) -> None:
    code = """
import torch.nn.functional as F

def f(a, m, n):
    q = a.reshape(1, 2, 3)
    return F.scaled_dot_product_attention(q, q, q)[0]
"""
    output, error, message = only_case(torch_run(torch_sandbox, code))
    assert error is None, message
    assert output is not None and output.shape == (2, 3)


def test_a_hidden_case_says_only_that_a_forbidden_api_was_called(torch_sandbox: Sandbox) -> None:
    code = """
import torch.nn.functional as F

def f(a, m, n):
    q = a.reshape(1, 2, 3)
    return F.scaled_dot_product_attention(q, q, q)[0]
"""
    _, error, message = only_case(torch_run(torch_sandbox, code, hidden=True, forbidden=(SDPA,)))
    assert error == "ForbiddenAPI" and message == ""


# torch's ways out. Each submission tries one and returns the outcome as a number:
# 1.0 the way was closed (it raised), 0.0 it went through.
WAYS_OUT = {
    "compile": """
    fn = torch.compile(lambda x: x * 2)
    fn(a)
""",
    "cpp_extension": """
    from torch.utils import cpp_extension
    cpp_extension.load_inline("x", cpp_sources="int f() { return 1; }", functions=["f"])
""",
    "hub": """
    torch.hub.load("pytorch/vision", "resnet18")
""",
    "download": """
    torch.hub.download_url_to_file("https://example.org/x", "/tmp/x")
""",
    "share_memory": """
    a.clone().share_memory_()
""",
    "load_library": """
    import os, shutil
    # A whole, valid library written where the run can write: native code of its own.
    shutil.copyfile(os.path.dirname(torch.__file__) + "/lib/libc10.so", "/tmp/lib.so")
    torch.ops.load_library("/tmp/lib.so")
""",
    "multiprocessing_queue": """
    import torch.multiprocessing as mp
    q = mp.get_context("fork").Queue()
    q.put(a)
""",
}


@pytest.mark.parametrize("way", sorted(WAYS_OUT))
def test_torch_ways_out_are_closed(torch_sandbox: Sandbox, way: str) -> None:
    code = (
        "import torch\n\ndef f(a, m, n):\n    try:\n"
        + textwrap.indent(textwrap.dedent(WAYS_OUT[way]), " " * 8)
        + "    except BaseException as exc:\n"
        + "        print(type(exc).__name__, str(exc)[:200])\n"
        + "        return torch.ones(1, dtype=torch.float64)\n"
        + "    return torch.zeros(1, dtype=torch.float64)\n"
    )
    result = torch_run(torch_sandbox, code)
    output, error, message = only_case(result)
    if error == "ForbiddenAPI":  # refused by name (load_library), the refusal swallowed
        assert way == "load_library", message
        return
    assert error is None, message
    assert output is not None and output.tolist() == [1.0], f"{way} went through: {result.stdout}"


def test_a_numpy_job_gets_arrays_from_a_zygote_that_preloaded_torch(
    torch_sandbox: Sandbox,
) -> None:
    code = """
import numpy as np

def f(a, m, n):
    assert type(a) is np.ndarray and m.dtype == bool
    return a * n
"""
    output, error, message = only_case(torch_run(torch_sandbox, code, framework="numpy"))
    assert error is None, message
    assert output is not None
    np.testing.assert_array_equal(output, np.arange(6.0).reshape(2, 3) * 2)


def test_a_fork_server_without_torch_runs_torch_jobs_cold(bwrap_sandbox: BwrapSandbox) -> None:
    """GRADER_SANDBOX_PRELOAD_TORCH=false: the zygote has no torch, so a torch job is not forked
    (its import would land in a cgroup sized for runs sharing the zygote's copy) but run cold."""
    server = ForkServerSandbox(bwrap_sandbox, preload_torch=False)
    try:
        assert server.wait_ready()
        before = server.inner.last_run_id
        code = "import torch\n\ndef f(a, m, n):\n    return a * n\n"
        output, error, message = only_case(torch_run(server, code))
        assert error is None, message
        np.testing.assert_array_equal(output, np.arange(6.0).reshape(2, 3) * 2)
        assert server.inner.last_run_id != before  # the bwrap backend ran it, not a fork
    finally:
        server.close()


def test_torch_is_the_runtimes_memory_and_the_submission_still_gets_only_its_own(
    torch_sandbox: Sandbox,
) -> None:
    """Under a 128 MiB limit a torch job still imports torch (``runtime_mb`` is added for its
    mappings, on every backend) and computes; a 160 MB tensor of its own is still refused."""
    small = TORCH_LIMITS.model_copy(update={"memory_mb": 128})
    code = "import torch\ndef f(a, m, n):\n    return {}\n"

    def run_small(body: str) -> RunResult:
        request = RunRequest(
            code=code.format(body),
            function_name="f",
            param_names=["a", "m", "n"],
            cases=[CaseArgs(name="case", args={"a": np.ones(3), "m": np.eye(1, 3, dtype=bool),
                                               "n": 2})],
            limits=small,
            framework="torch",
        )  # fmt: skip
        return torch_sandbox.run(request)

    output, error, message = only_case(run_small("(a * n).T.contiguous() + 1"))
    assert error is None, message
    assert output is not None and output.tolist() == [3.0, 3.0, 3.0]
    big = run_small("torch.ones(20_000_000, dtype=torch.float64) + 1")
    refused = big.status == "memory_limit_exceeded" or (
        big.status == "ok" and big.cases[0].error is not None
    )
    assert refused, (big.status, big.message, big.cases)


@pytest.fixture(scope="module")
def torch_pool(bwrap_sandbox: BwrapSandbox) -> Iterator[WarmPoolSandbox]:
    """A warm pool of the module's own: its first PyTorch job runs cold, the next ones are
    served by runners that imported torch before the job came."""
    pool = WarmPoolSandbox(bwrap_sandbox, size=1, preload_torch=True)
    yield pool
    pool.close()


def assert_every_single_fault_diagnosed(sandbox: Sandbox, problems: dict[str, Problem]) -> None:
    """Each single fault of every problem's error model, in every way of writing it, written in
    PyTorch (``solution_torch.py`` with the fault's flag) and run as a PyTorch job on
    ``sandbox``: the diagnosis names what the NumPy fault gets on the host. ``problems check``
    grades the pairs too, on the fork server it is configured with; here every backend runs the
    singles (12 jobs: the models of one way of writing share a job)."""
    wrong: dict[str, object] = {}
    models = 0
    for problem in problems.values():
        if "torch" not in problem.spec.frameworks:
            continue
        singles = [entry for entry in host_matrix(problem) if entry.combo.size == 1]
        graded = run_in_sandbox(problem, sandbox, [e.combo for e in singles], "torch")
        for entry, got in zip(singles, graded, strict=True):
            models += 1
            expected = (entry.combo.codes,) if entry.told_apart else entry.found
            if got != expected:
                wrong[f"{problem.id} {sorted(entry.combo.flags)}"] = (got, expected)
    assert models >= 150, models
    assert not wrong, wrong


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_every_single_fault_written_in_torch_is_diagnosed(
    torch_sandbox: Sandbox, problems: dict[str, Problem]
) -> None:
    assert_every_single_fault_diagnosed(torch_sandbox, problems)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_every_single_fault_written_in_torch_is_diagnosed_on_the_warm_pool(
    torch_pool: WarmPoolSandbox, problems: dict[str, Problem]
) -> None:
    assert_every_single_fault_diagnosed(torch_pool, problems)
    # Jobs whose limits differ from the last re-key the pool's torch runners (a cold run each).
    assert torch_pool.warm_runs >= 4, torch_pool.warm_runs
