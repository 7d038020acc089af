"""Submissions used by the tests: a correct solution, a wrong one, and one that never ends."""

from __future__ import annotations

from pathlib import Path

CORPUS = Path(__file__).resolve().parents[1] / "grading" / "corpus"


def corpus_source(name: str) -> str:
    """A corpus submission without its ``# expect:`` header: the grading tests' own solutions."""
    lines = (CORPUS / name).read_text().splitlines(keepends=True)
    while lines and (lines[0].startswith("#") or not lines[0].strip()):
        lines.pop(0)
    return "".join(lines)


CORRECT = corpus_source("correct_reshape.py")
# Forgets the output projection W_o: a wrong answer the grader can name ("missing-wo").
WRONG = CORRECT.replace(".reshape(batch, n_q, d_model) @ W_o", ".reshape(batch, n_q, d_model)")
assert WRONG != CORRECT

TIMEOUT = """
def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    while True:
        pass
"""

EXPECTED = {"correct": "accepted", "wrong": "wrong_answer", "timeout": "time_limit_exceeded"}
CODES = {"correct": CORRECT, "wrong": WRONG, "timeout": TIMEOUT}


def variant(kind: str, n: int) -> str:
    """A distinct body per submission (a trailing comment), so idempotency keys stay honest."""
    return CODES[kind] + f"\n# submission {n}\n"


# Correct, but its import takes seconds: long enough to kill its worker mid-grade.
SLOW_CORRECT = "import time\ntime.sleep(3)\n" + CORRECT
