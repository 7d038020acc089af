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
        "causal-fill-inf",
    }
    | {f"fixed-heads={h}" for h in (2, 4, 8)}
)


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads, *, faults=frozenset()):
    unknown = set(faults) - FAULTS
    if unknown:
        raise ValueError(f"unknown fault flags {sorted(unknown)}")
    has = faults.__contains__
    if has("self-attention-only"):
        K = V = Q
    b, n_q, d_model = Q.shape
    n_k = K.shape[1]
    if has("single-head"):
        num_heads = 1
    for flag in faults:
        if flag.startswith("fixed-heads="):  # where it does not divide d_model, .view() fails
            num_heads = int(flag.partition("=")[2])
    d_k = d_model // num_heads

    def split(x):
        n = x.shape[1]
        if has("reshape-order") or has("reshape-order/textbook-merge"):
            return x.view(b, n, d_k, num_heads).permute(0, 3, 1, 2)
        if has("no-head-transpose") or has("no-head-transpose/plain-merge"):
            return x.view(b, num_heads, n, d_k)
        return x.view(b, n, num_heads, d_k).transpose(1, 2)

    if has("no-input-projections"):
        q, k, v = split(Q), split(K), split(V)
    elif has("weights-transposed"):  # nn.Linear's storage: y = x @ W.T
        q, k, v = split(Q @ W_q.T), split(K @ W_k.T), split(V @ W_v.T)
    else:
        q, k, v = split(Q @ W_q), split(K @ W_k), split(V @ W_v)

    scale = math.sqrt(d_k)
    if has("scale-dmodel"):
        scale = math.sqrt(d_model)
    elif has("no-scale"):
        scale = 1.0
    elif has("scale-dk-not-sqrt"):
        scale = d_k
    scores = q @ k.transpose(-2, -1) / scale
    if has("causal-mask-applied"):  # a decoder's masked_fill(mask == 0, -1e9)
        mask = torch.tril(torch.ones(n_q, n_k, dtype=torch.bool))
        scores = scores.masked_fill(mask == 0, float("-inf") if has("causal-fill-inf") else -1e9)

    if has("unstable-softmax"):  # exp of the raw scores: inf above ~709
        dim = -2 if has("softmax-wrong-axis") else (-2, -1) if has("global-softmax") else -1
        weights = scores.exp()
        weights = weights / weights.sum(dim=dim, keepdim=True)
    elif has("global-softmax"):
        weights = torch.softmax(scores.flatten(-2), dim=-1).view_as(scores)
    elif has("softmax-wrong-axis"):
        weights = torch.softmax(scores, dim=-2)
    else:
        weights = torch.softmax(scores, dim=-1)

    heads = weights @ v
    if has("no-transpose-back") or has("no-head-transpose/plain-merge"):
        out = heads.reshape(b, n_q, d_model)
    elif has("reshape-order"):  # undoes the wrong split consistently
        out = heads.permute(0, 2, 3, 1).reshape(b, n_q, d_model)
    else:
        out = heads.transpose(1, 2).reshape(b, n_q, d_model)
    if has("missing-wo"):
        return out
    return out @ (W_o.T if has("wo-transposed") else W_o)
