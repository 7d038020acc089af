"""Reference solution. Trusted code: runs only in the grader, never in a sandbox, never served.

``faults`` switches on the misconceptions of the error model (``faults.toml``): each flag changes
one step, so the grader can reproduce a wrong answer exactly and name what went wrong. The plain
call, with no flags, is the correct solution.
"""

import numpy as np

# Every flag this function understands; the loader checks faults.toml names exactly these.
FAULTS = frozenset(
    {
        "weights-transposed",
        "no-input-projections",
        "self-attention-only",
        "reshape-order",
        "reshape-order/textbook-merge",
        "no-head-transpose",
        "no-head-transpose/plain-merge",
        "single-head",
        "scale-dmodel",
        "no-scale",
        "scale-dk-not-sqrt",
        "softmax-wrong-axis",
        "global-softmax",
        "unstable-softmax",
        "causal-mask-applied",
        "no-transpose-back",
        "missing-wo",
        "wo-transposed",
        # Idioms (faults.toml [idioms]): other ways of writing a step.
        "causal-fill-inf",
    }
    # A head count written into the code: the search tries each of these.
    | {f"fixed-heads={h}" for h in (2, 4, 8)}
)


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads, *, faults=frozenset()):
    unknown = set(faults) - FAULTS
    if unknown:
        raise ValueError(f"unknown fault flags {sorted(unknown)}")
    has = faults.__contains__
    batch, n_q, d_model = Q.shape
    if has("single-head"):  # num_heads ignored: one head as wide as the model
        num_heads = 1
    fixed = [f for f in faults if f.startswith("fixed-heads=")]
    if fixed:  # a constant head count: the reshape fails where it does not divide d_model
        num_heads = int(fixed[0].partition("=")[2])
        if d_model % num_heads:
            raise ValueError(f"cannot split {d_model} columns into {num_heads} heads")
    d_k = d_model // num_heads
    wrong_order = has("reshape-order") or has("reshape-order/textbook-merge")
    plain_split = has("no-head-transpose") or has("no-head-transpose/plain-merge")

    def project(x, W):
        if has("no-input-projections"):
            return x
        return x @ (W.T if has("weights-transposed") else W)

    def split(x):
        b, n = x.shape[0], x.shape[1]
        if wrong_order:  # (b, n, d_k, h): head i takes every h-th column
            return x.reshape(b, n, d_k, num_heads).transpose(0, 3, 1, 2)
        if plain_split:  # positions leak into heads
            return x.reshape(b, num_heads, n, d_k)
        # (batch, n, d_model) -> (batch, n, h, d_k) -> (batch, h, n, d_k)
        return x.reshape(b, n, num_heads, d_k).transpose(0, 2, 1, 3)

    if has("self-attention-only"):
        K = V = Q
    q, k, v = split(project(Q, W_q)), split(project(K, W_k)), split(project(V, W_v))

    scale = np.sqrt(d_k)
    if has("scale-dmodel"):
        scale = np.sqrt(d_model)
    elif has("no-scale"):
        scale = 1.0
    elif has("scale-dk-not-sqrt"):
        scale = d_k
    scores = q @ k.transpose(0, 1, 3, 2) / scale  # (batch, h, n_q, n_k)
    if has("causal-mask-applied"):  # a decoder's mask: query i sees keys 0..i
        # filled with -1e9 as masked_fill(mask == 0, -1e9) does: a softmax over the wrong axis
        # then stays finite on a column with every query blocked
        fill = -np.inf if has("causal-fill-inf") else -1e9
        scores = np.where(np.tril(np.ones(scores.shape[-2:], dtype=bool)), scores, fill)

    if has("softmax-wrong-axis") or has("global-softmax"):
        # over queries, or over the whole score matrix
        axis = -2 if has("softmax-wrong-axis") else (-2, -1)
        peak = scores.max(axis=axis, keepdims=True)
    else:
        axis = -1  # over keys
        peak = scores.max(axis=-1, keepdims=True)
    if not has("unstable-softmax"):
        scores = scores - peak
    weights = np.exp(scores)
    weights /= weights.sum(axis=axis, keepdims=True)
    heads = weights @ v  # (batch, h, n_q, d_k)

    if has("no-transpose-back") or has("no-head-transpose/plain-merge"):
        merged = heads.reshape(batch, n_q, d_model)
    elif has("reshape-order"):  # undoes the wrong split consistently
        merged = heads.transpose(0, 2, 3, 1).reshape(batch, n_q, d_model)
    else:
        merged = heads.transpose(0, 2, 1, 3).reshape(batch, n_q, d_model)

    if has("missing-wo"):
        return merged
    return merged @ (W_o.T if has("wo-transposed") else W_o)
