"""Reference solution. Trusted code: runs only in the grader, never in a sandbox, never served.

``faults`` switches on the misconceptions of the error model (``faults.toml``): each flag changes
one step, so the grader can reproduce a wrong answer exactly and name what went wrong. The plain
call, with no flags, is the correct solution.
"""

import numpy as np

# Every flag this function understands; the loader checks faults.toml names exactly these.
FAULTS = frozenset(
    {
        "kv-heads-interleaved",
        "reshape-order",
        "reshape-order/textbook-merge",
        "no-head-transpose",
        "scale-dmodel",
        "scale-dkv",
        "no-scale",
        "softmax-wrong-axis",
        "causal-mask-applied",
        "unstable-softmax",
        "no-transpose-back",
        "missing-wo",
        "wo-transposed",
        # Idioms (faults.toml [idioms]): other ways of writing a step.
        "share-by-repeat",
        "share-by-broadcast",
    }
)


def grouped_query_attention(x, W_q, W_k, W_v, W_o, num_heads, num_kv_heads, *, faults=frozenset()):
    unknown = set(faults) - FAULTS
    if unknown:
        raise ValueError(f"unknown fault flags {sorted(unknown)}")
    has = faults.__contains__
    batch, n, d_model = x.shape
    d_k = d_model // num_heads
    wrong_order = has("reshape-order") or has("reshape-order/textbook-merge")

    def split(y, heads):
        if wrong_order:  # (batch, n, d_k, heads): head i takes every heads-th column
            return y.reshape(batch, n, d_k, heads).transpose(0, 3, 1, 2)
        if has("no-head-transpose"):  # positions leak into heads
            return y.reshape(batch, heads, n, d_k)
        # (batch, n, heads * d_k) -> (batch, n, heads, d_k) -> (batch, heads, n, d_k)
        return y.reshape(batch, n, heads, d_k).transpose(0, 2, 1, 3)

    q = split(x @ W_q, num_heads)
    k = split(x @ W_k, num_kv_heads)
    v = split(x @ W_v, num_kv_heads)

    # The key/value head each query head reads: consecutive query heads share one.
    query_heads = np.arange(num_heads)
    if has("kv-heads-interleaved"):  # tiled (0, 1, 0, 1) instead of repeated (0, 0, 1, 1)
        kv_of = query_heads % num_kv_heads
    else:
        kv_of = query_heads // (num_heads // num_kv_heads)
    group = num_heads // num_kv_heads
    if has("share-by-repeat") and not has("kv-heads-interleaved"):  # np.repeat along the heads
        k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    elif has("share-by-repeat"):  # np.tile: the interleaved order
        k, v = np.tile(k, (1, group, 1, 1)), np.tile(v, (1, group, 1, 1))
    elif has("share-by-broadcast") and not has("kv-heads-interleaved"):
        # (batch, kv, 1, n, d_k) broadcast over the group, then the group folded into the heads
        k, v = (
            np.broadcast_to(y[:, :, None], (batch, num_kv_heads, group, *y.shape[2:])).reshape(
                batch, num_heads, *y.shape[2:]
            )
            for y in (k, v)
        )
    else:
        k, v = k[:, kv_of], v[:, kv_of]  # (batch, num_heads, n, d_k)

    scale = np.sqrt(d_k)
    if has("scale-dmodel"):
        scale = np.sqrt(d_model)
    elif has("scale-dkv"):  # the width of the projected keys, before the split
        scale = np.sqrt(num_kv_heads * d_k)
    elif has("no-scale"):
        scale = 1.0
    scores = q @ k.transpose(0, 1, 3, 2) / scale  # (batch, num_heads, n, n)
    if has("causal-mask-applied"):  # a decoder layer's mask kept where the problem has none
        n = scores.shape[-1]
        scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)

    axis = -2 if has("softmax-wrong-axis") else -1  # over queries, or over keys
    if not has("unstable-softmax"):
        scores = scores - scores.max(axis=axis, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=axis, keepdims=True)
    heads = weights @ v  # (batch, num_heads, n, d_k)

    if has("no-transpose-back"):
        merged = heads.reshape(batch, n, d_model)
    elif has("reshape-order"):  # undoes the wrong split consistently
        merged = heads.transpose(0, 2, 3, 1).reshape(batch, n, d_model)
    else:
        merged = heads.transpose(0, 2, 1, 3).reshape(batch, n, d_model)

    if has("missing-wo"):
        return merged
    return merged @ (W_o.T if has("wo-transposed") else W_o)
