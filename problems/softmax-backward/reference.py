"""The softmax backward pass, correct with no flags; each flag of ``faults`` (``faults.toml``)
reproduces one misconception by changing one step. Trusted: runs in the grader, never served."""

# Every flag this function understands; the loader checks faults.toml names exactly these.
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
    if has("ignores-axis"):
        axis = -1
    elif has("fixed-axis-1"):  # written for a (batch, classes) matrix
        axis = 1
    elif has("sums-whole-array"):  # np.sum with no axis: one number for the whole array
        axis = None
    # Without keepdims the sum loses the reduced axis and broadcasts against the last axes
    # instead: right where they line up by chance, a broadcasting error elsewhere.
    keep = not has("no-keepdims")

    # What is subtracted from each upstream value: the probability-weighted sum along the axis.
    if has("diagonal-only"):  # only the Jacobian's diagonal p_i (1 - p_i)
        centre = p * g
    elif has("unweighted-sum"):
        centre = g.sum(axis=axis, keepdims=keep)
    elif has("unweighted-mean"):
        centre = g.mean(axis=axis, keepdims=keep)
    else:
        centre = (p * g).sum(axis=axis, keepdims=keep)

    difference = centre - g if has("sign-flipped") else g - centre
    if has("missing-outer-p"):
        return difference
    return p * difference
