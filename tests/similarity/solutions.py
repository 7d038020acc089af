"""Correct multi_head_attention solutions written independently, the way a class writes them
(loops, einsum, reshape-and-transpose, a helper per step, batched matmuls, per-head weight
slices), and two planted copies of one of them: variables renamed, statements reordered,
comments changed."""

from __future__ import annotations

import io
import keyword
import random
import re
import tokenize

RESHAPE = '''import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    """Multi-head scaled dot-product attention."""
    batch, n_q, d_model = Q.shape
    n_k = K.shape[1]
    d_k = d_model // num_heads
    # project, then split the model dimension into heads
    q = (Q @ W_q).reshape(batch, n_q, num_heads, d_k).transpose(0, 2, 1, 3)
    k = (K @ W_k).reshape(batch, n_k, num_heads, d_k).transpose(0, 2, 1, 3)
    v = (V @ W_v).reshape(batch, n_k, num_heads, d_k).transpose(0, 2, 1, 3)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_k)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights = weights / weights.sum(axis=-1, keepdims=True)
    out = weights @ v
    out = out.transpose(0, 2, 1, 3).reshape(batch, n_q, d_model)
    return out @ W_o
'''

EINSUM = """import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    b, nq, dm = Q.shape
    hd = dm // num_heads
    Qh = np.einsum("bnd,de->bne", Q, W_q).reshape(b, nq, num_heads, hd)
    Kh = np.einsum("bnd,de->bne", K, W_k).reshape(b, K.shape[1], num_heads, hd)
    Vh = np.einsum("bnd,de->bne", V, W_v).reshape(b, V.shape[1], num_heads, hd)
    logits = np.einsum("bqhd,bkhd->bhqk", Qh, Kh) / hd ** 0.5
    logits -= np.max(logits, axis=3, keepdims=True)
    p = np.exp(logits)
    p /= np.sum(p, axis=3, keepdims=True)
    ctx = np.einsum("bhqk,bkhd->bqhd", p, Vh).reshape(b, nq, dm)
    return np.einsum("bnd,de->bne", ctx, W_o)
"""

LOOPS = """import math

import numpy as np


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    d_model = Q.shape[-1]
    size = d_model // num_heads
    projected_q = np.matmul(Q, W_q)
    projected_k = np.matmul(K, W_k)
    projected_v = np.matmul(V, W_v)
    outputs = []
    for head in range(num_heads):
        lo, hi = head * size, (head + 1) * size
        att = np.matmul(projected_q[:, :, lo:hi], np.swapaxes(projected_k[:, :, lo:hi], 1, 2))
        att = softmax(att / math.sqrt(size))
        outputs.append(np.matmul(att, projected_v[:, :, lo:hi]))
    concatenated = np.concatenate(outputs, axis=-1)
    return np.matmul(concatenated, W_o)
"""

HELPERS = """import numpy as np


def split_heads(x, h):
    n_batch, length, width = x.shape
    return np.transpose(np.reshape(x, (n_batch, length, h, width // h)), (0, 2, 1, 3))


def merge_heads(x):
    n_batch, h, length, depth = x.shape
    return np.reshape(np.transpose(x, (0, 2, 1, 3)), (n_batch, length, h * depth))


def stable_softmax(z, axis=-1):
    shifted = z - np.amax(z, axis=axis, keepdims=True)
    num = np.exp(shifted)
    return num / np.sum(num, axis=axis, keepdims=True)


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    queries = split_heads(np.dot(Q, W_q), num_heads)
    keys = split_heads(np.dot(K, W_k), num_heads)
    values = split_heads(np.dot(V, W_v), num_heads)
    depth = queries.shape[-1]
    similarity = np.matmul(queries, np.swapaxes(keys, -1, -2)) * (1.0 / np.sqrt(depth))
    attention = stable_softmax(similarity)
    return np.dot(merge_heads(np.matmul(attention, values)), W_o)
"""

PER_HEAD_WEIGHTS = """import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    result = np.zeros(Q.shape[:2] + (W_o.shape[1],))
    width = W_q.shape[1] // num_heads
    for i in range(num_heads):
        cols = slice(i * width, (i + 1) * width)
        a = Q @ W_q[:, cols]
        c = K @ W_k[:, cols]
        d = V @ W_v[:, cols]
        s = np.einsum("bik,bjk->bij", a, c) / np.sqrt(width)
        s = np.exp(s - s.max(-1)[..., None])
        s = s / s.sum(-1)[..., None]
        result += (s @ d) @ W_o[cols, :]
    return result
"""

BATCHED = """import numpy as np


def _heads(t, count):
    return np.stack(np.split(t, count, axis=-1), axis=1)


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    qs = _heads(Q @ W_q, num_heads)
    ks = _heads(K @ W_k, num_heads)
    vs = _heads(V @ W_v, num_heads)
    dim = qs.shape[-1]
    energy = np.einsum("bhqd,bhkd->bhqk", qs, ks)
    energy = energy / np.sqrt(float(dim))
    energy = np.exp(energy - energy.max(axis=-1, keepdims=True))
    energy /= energy.sum(axis=-1, keepdims=True)
    mixed = energy @ vs
    joined = np.concatenate(list(np.moveaxis(mixed, 1, 0)), axis=-1)
    return joined @ W_o
"""

INDEPENDENT = {
    "reshape": RESHAPE,
    "einsum": EINSUM,
    "loops": LOOPS,
    "helpers": HELPERS,
    "per_head_weights": PER_HEAD_WEIGHTS,
    "batched": BATCHED,
}

