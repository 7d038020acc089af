"""The PyTorch reference: a correct solution written as a student would (tensors in, a tensor
out), with the fault flags of reference.py written in PyTorch's own idiom. Trusted: never served.

``faults`` switches on the misconceptions of the error model (``faults.toml``) exactly as it does
for reference.py; the plain call is the correct solution. ``problems check`` grades the plain call
and every single fault and pair in the sandbox as PyTorch jobs.
"""

import torch  # noqa: F401  (the import says PyTorch: no torch call is needed)

# The flags of reference.py, every one written here too (``problems check`` compares them).
FAULTS = frozenset(
    {
        "diagonal-only",
        "unweighted-sum",
        "unweighted-mean",
        "ignores-axis",
        "sign-flipped",
        "missing-outer-p",
        "no-keepdims",
        "fixed-axis-1",
        "sums-whole-array",
    }
)


def softmax_backward(probabilities, upstream, axis=-1, *, faults=frozenset()):
    unknown = set(faults) - FAULTS
    if unknown:
        raise ValueError(f"unknown fault flags {sorted(unknown)}")
    has = faults.__contains__
    p, g = probabilities, upstream
    dim = axis
    if has("ignores-axis"):
        dim = -1
    elif has("fixed-axis-1"):  # written for a (batch, classes) matrix
        dim = 1
    elif has("sums-whole-array"):  # .sum() with no dim: one number for the whole tensor
        dim = None
    keep = not has("no-keepdims")  # without keepdim the sum broadcasts against the last axes

    if has("diagonal-only"):  # only the Jacobian's diagonal p_i (1 - p_i)
        inner = p * g
    elif has("unweighted-sum"):
        inner = g.sum(dim=dim, keepdim=keep)
    elif has("unweighted-mean"):
        inner = g.mean(dim=dim, keepdim=keep)
    else:
        inner = (p * g).sum(dim=dim, keepdim=keep)

    difference = inner - g if has("sign-flipped") else g - inner
    if has("missing-outer-p"):
        return difference
    return p * difference
