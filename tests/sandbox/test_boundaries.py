"""What the sandbox's code may import: ``sandbox/`` never imports the application (it runs code
and reports how it ended; the grader judges), and the package that runs inside the sandbox only
the standard library, numpy and itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sandbox.backends.runtime import INSIDE_PACKAGE
from tests.support.imports import imports, modules

SANDBOX = INSIDE_PACKAGE.parent
ROOT = SANDBOX.parent


def test_the_scan_sees_every_kind_of_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import os, app.x\nfrom app import y\nfrom . import z\ndef f():\n import q\n")
    found = [(i.level, i.module, i.line) for i in imports(module)]
    assert found == [(0, "os", 1), (0, "app.x", 1), (0, "app", 2), (1, "", 3), (0, "q", 5)]


@pytest.mark.parametrize("path", modules(SANDBOX), ids=lambda p: str(p.relative_to(SANDBOX)))
def test_no_sandbox_module_imports_the_application(path: Path) -> None:
    bad = [i.module for i in imports(path) if i.level == 0 and i.module.split(".")[0] == "app"]
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}"


@pytest.mark.parametrize(
    "path", modules(INSIDE_PACKAGE), ids=lambda p: str(p.relative_to(INSIDE_PACKAGE))
)
def test_the_inside_package_imports_the_standard_library_numpy_and_itself_only(
    path: Path,
) -> None:
    # torch only where a job asks for it (frameworks.py imports it inside its functions).
    allowed = set(sys.stdlib_module_names) | {"numpy", "torch"}
    bad = [
        i.module for i in imports(path) if i.level == 0 and i.module.split(".")[0] not in allowed
    ]
    assert not bad, f"{path.relative_to(ROOT)} imports {bad} (inside the sandbox it cannot)"


def test_the_inside_package_imports_no_numpy_until_it_runs() -> None:
    """The host imports its formats, and the zygote drops its capabilities before numpy loads."""
    names = [f"sandbox.inside.{p.stem}" for p in modules(INSIDE_PACKAGE) if p.stem != "__main__"]
    script = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
        f"for name in {names!r}: __import__(name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'numpy'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", script], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
