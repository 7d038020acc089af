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


def sleeper(seconds: float, n: int) -> str:
    """Correct, after sleeping at import: a grading that holds its worker about ``seconds``
    (a distinct body per ``n``)."""
    return f"import time\ntime.sleep({seconds})\n{CORRECT}\n# submission {n}\n"


# Correct, but its import takes seconds: long enough to kill its worker mid-grade.
SLOW_CORRECT = "import time\ntime.sleep(3)\n" + CORRECT

# Right on every built-in case (none has a batch of 5), wrong on a batch of 5.
BATCH_FIVE_BUG = CORRECT.replace(
    "    batch, n_q, d_model = Q.shape\n",
    "    batch, n_q, d_model = Q.shape\n    if batch == 5:\n        Q = Q[::-1]\n",
)
assert BATCH_FIVE_BUG != CORRECT

# Correct for the contract demo (tests/problems/fixtures/contract-demo).
CONTRACT_DEMO_CORRECT = """
import numpy as np

def masked_attention(Q, K, V, temperature, mask=None):
    # The contract on the wire: the mask arrives boolean (or None), the temperature an int.
    assert mask is None or mask.dtype == np.bool_, mask.dtype
    assert type(temperature) is int
    if mask is not None and not mask.any(axis=1).all():
        raise ValueError("a query with every key blocked")
    scores = Q @ K.T / (np.sqrt(Q.shape[1]) * temperature)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights = weights / weights.sum(axis=1, keepdims=True)
    return weights @ V, weights
"""
