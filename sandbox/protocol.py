"""The host-side contract of every sandbox backend: a ``RunRequest`` in, a ``RunResult`` out.

``RunResult.status`` says how the *process* ended; per-case outcomes say what each call returned.
Correctness, and so the verdict, is decided by the grader, outside the sandbox.
"""

from __future__ import annotations

from typing import Annotated, Literal, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from sandbox.inside.errors import MAX_MESSAGE, MAX_TRACEBACK

# An array (numeric or bool), an int, a float, or None (an omitted optional parameter).
ArgValue = np.ndarray | int | float | None


class Limits(BaseModel):
    """Enforced from outside the sandboxed process."""

    model_config = ConfigDict(frozen=True)

    cpu_seconds: float = Field(default=5.0, gt=0)
    wall_seconds: float = Field(default=10.0, gt=0)
    memory_mb: int = Field(default=512, ge=32)
    max_processes: int = Field(default=64, ge=1)
    output_bytes: int = Field(default=64 * 1024, ge=1024, description="cap on stdout and on stderr")
    file_bytes: int = Field(default=16 * 1024 * 1024, ge=0, description="largest file it may write")
    tmpfs_mb: int = Field(default=16, ge=1)
    result_bytes: int = Field(default=64 * 1024 * 1024, description="cap on all returned arrays")
    runtime_mb: int = Field(
        default=0,
        ge=0,
        description="address space and memory of the runtime itself (torch's libraries, mapped "
        "whatever the submission does), added to the run's memory limit: not the submission's",
    )
    input_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=4096,
        description="largest case's inputs (with their layout); the region a run's cases are laid "
        "in is this large whatever they hold, so its size says nothing of the hidden ones",
    )


class CaseArgs(BaseModel):
    """One call of the entry point: positional arguments by parameter name."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str
    args: dict[str, ArgValue]
    # Its inputs must never reach what the student sees (a hidden case, a probe): output printed
    # from this case on is never attributed to an earlier case or to import time, and the
    # sandbox reports of it only what the host can word itself (no exception text).
    hidden: bool = False


class RunRequest(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    code: str
    function_name: str
    param_names: list[str]
    # None: the function returns one array. N: it returns a tuple of N arrays.
    outputs: int | None = Field(default=None, ge=1, le=16)
    # Every public case before the first hidden one: what a public case prints is shown, and by
    # then the process must not have seen a hidden input.
    cases: list[CaseArgs]
    limits: Limits = Limits()
    # What the function is handed and may return: numpy arrays, or torch tensors (converted to
    # arrays inside the sandbox; everything outside stays numpy).
    framework: Literal["numpy", "torch"] = "numpy"
    # Dotted names of APIs the submission may not call (``sandbox/inside/frameworks.forbid``).
    forbidden: list[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.]*$")]] = []

    @model_validator(mode="after")
    def _public_cases_first(self) -> RunRequest:
        hidden = [c.hidden for c in self.cases]
        if hidden != sorted(hidden):
            raise ValueError("a public case follows a hidden one: public cases must run first")
        # Outcomes and printed text are matched to cases by name: a hidden case named like a
        # public one would have what it printed shown as the public case's.
        names = [c.name for c in self.cases]
        if len(set(names)) != len(names):
            raise ValueError("two cases have the same name: every case's name must be unique")
        return self


class CaseError(BaseModel):
    type: str
    message: Annotated[str, Field(max_length=MAX_MESSAGE)]
    traceback: Annotated[str, Field(max_length=MAX_TRACEBACK)] = ""
    # The type's base classes by name, nearest first (for a hidden case only listed standard
    # names): a required exception is met by a subclass too.
    bases: list[str] = []


class CaseOutcome(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str
    # Set when the call returned a numeric ndarray, or, when the request asks for several
    # outputs, a tuple of them; read from .npy with allow_pickle=False.
    output: np.ndarray | tuple[np.ndarray, ...] | None = None
    # Set when the call raised, or returned something that is not what the request asks for.
    error: CaseError | None = None
    mutated_inputs: list[str] = []
    # From its inputs being laid to its result arriving, on the supervisor's clock (never the
    # submission's own).
    seconds: float = 0.0
    # What the submission printed while this case ran (or after it, before the next one).
    # A hidden case's output must never be shown to the student.
    stdout: str = ""
    stderr: str = ""


RunStatus = Literal[
    "ok",  # the runner finished and reported every case it was given
    "compile_error",  # syntax error, import error, missing or non-callable entry point
    "runtime_error",  # the process died or exited before reporting (crash, os._exit, kill)
    "time_limit_exceeded",
    "memory_limit_exceeded",
    "output_limit_exceeded",
    "internal_error",  # the sandbox itself failed; not the submission's fault
]


class RunResult(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    status: RunStatus
    cases: list[CaseOutcome] = []
    message: str = ""  # compile error text, crash reason, or internal error detail
    # What the submission raised while being loaded, before any case's inputs existed (a syntax
    # or import error, a missing entry point, an exception at import time); None otherwise.
    load_error: CaseError | None = None
    # Everything printed, in order, whatever the phase: for operators and tests, not students.
    stdout: str = ""
    stderr: str = ""
    # Printed while importing, before any case's inputs existed in the submission's process.
    import_stdout: str = ""
    import_stderr: str = ""
    # Printed during a public case that never reported: the run stopped in it (a time limit).
    unfinished_stdout: str = ""
    unfinished_stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    wall_seconds: float = 0.0
    backend: str = ""


class Sandbox(Protocol):
    name: str

    def run(self, request: RunRequest) -> RunResult: ...
