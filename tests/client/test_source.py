"""A function object becomes code that runs on its own: its source plus what it uses from its
module. Each produced text is executed in a fresh namespace, as the sandbox would."""

from __future__ import annotations

import math
import sys
import textwrap
import types
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from tensorjudge_client import MissingNamesWarning, SourceError, function_source


def module_from(source: str, name: str) -> types.ModuleType:
    """A module defined from text in a real file, so inspect.getsource can read it back."""
    import importlib.util
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.mkdtemp(prefix="tj-source-"))
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def run_alone(code: str, entry: str, *args: Any) -> Any:
    namespace: dict[str, Any] = {}
    exec(compile(code, "<submission>", "exec"), namespace)
    return namespace[entry](*args)


def test_imports_helpers_and_constants_go_along():
    module = module_from(
        """
        import numpy as np
        import numpy.linalg as la
        from math import sqrt as root
        from numpy import linalg

        SCALE = 2.0
        UNUSED = "never referenced"

        def helper(x):
            return np.asarray(x) * SCALE

        def inner_helper(x):
            return root(float(la.norm(x))) + float(linalg.norm(x)) * 0

        def solve(x):
            def nested(y):
                return inner_helper(y)
            return helper(x).sum() + nested(x)
        """,
        "tj_source_case",
    )
    code = function_source(module.solve)
    assert "import numpy as np" in code
    assert "import numpy.linalg as la" in code
    assert "from math import sqrt as root" in code
    assert "from numpy import linalg" in code
    assert "SCALE = 2.0" in code and "UNUSED" not in code
    assert "def helper(" in code and "def inner_helper(" in code
    assert run_alone(code, "solve", [1.0, 2.0]) == pytest.approx(module.solve([1.0, 2.0]))


def test_a_frozenset_constant_goes_along_the_same_every_time():
    # A frozenset's repr is no literal; its element order follows the string hashes of the
    # process, which would make the same function a different text in every kernel.
    module = module_from(
        """
        FLAGS = frozenset({"b", "a", "c"})
        NONE = frozenset()

        def solve(flag):
            return flag in FLAGS and flag not in NONE
        """,
        "tj_source_frozenset",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingNamesWarning)
        code = function_source(module.solve)
    assert "FLAGS = frozenset({'a', 'b', 'c'})" in code and "NONE = frozenset()" in code
    assert run_alone(code, "solve", "a") is True and run_alone(code, "solve", "z") is False


def test_an_indented_function_is_dedented():
    def outer() -> Callable[[float], float]:
        def f(x: float) -> float:
            return math.floor(x)

        return f

    code = function_source(outer())
    assert code.startswith("import math\n")
    assert "\ndef f(x: float) -> float:" in code
    assert run_alone(code, "f", 2.7) == 2


def test_lambdas_and_non_functions_are_refused_with_a_reason():
    with pytest.raises(SourceError, match="lambda"):
        function_source(lambda x: x)
    with pytest.raises(SourceError, match="expected a function"):
        function_source(len)  # type: ignore[arg-type]


def test_names_the_grader_will_not_have_are_named_before_sending():
    module = module_from(
        """
        import numpy as np

        SCALE = 2.0
        weights = np.ones(3)

        def helper(x):
            return x * SCALE

        def solve(x, axis=-1):
            total = np.exp(x).sum(axis=axis) + helper(x) + len(x)
            extra = [weights[i] + later for i in range(3)]
            return total + extra
        """,
        "tj_source_missing",
    )
    with pytest.warns(MissingNamesWarning) as caught:
        code = function_source(module.solve)
    assert len(caught) == 1
    message = str(caught[0].message)
    # The notebook-style globals are named; the module, helper, constant, builtins, the
    # function itself and an attribute (np.exp's `exp`, .sum) are not.
    assert message.split(", which")[0] == "solve uses later, weights"
    assert "which the grader will not have" in message and "NameError" in message
    # Still sent: the grader has the final say.
    assert "def solve(" in code
    # The warning points at the caller's line, not into the client.
    assert caught[0].filename == __file__


def test_a_self_contained_function_sends_without_a_warning():
    module = module_from(
        """
        import numpy as np

        def softmax(x, axis=-1):
            shifted = x - x.max(axis=axis, keepdims=True)
            e = np.exp(shifted)
            return e / e.sum(axis=axis, keepdims=True)
        """,
        "tj_source_clean",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code = function_source(module.softmax)
    assert run_alone(code, "softmax", np.zeros(2)).tolist() == [0.5, 0.5]
