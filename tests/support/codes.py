"""Submissions used by the tests: a correct solution, a wrong one, and one that never ends."""

from __future__ import annotations

CORRECT = """
import numpy as np

def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    b, n_q, d = Q.shape
    d_k = d // num_heads

    def split(x):
        return x.reshape(x.shape[0], x.shape[1], num_heads, d_k).transpose(0, 2, 1, 3)

    q, k, v = split(Q @ W_q), split(K @ W_k), split(V @ W_v)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_k)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    return (w @ v).transpose(0, 2, 1, 3).reshape(b, n_q, d) @ W_o
"""

# Forgets the output projection W_o: a wrong answer the grader can name.
WRONG = CORRECT.replace(".reshape(b, n_q, d) @ W_o", ".reshape(b, n_q, d)")

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
