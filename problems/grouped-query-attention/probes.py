"""Probe inputs for diagnosing wrong answers, and the properties that point at a requirement.

Fault probes are chosen so every fault combination in faults.toml gives a different output:
1 < num_kv_heads < num_heads (with one key/value head, or as many as query heads, repeating and
tiling agree, and sqrt(num_kv_heads * d_k) equals sqrt(d_k) or sqrt(d_model)), d_k >= 2 (with
heads one column wide every split is the same), at least two positions, scores of order one (a
saturated softmax hides the scale), groups of two and of three query heads, plus one
large-magnitude probe whose scores overflow np.exp.
"""

import numpy as np

from app.problems.errormodel import Probe
from app.problems.helpers import close as _close
from app.problems.helpers import projection

# The property probes' sizes: four query heads of width D_K in two groups of two.
D_K = 3
HEADS, KV_HEADS = 4, 2
GROUP = HEADS // KV_HEADS


def _inputs(rng, batch, n, d_model, num_heads, num_kv_heads, scale=1.0):
    d_kv = num_kv_heads * (d_model // num_heads)
    return {
        "x": scale * rng.standard_normal((batch, n, d_model)),
        "W_q": projection(rng, d_model, d_model),
        "W_k": projection(rng, d_model, d_kv),
        "W_v": projection(rng, d_model, d_kv),
        "W_o": projection(rng, d_model, d_model),
        "num_heads": num_heads,
        "num_kv_heads": num_kv_heads,
    }


def probes(rng):
    fault = [
        # name, batch, n, d_model, num_heads, num_kv_heads
        ("8x4x2", 2, 4, 8, 4, 2),
        ("12x6x2", 1, 5, 12, 6, 2),
        ("24x6x3", 2, 3, 24, 6, 3),
        ("16x4x2", 1, 4, 16, 4, 2),
    ]
    out = [Probe(f"probe-{name}", _inputs(rng, *sizes)) for name, *sizes in fault]
    # Scores in the thousands: np.exp overflows unless the softmax subtracts the row maximum,
    # whatever the scale and softmax axis.
    out.append(Probe("probe-large", _inputs(rng, 1, 3, 8, 4, 2, scale=60.0)))

    d, d_kv = HEADS * D_K, KV_HEADS * D_K
    base = {**_inputs(rng, 2, 4, d, HEADS, KV_HEADS), "W_o": np.eye(d)}
    other = _inputs(rng, 2, 4, d, HEADS, KV_HEADS)

    def prop(name, **changes):
        return Probe(f"prop-{name}", {**base, **changes}, purpose="property")

    def head0_changed(name):  # columns 0 .. D_K-1 (head 0) of W_<name> from other weights
        changed = base[name].copy()
        changed[:, :D_K] = other[name][:, :D_K]
        return changed

    # Every row of x sums to d and W_v averages a row, so every value vector is all ones,
    # whatever the split or the sharing: a query's output is then (sum of its weights) * ones,
    # the same for every query when the weights sum to one.
    x = rng.standard_normal((2, 4, d))
    x = x - x.mean(axis=-1, keepdims=True) + 1.0
    out += [
        prop("base"),
        prop("wo-zero", W_o=np.zeros((d, d))),
        prop("wv-zero", W_v=np.zeros((d, d_kv))),
        prop("q-head0", W_q=head0_changed("W_q")),
        prop("kv-head0", W_k=head0_changed("W_k"), W_v=head0_changed("W_v")),
        prop("uniform-values", x=x, W_v=np.full((d, d_kv), 1.0 / d)),
    ]
    return out


def _changed_heads(before, after):
    """The query heads (blocks of D_K output columns, W_o being the identity) that changed."""
    changed = ~np.isclose(before, after, rtol=1e-6, atol=1e-9)
    per_column = changed.reshape(-1, before.shape[-1]).any(axis=0)
    return {h for h in range(HEADS) if per_column[h * D_K : (h + 1) * D_K].any()}


def implicated(outputs):
    """(requirement, evidence) for each property the outputs break; silent where unsure."""
    found = []

    def get(*names):
        values = [outputs.get(f"prop-{n}") for n in names]
        if any(v is None or not np.all(np.isfinite(v)) for v in values):
            return None
        return values

    # A term that bypasses W_o (a residual, a bias) would trip every check below: only when
    # W_o = 0 zeroes the output do they say something about the steps before W_o.
    single = get("wo-zero")
    if single and not _close(single[0], np.zeros_like(single[0])):
        found.append(
            (
                "merge-and-project",
                "With W_o = 0 the output must be zero; yours is not: W_o is not applied as the "
                "last step, or something is added after it.",
            )
        )
        return found
    single = get("wv-zero")
    values_projected = single is not None and _close(single[0], np.zeros_like(single[0]))
    if single and not values_projected:
        found.append(
            (
                "project",
                "With W_v = 0 every value is zero, so the output must be zero; yours is not: "
                "the values are not x @ W_v.",
            )
        )
    pair = get("base", "q-head0")
    queries_split = pair is not None and _changed_heads(*pair) == {0}
    if pair and not queries_split:
        found.append(
            (
                "split-heads",
                f"With W_o = I, changing only query head 0's weights (columns 0-{D_K - 1} of "
                f"W_q) should change only output columns 0-{D_K - 1}; yours changed others: "
                f"query heads are not contiguous blocks of d_k columns, in the split or merge.",
            )
        )
    pair = get("base", "kv-head0")
    if pair and queries_split and _changed_heads(*pair) != set(range(GROUP)):
        found.append(
            (
                "share-kv-heads",
                f"With {HEADS} query heads and {KV_HEADS} key/value heads, changing only "
                f"key/value head 0 (columns 0-{D_K - 1} of W_k and W_v) should change exactly "
                f"the output of query heads 0-{GROUP - 1}; yours changed other heads, or not "
                f"all of these.",
            )
        )
    single = get("uniform-values")
    if single and values_projected:
        rows = single[0].reshape(-1, single[0].shape[-1])
        if not _close(rows, np.broadcast_to(rows[0], rows.shape)):
            found.append(
                (
                    "softmax-keys",
                    "With every value vector equal, every query's output should be the same; "
                    "yours differ between queries: a query's attention weights do not sum to one.",
                )
            )
    return found
