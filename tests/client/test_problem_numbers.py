"""`tj show` lists a problem's int and float parameters with their bounds and default, from the
problem JSON the server really serves (the float demo and a shipped problem with ints)."""

from __future__ import annotations

from pathlib import Path

from tensorjudge_client import view

from tests.support.folders import serving_folder

FIXTURES = Path(__file__).parents[1] / "problems" / "fixtures-float"


def test_show_lists_the_numbers_with_bounds_and_default(tmp_path: Path):
    with serving_folder(tmp_path, FIXTURES) as api:
        layer_norm = api.get("/api/problems/layer-norm").json()
        attention = api.get("/api/problems/multi-head-attention").json()
    text = view.to_text(view.problem_renderable(layer_norm), width=120)
    assert "layer_norm(x, gamma, beta, eps=1e-05)" in text
    assert "eps: a number from 0.0 to 1.0, default 1e-05" in text
    assert "- `num_heads`: an integer from 1 to 64\n" in view.problem_markdown(attention) + "\n"
    # Arrays are the statement's business (shapes); only the numbers are listed.
    assert "`x`" not in view.problem_markdown(layer_norm).split("## Numbers")[1]
