"""Correct PyTorch solutions of the five attention problems, written the way a student would
(tensors in, tensors out), and single faults written in PyTorch's own habits."""

from __future__ import annotations

MULTI_HEAD = """
import math
import torch


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    b, n_q, d_model = Q.shape
    n_k = K.shape[1]
    d_k = d_model // num_heads
    q = (Q @ W_q).view(b, n_q, num_heads, d_k).transpose(1, 2)
    k = (K @ W_k).view(b, n_k, num_heads, d_k).transpose(1, 2)
    v = (V @ W_v).view(b, n_k, num_heads, d_k).transpose(1, 2)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    weights = torch.softmax(scores, dim=-1)
    out = (weights @ v).transpose(1, 2).reshape(b, n_q, d_model)
    return out @ W_o
"""

CAUSAL = """
import math
import torch


def causal_attention(q, k, v):
    n_q, n_k = q.shape[-2], k.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    blocked = torch.ones(n_q, n_k, dtype=torch.bool).triu(diagonal=n_k - n_q + 1)
    scores = scores.masked_fill(blocked, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
"""

GROUPED = """
import math
import torch


def grouped_query_attention(x, W_q, W_k, W_v, W_o, num_heads, num_kv_heads):
    b, n, d_model = x.shape
    d_k = d_model // num_heads
    q = (x @ W_q).view(b, n, num_heads, d_k).transpose(1, 2)
    k = (x @ W_k).view(b, n, num_kv_heads, d_k).transpose(1, 2)
    v = (x @ W_v).view(b, n, num_kv_heads, d_k).transpose(1, 2)
    group = num_heads // num_kv_heads
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_k), dim=-1)
    out = (weights @ v).transpose(1, 2).reshape(b, n, d_model)
    return out @ W_o
"""

MASKED = """
import math
import torch


def masked_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        if torch.broadcast_to(mask, scores.shape).all(dim=-1).any():
            raise ValueError("the mask blocks every key of some query")
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
"""

SOFTMAX_BACKWARD = """
import torch


def softmax_backward(probabilities, upstream, axis=-1):
    inner = (probabilities * upstream).sum(dim=axis, keepdim=True)
    return probabilities * (upstream - inner)
"""

SOLUTIONS = {
    "multi-head-attention": MULTI_HEAD,
    "causal-attention": CAUSAL,
    "grouped-query-attention": GROUPED,
    "masked-attention": MASKED,
    "softmax-backward": SOFTMAX_BACKWARD,
}

# Single faults in PyTorch's habits: (problem, what changes in its solution, the fault code the
# diagnosis must name). Each is one edit of the correct solution above.
HABITS = [
    # nn.Linear's convention: the weight applied transposed (x @ W.T).
    (
        "multi-head-attention",
        ("(Q @ W_q)", "(Q @ W_q.T)", "(K @ W_k)", "(K @ W_k.T)", "(V @ W_v)", "(V @ W_v.T)"),
        "weights-transposed",
    ),
    # F.softmax over the wrong dim.
    ("multi-head-attention", ("torch.softmax(scores, dim=-1)", "torch.softmax(scores, dim=-2)"),
     "softmax-wrong-axis"),
    # masked_fill with the mask's meaning inverted.
    ("masked-attention", ("masked_fill(mask,", "masked_fill(~mask,"), "mask-inverted"),
    # torch.triu's diagonal one too low: each query blocks itself.
    ("causal-attention", ("triu(diagonal=n_k - n_q + 1)", "triu(diagonal=n_k - n_q)"),
     "diagonal-blocked"),
    # float32 made by torch.tensor(...) without a dtype: every product in single precision.
    (
        "multi-head-attention",
        (
            "    d_k = d_model // num_heads\n",
            "    d_k = d_model // num_heads\n"
            "    Q, K, V, W_q, W_k, W_v, W_o = (\n"
            "        torch.tensor(t.tolist()) for t in (Q, K, V, W_q, W_k, W_v, W_o)\n"
            "    )\n",
        ),
        "low-precision",
    ),
]  # fmt: skip


def with_habit(problem_id: str, edits: tuple[str, ...]) -> str:
    code = SOLUTIONS[problem_id]
    for old, new in zip(edits[::2], edits[1::2], strict=True):
        assert old in code, old
        code = code.replace(old, new)
    return code
