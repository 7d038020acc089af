"""``python -m app problems new ID``: a small working problem to start from. Every file is
written so that ``python -m app problems check`` passes on it as it is."""

from __future__ import annotations

from pathlib import Path

_PROBLEM_TOML = """\
id = "{id}"
title = "{title}"
difficulty = "easy"
summary = "Scale a matrix product by the square root of the inner dimension."
function_name = "{function}"
# Seeds hidden_cases(rng) and probes(rng), so every machine grades on the same inputs.
seed = 1

# A shape entry is a dimension name (the same size wherever it appears), a fixed size ("3"), or
# one variadic group per shape, "*lead": any number of axes, the same sizes wherever "*lead"
# appears, outputs included (["*lead", "n", "d"] takes (n, d), (b, n, d), (b, h, n, d)...).
params = [
    {{ name = "x", kind = "array", shape = ["n", "d"] }},
    {{ name = "w", kind = "array", shape = ["d", "k"] }},
]
returns = {{ shape = ["n", "k"] }}

[tolerance]
rtol = 1e-7
atol = 1e-9

[[requirements]]
id = "scale"
title = "Scale by sqrt(d)"
text = "Divide the product x @ w by the square root of d, the inner dimension."
"""

_STATEMENT = """\
# {title}

Write `{function}(x, w) -> np.ndarray` returning $y = \\dfrac{{x\\,w}}{{\\sqrt{{d}}}}$, where
`x` has shape $(n, d)$ and `w` has shape $(d, k)$.
"""

_STARTER = '''\
import numpy as np


def {function}(x, w):
    """x: (n, d), w: (d, k). Returns (x @ w) / sqrt(d), of shape (n, k)."""
    raise NotImplementedError
'''

_REFERENCE = '''\
"""Reference solution: never served, never run in a sandbox. Each flag of FAULTS reproduces one
mistake of faults.toml; the plain call is the correct solution."""

import numpy as np

FAULTS = frozenset({{"no-scale", "scale-by-d"}})


def {function}(x, w, *, faults=frozenset()):
    unknown = set(faults) - FAULTS
    if unknown:
        raise ValueError(f"unknown fault flags {{sorted(unknown)}}")
    d = x.shape[1]
    scale = np.sqrt(d)
    if "no-scale" in faults:
        scale = 1.0
    elif "scale-by-d" in faults:
        scale = d
    return x @ w / scale
'''

_CASES = '''\
"""Public examples and a seeded generator of hidden cases."""

import numpy as np

from app.problems.cases import TestCase


def _case(name, rng, n, d, k, visibility="hidden"):
    inputs = {{"x": rng.standard_normal((n, d)), "w": rng.standard_normal((d, k))}}
    return TestCase(name=name, inputs=inputs, visibility=visibility)


def public_examples():
    rng = np.random.default_rng(0)
    return [_case("small", rng, 2, 3, 2, visibility="public")]


def hidden_cases(rng):
    return [_case(f"hidden-{{d}}", rng, 3, d, 2) for d in (2, 5, 9)]
'''

_PROBES = '''\
"""Probe inputs for diagnosis: d >= 2 and d != 1, so that every scale gives another output."""

from app.problems.errormodel import Probe


def probes(rng):
    out = []
    for d in (3, 7):
        inputs = {{"x": rng.standard_normal((3, d)), "w": rng.standard_normal((d, 2))}}
        out.append(Probe(f"probe-{{d}}", inputs))
    return out
'''

_FAULTS = """\
# The mistakes the grader can name; each is a flag of reference.py's FAULTS.

[faults.no-scale]
requirement = "scale"
title = "Product not scaled"
explanation = "Your output matches x @ w without the division by sqrt(d)."
hint = "Divide by np.sqrt(d), where d = x.shape[1]."
group = "scale"

[faults.scale-by-d]
requirement = "scale"
title = "Divided by d, not its square root"
explanation = "Your output matches x @ w divided by d."
hint = "The divisor is np.sqrt(d)."
group = "scale"

[contract.input-mutated]
title = "Inputs modified in place"
explanation = "Your function changed one of its input arrays."
hint = "Work on new arrays instead of changing x or w."

[contract.low-precision]
title = "Right, but only to low precision"
explanation = "Your output agrees to about three decimal places: float32 arithmetic."
hint = "Keep everything in float64."

[contract.shape-mismatch]
title = "Output has the wrong shape"
explanation = "The result must have shape (n, k)."
hint = "Check the shape of x @ w."

[contract.non-finite-output]
title = "Output contains NaN or infinity"
explanation = "Some of your outputs are NaN or infinite."
hint = "Look for a division by zero."

[contract.unrecognized]
title = "Wrong answer we cannot explain"
explanation = "No combination of the mistakes we know reproduces your output."
hint = "Compare your result with the public example."
"""

FILES = {
    "problem.toml": _PROBLEM_TOML,
    "statement.md": _STATEMENT,
    "starter.py": _STARTER,
    "reference.py": _REFERENCE,
    "cases.py": _CASES,
    "probes.py": _PROBES,
    "faults.toml": _FAULTS,
}


def function_name(problem_id: str) -> str:
    name = problem_id.replace("-", "_")
    return name if name[0].isalpha() else f"solve_{name}"


def write_skeleton(problem_id: str, directory: Path) -> Path:
    """Write the skeleton into ``directory / problem_id``, which must not exist yet."""
    target = directory / problem_id
    if target.exists():
        raise FileExistsError(f"{target} already exists")
    target.mkdir(parents=True)
    values = {
        "id": problem_id,
        "title": problem_id.replace("-", " ").capitalize(),
        "function": function_name(problem_id),
    }
    for name, template in FILES.items():
        (target / name).write_text(template.format(**values), encoding="utf-8")
    return target
