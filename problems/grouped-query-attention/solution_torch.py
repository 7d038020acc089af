"""The PyTorch reference: a correct solution written as a student would (tensors in, a tensor
out), with the fault flags of reference.py written in PyTorch's own idiom. Trusted: never served.

``faults`` switches on the misconceptions of the error model (``faults.toml``) exactly as it does
for reference.py; the plain call is the correct solution. ``problems check`` grades the plain call
and every single fault and pair in the sandbox as PyTorch jobs, and each PyTorch habit of
faults.toml ([habits]) is a few edits of the plain call's lines.
"""

import math

import torch

# The flags of reference.py, every one written here too (``problems check`` compares them).
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
        "share-by-repeat",
        "share-by-broadcast",
    }
)


def grouped_query_attention(x, W_q, W_k, W_v, W_o, num_heads, num_kv_heads, *, faults=frozenset()):
    unknown = set(faults) - FAULTS
    if unknown:
        raise ValueError(f"unknown fault flags {sorted(unknown)}")
    has = faults.__contains__
    b, n, d_model = x.shape
    d_k = d_model // num_heads

    def split(y, heads):
        if has("reshape-order") or has("reshape-order/textbook-merge"):
            return y.view(b, n, d_k, heads).permute(0, 3, 1, 2)
        if has("no-head-transpose"):
            return y.view(b, heads, n, d_k)
        return y.view(b, n, heads, d_k).transpose(1, 2)

    q = split(x @ W_q, num_heads)
    k = split(x @ W_k, num_kv_heads)
    v = split(x @ W_v, num_kv_heads)

    # Each group of consecutive query heads shares one key/value head.
    group = num_heads // num_kv_heads
    interleaved = has("kv-heads-interleaved")
    if has("share-by-repeat") and interleaved:  # Tensor.repeat tiles: heads 0, 1, 0, 1
        k, v = k.repeat(1, group, 1, 1), v.repeat(1, group, 1, 1)
    elif has("share-by-repeat"):
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    elif has("share-by-broadcast") and not interleaved:  # as Llama's repeat_kv
        k, v = (
            y[:, :, None].expand(b, num_kv_heads, group, n, d_k).reshape(b, num_heads, n, d_k)
            for y in (k, v)
        )
    else:
        heads = torch.arange(num_heads)
        kv_of = heads % num_kv_heads if interleaved else heads // group
        k, v = k[:, kv_of], v[:, kv_of]

    scale = math.sqrt(d_k)
    if has("scale-dmodel"):
        scale = math.sqrt(d_model)
    elif has("scale-dkv"):  # the width of the projected keys, before the split
        scale = math.sqrt(num_kv_heads * d_k)
    elif has("no-scale"):
        scale = 1.0
    scores = q @ k.transpose(-2, -1) / scale
    if has("causal-mask-applied"):  # a decoder layer's mask kept where the problem has none
        future = torch.ones(n, n, dtype=torch.bool).triu(diagonal=1)
        scores = scores.masked_fill(future, float("-inf"))

    if has("unstable-softmax"):  # exp of the raw scores: inf above ~709
        weights = scores.exp()
        weights = weights / weights.sum(dim=-2 if has("softmax-wrong-axis") else -1, keepdim=True)
    elif has("softmax-wrong-axis"):
        weights = torch.softmax(scores, dim=-2)
    else:
        weights = torch.softmax(scores, dim=-1)

    heads = weights @ v
    if has("no-transpose-back"):
        out = heads.reshape(b, n, d_model)
    elif has("reshape-order"):  # undoes the wrong split consistently
        out = heads.permute(0, 2, 3, 1).reshape(b, n, d_model)
    else:
        out = heads.transpose(1, 2).reshape(b, n, d_model)
    if has("missing-wo"):
        return out
    return out @ (W_o.T if has("wo-transposed") else W_o)
