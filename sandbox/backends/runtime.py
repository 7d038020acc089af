"""Where the sandbox's Python, numpy and in-sandbox package (``sandbox/inside``) come from on this
host, and how a backend starts that package inside."""

from __future__ import annotations

import importlib.util
import os
import sys
import sysconfig
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy

# The package that runs inside the sandbox, on this host, and the file that starts it.
INSIDE_PACKAGE = Path(__file__).resolve().parents[1] / "inside"
HOST_ENTRY = INSIDE_PACKAGE / "__main__.py"
# Where every backend puts it, read-only (bwrap binds it there, sandbox/Dockerfile copies it
# there), and the file that starts it there.
INSIDE_MOUNT = "/opt/tensorjudge/inside"
ENTRY = f"{INSIDE_MOUNT}/__main__.py"


def entry_command(python: str, site_packages: str, entry: str = ENTRY) -> list[str]:
    """How every backend starts the runner: its interpreter isolated from the environment, no
    site, no bytecode written, numpy's folder named on the command line."""
    return [python, "-I", "-S", "-B", entry, "--sys-path", site_packages]


@dataclass(frozen=True)
class PythonRuntime:
    executable: Path  # the real interpreter binary (not a venv symlink)
    prefix: Path  # its installation prefix (bin/, lib/pythonX.Y/)
    stdlib: Path  # lib/pythonX.Y
    numpy_dir: Path  # the numpy package directory
    numpy_libs: Path | None  # numpy.libs (bundled BLAS) beside it, for wheels that have one
    # PyTorch's package directory where the optional extra is installed (``torch``), else None;
    # with it the few modules ``import torch`` needs beside it (``TORCH_COMPANIONS``).
    torch_dir: Path | None = None

    @property
    def has_torch(self) -> bool:
        return self.torch_dir is not None

    @property
    def site_packages(self) -> Path:
        return self.numpy_dir.parent


def default_python() -> Path:
    """The real path of the interpreter behind this venv."""
    return Path(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))


# What a process with torch imported has mapped before any submission runs, measured in a run
# forked from a zygote with and without torch: 485 MiB of address space more (662 MB against
# 165 MB). Added to a torch run's limits (``Limits.runtime_mb``) as the runtime's, not the
# submission's, with a little room; no more, or a run forked from a torch zygote would get more
# address space for its own data than ``memory_mb`` says.
TORCH_RUNTIME_MB = 496
# What ``import torch`` imports from site-packages besides torch itself (sympy, networkx, jinja2
# and fsspec are imported only by torch.compile, export and hub: left out, they stay closed).
TORCH_COMPANIONS = ("torchgen", "typing_extensions.py")


def find_torch() -> Path | None:
    """torch's package directory in this interpreter's site-packages, found without importing it
    (that takes seconds); None where the extra is not installed."""
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).resolve().parent


@lru_cache
def discover(python: Path | None = None) -> PythonRuntime:
    executable = Path(os.path.realpath(python or default_python()))
    if executable != Path(os.path.realpath(default_python())):
        # Another interpreter: its prefix is two levels up by convention (prefix/bin/python).
        prefix = executable.parent.parent
        named = prefix / "lib" / executable.name  # python3.11 -> lib/python3.11
        stdlib = named if named.is_dir() else next(prefix.glob("lib/python3.*"), prefix / "lib")
    else:
        prefix = Path(sys.base_prefix).resolve()
        stdlib = Path(sysconfig.get_path("stdlib", vars={"installed_base": str(prefix)})).resolve()
    numpy_dir = Path(numpy.__file__).resolve().parent
    libs = numpy_dir.parent / "numpy.libs"
    return PythonRuntime(
        executable=executable,
        prefix=prefix,
        stdlib=stdlib,
        numpy_dir=numpy_dir,
        numpy_libs=libs if libs.is_dir() else None,
        torch_dir=find_torch(),
    )
