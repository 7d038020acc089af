"""Probe inputs for diagnosing wrong answers, and the properties that point at a requirement.

Fault probes are chosen so every fault combination in faults.toml gives a different output:
num_heads >= 2 and d_k >= 2 (with one head, or heads one column wide, every split is the same),
d_model != num_heads**2 (else sqrt(d_model) == d_k and two scale faults coincide), at least two
positions everywhere, scores of order one (a saturated softmax hides the scale), n_q != n_k (so
a swapped axis shows), plus two probes with n_q == n_k (to tell code that only handles equal
lengths) and one large-magnitude probe whose scores overflow np.exp.
"""

import numpy as np

from app.problems.errormodel import Probe
from app.problems.helpers import close as _close
from app.problems.helpers import projection

D_K = 4  # the property probes' head width


def _inputs(rng, batch, n_q, n_k, d_model, num_heads, scale=1.0):
    return {
        "Q": scale * rng.standard_normal((batch, n_q, d_model)),
        "K": scale * rng.standard_normal((batch, n_k, d_model)),
        "V": rng.standard_normal((batch, n_k, d_model)),
        "W_q": projection(rng, d_model, d_model),
        "W_k": projection(rng, d_model, d_model),
        "W_v": projection(rng, d_model, d_model),
        "W_o": projection(rng, d_model, d_model),
        "num_heads": num_heads,
    }


def _rows_summing_to(rng, shape, total):
    x = rng.standard_normal(shape)
    return x - x.mean(axis=-1, keepdims=True) + total / shape[-1]


def probes(rng):
    fault = [
        # name, batch, n_q, n_k, d_model, num_heads
        ("cross-6x2", 2, 3, 5, 6, 2),
        ("self-12x3", 1, 4, 4, 12, 3),
        ("cross-8x4", 1, 5, 3, 8, 4),
        ("self-10x2", 2, 3, 3, 10, 2),
    ]
    out = [
        Probe(
            f"probe-{name}",
            _inputs(rng, *dims),
            marks=frozenset({"equal-lengths"} if dims[1] == dims[2] else ()),
        )
        for name, *dims in fault
    ]
    # Scores in the thousands: np.exp overflows unless the softmax subtracts the row maximum,
    # whatever the scale and softmax axis.
    out.append(Probe("probe-large", _inputs(rng, 1, 3, 4, 8, 2, scale=100.0)))

    d = 2 * D_K
    base = _inputs(rng, 2, 3, 4, d, 2)

    def prop(name, **changes):
        return Probe(f"prop-{name}", {**base, **changes}, purpose="property")

    other = _inputs(rng, 2, 3, 4, d, 2)
    head0 = base["W_k"].copy()
    head0[:, :D_K] = other["W_k"][:, :D_K]
    # Every row of Q, K and V sums to d and W_v averages a row, so every value vector is all ones,
    # whatever the projection, split or source of the values: a query's output is then
    # (sum of its weights) * ones @ W_o, the same for every query when the weights sum to one.
    uniform = {
        "Q": _rows_summing_to(rng, (2, 3, d), d),
        "K": _rows_summing_to(rng, (2, 4, d), d),
        "V": _rows_summing_to(rng, (2, 4, d), d),
        "W_v": np.full((d, d), 1.0 / d),
    }
    out += [
        prop("base"),
        prop("kv-changed", K=other["K"], V=other["V"]),
        prop("wk-zero", W_k=np.zeros((d, d))),
        prop("wk-zero-k-changed", W_k=np.zeros((d, d)), K=other["K"]),
        prop("wv-zero", W_v=np.zeros((d, d))),
        prop("wo-zero", W_o=np.zeros((d, d))),
        prop("wo-identity", W_o=np.eye(d)),
        prop("wo-identity-head0", W_o=np.eye(d), W_k=head0),
        prop("uniform-values", **uniform),
    ]
    return out


def implicated(outputs):
    """(requirement, evidence) for each property the outputs break; silent where unsure."""
    found = []

    def get(*names):
        values = [outputs.get(f"prop-{n}") for n in names]
        if any(v is None or not np.all(np.isfinite(v)) for v in values):
            return None
        return values

    pair = get("base", "kv-changed")
    if pair and _close(*pair):
        found.append(
            (
                "project-qkv",
                "Changing K and V left your output unchanged: the keys and values must come "
                "from K @ W_k and V @ W_v.",
            )
        )
    pair = get("wk-zero", "wk-zero-k-changed")
    if pair and not _close(*pair):
        found.append(
            (
                "project-qkv",
                "With W_k = 0 every key is zero and K cannot matter, yet changing K changed your "
                "output: K is used without its projection W_k.",
            )
        )
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
                "project-qkv",
                "With W_v = 0 every value is zero, so the output must be zero; yours is not: "
                "V is used without its projection W_v.",
            )
        )
    pair = get("wo-identity", "wo-identity-head0")
    if pair:
        changed = ~np.isclose(pair[0], pair[1], rtol=1e-6, atol=1e-9)
        if changed[..., D_K:].any():
            found.append(
                (
                    "split-heads",
                    f"Changing only head 0's key weights (columns 0-{D_K - 1} of W_k) changed "
                    f"other heads' output columns: heads are not contiguous blocks of d_k columns, "
                    f"in the split or in the merge.",
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