# RESHAPE copied: every variable renamed, independent statements swapped, comments and
# docstring rewritten.
COPY_RENAMED = """import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    # my own implementation!!
    bs, len_q, width = Q.shape
    head_dim = width // num_heads
    len_k = K.shape[1]
    # keys first, then values, then queries
    keys = (K @ W_k).reshape(bs, len_k, num_heads, head_dim).transpose(0, 2, 1, 3)
    vals = (V @ W_v).reshape(bs, len_k, num_heads, head_dim).transpose(0, 2, 1, 3)
    queries = (Q @ W_q).reshape(bs, len_q, num_heads, head_dim).transpose(0, 2, 1, 3)
    att = queries @ keys.transpose(0, 1, 3, 2) / np.sqrt(head_dim)
    att = att - att.max(axis=-1, keepdims=True)
    probs = np.exp(att)
    probs = probs / probs.sum(axis=-1, keepdims=True)
    merged = probs @ vals
    merged = merged.transpose(0, 2, 1, 3).reshape(bs, len_q, width)
    return merged @ W_o
"""

COPY_REORDERED = '''import numpy as np


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    """Attention with several heads (see lecture 7)."""
    n_k = K.shape[1]
    B, N, D = Q.shape
    dh = D // num_heads
    vv = (V @ W_v).reshape(B, n_k, num_heads, dh).transpose(0, 2, 1, 3)
    qq = (Q @ W_q).reshape(B, N, num_heads, dh).transpose(0, 2, 1, 3)
    kk = (K @ W_k).reshape(B, n_k, num_heads, dh).transpose(0, 2, 1, 3)
    sc = qq @ kk.transpose(0, 1, 3, 2) / np.sqrt(dh)
    sc = sc - sc.max(axis=-1, keepdims=True)
    w = np.exp(sc)
    w = w / w.sum(axis=-1, keepdims=True)
    o = w @ vv
    return o.transpose(0, 2, 1, 3).reshape(B, N, D) @ W_o
'''


IDIOMS = (
    ("np.sqrt(d_k)", "d_k ** 0.5"),
    ("scores.max(axis=-1, keepdims=True)", "np.max(scores, axis=-1, keepdims=True)"),
    ("weights.sum(axis=-1, keepdims=True)", "np.sum(weights, axis=-1, keepdims=True)"),
)


def own_version(
    code: str, rng: random.Random, *, printing: bool = True, idioms: bool = True
) -> str:
    """``code`` made a student's own without changing what it computes: with ``idioms`` some
    steps written another common way, a few statements of their own (a check, a constant, with
    ``printing`` sometimes a debug print), sometimes a helper of their own."""
    for ours, theirs in IDIOMS:
        if idioms and rng.random() < 0.5:
            code = code.replace(ours, theirs)
    extras = [
        f"    assert Q.shape[-1] % num_heads == 0, {rng.randrange(10**6)}",
        f"    eps_{rng.randrange(100)} = {rng.random():.6f}",
        f"    print('debug', Q.shape, {rng.randrange(1000)})"
        if printing and rng.random() < 0.3
        else "",
    ]
    lines = code.split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("def multi_head_attention"))
    lines[at + 1 : at + 1] = [e for e in extras if e]
    helper = (
        f"\n\ndef check_{rng.randrange(1000)}(x, limit={rng.randrange(1, 99)}):\n"
        f"    return abs(x).max() < limit * {rng.random():.4f}\n"
    )
    return "\n".join(lines) + (helper if rng.random() < 0.5 else "")


def planted_copy(code: str, rng: random.Random) -> str:
    """``code`` as a student would disguise it: every name of theirs renamed, their own
    statements moved, comments and the docstring rewritten."""
    names = {
        t.string
        for t in tokenize.generate_tokens(io.StringIO(code).readline)
        if t.type == tokenize.NAME and not keyword.iskeyword(t.string)
    }
    keep = {
        "np",
        "numpy",
        "math",
        "multi_head_attention",
        "Q",
        "K",
        "V",
        "W_q",
        "W_k",
        "W_v",
        "W_o",
        "num_heads",
        "shape",
        "reshape",
        "transpose",
        "max",
        "sum",
        "exp",
        "sqrt",
        "einsum",
        "matmul",
        "swapaxes",
        "concatenate",
        "dot",
        "split",
        "stack",
        "moveaxis",
        "zeros",
        "amax",
        "abs",
        "range",
        "list",
        "float",
        "slice",
        "append",
        "print",
        "axis",
        "keepdims",
    }
    # Sorted: a set's order changes between processes, and the copies should not.
    renames = {n: f"my_{n.lower()}_{rng.randrange(100)}" for n in sorted(names - keep)}
    out = []
    for line in code.split("\n"):
        stripped = line.strip()
        if stripped.startswith("#") or stripped.startswith('"""'):
            continue
        out.append(re.sub(r"[A-Za-z_][A-Za-z_0-9]*", lambda m: renames.get(m[0], m[0]), line))
    at = next(i for i, line in enumerate(out) if line.startswith("def multi_head_attention"))
    own = [i for i, line in enumerate(out) if "assert Q.shape" in line or "eps_" in line]
    moved = [out[i] for i in own]
    out = [line for i, line in enumerate(out) if i not in own]
    out[at + 1 : at + 1] = ["    # computing the attention", *moved[::-1]]
    return "\n".join(out)
