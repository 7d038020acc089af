"""A real notebook, executed by nbclient on an ipykernel, uses the client the way a student
would: fetch the problem, submit a wrong function, read the diagnosis, fix it, get accepted."""

from __future__ import annotations

import json
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from sandbox.backends.runtime import find_torch
from tests.client.conftest import PROBLEM, Grader
from tests.problems.torch_solutions import SOLUTIONS
from tests.support.codes import CORRECT, WRONG

pytestmark = pytest.mark.timeout(300)

# The solutions as a student writes them in a cell: `import numpy as np` in its own cell, the
# function in another, so the submission needs the client to carry the import along.
WRONG_CELL = WRONG.replace("import numpy as np\n", "")
FIXED_CELL = CORRECT.replace("import numpy as np\n", "")
assert "np." in WRONG_CELL and "import numpy" not in WRONG_CELL


def notebook(url: str) -> nbformat.NotebookNode:
    cells = [
        f"from tensorjudge_client import Judge\njudge = Judge({url!r})",
        f"judge.problem({PROBLEM!r})",
        "import numpy as np",
        WRONG_CELL,
        f"wrong = judge.submit({PROBLEM!r}, multi_head_attention)\nwrong",
        FIXED_CELL,
        f"fixed = judge.submit({PROBLEM!r}, multi_head_attention)\nfixed",
        "print(wrong.verdict, fixed.verdict, wrong.id != fixed.id)",
        "judge.problems()",
        # A weight defined in another cell: the client names it before anything is sent.
        "scale = np.ones(3)\n"
        "def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):\n"
        "    return Q * scale\n"
        f"sent = judge.code_for({PROBLEM!r}, multi_head_attention)",
    ]
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])


def outputs(cell: Any, kind: str) -> list[Any]:
    return [o["data"][kind] for o in cell.outputs if kind in o.get("data", {})]


def test_notebook_submits_a_wrong_function_then_the_fix(grader: Grader):
    nb = notebook(grader.url)
    NotebookClient(nb, kernel_name="python3", timeout=240).execute()
    errors = [o for c in nb.cells for o in c.outputs if o["output_type"] == "error"]
    assert not errors, json.dumps(errors, indent=1)[:3000]

    problem = nb.cells[1]
    markdown = outputs(problem, "text/markdown")
    assert markdown and markdown[0].startswith("# Multi-head attention")
    assert "$d_{model}$" in markdown[0]  # math for Jupyter's renderer

    wrong = outputs(nb.cells[4], "text/html")
    assert wrong, "the result shows as HTML in Jupyter"
    html = wrong[0]
    assert 'data-verdict="wrong_answer"' in html
    assert 'data-code="missing-wo"' in html and "Output projection W_o missing" in html
    assert "Hint:" in html
    assert 'data-requirement="merge-and-project"' in html and "(failed)" in html
    assert "<svg" in html and 'data-picture="heatmap"' in html  # the error heat map
    # The text view is there too, for a frontend that cannot show HTML.
    assert "missing-wo" in outputs(nb.cells[4], "text/plain")[0]

    fixed = outputs(nb.cells[6], "text/html")
    assert fixed and 'data-verdict="accepted"' in fixed[0]
    printed = "".join(o.get("text", "") for o in nb.cells[7].outputs)
    assert printed.strip() == "wrong_answer accepted True"

    listing = outputs(nb.cells[8], "text/html")
    assert listing and "<caption>Problems</caption>" in listing[0] and PROBLEM in listing[0]
    assert "Multi-head attention" in outputs(nb.cells[8], "text/plain")[0]

    warned = "".join(o.get("text", "") for o in nb.cells[9].outputs if o.get("name") == "stderr")
    assert "MissingNamesWarning: multi_head_attention uses scale, which the grader" in warned
    assert " np," not in warned  # a module goes along as its import


@pytest.mark.skipif(find_torch() is None, reason="the torch extra is not installed")
def test_notebook_grades_a_torch_function_as_torch(grader: Grader):
    # `import math, torch` in a cell of its own: the client carries the imports along, and the
    # server reads the framework from them.
    body = "\n".join(
        line for line in SOLUTIONS[PROBLEM].splitlines() if not line.startswith("import ")
    )
    assert "torch." in body and "import torch" not in body
    cells = [
        f"from tensorjudge_client import Judge\njudge = Judge({grader.url!r})",
        "import math\nimport torch",
        body,
        f"graded = judge.submit({PROBLEM!r}, multi_head_attention)\n"
        "print(graded.verdict, graded.raw['framework'])",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(nb, timeout=240, kernel_name="python3").execute()
    printed = "".join(o.get("text", "") for o in nb.cells[3].outputs)
    assert printed.split() == ["accepted", "torch"], nb.cells[3].outputs
