"""Probe inputs for diagnosing wrong answers, and the properties that point at a requirement.

Fault probes keep scores of order one (a saturated softmax hides the scale), d >= 2 (with d = 1
no scaling is sqrt(d) = 1), at least two keys everywhere, and mostly n_k > n_q: with no cached
positions the two alignments of the mask coincide. One probe has n_q == n_k, where a blocked
diagonal leaves the first query with no key at all, and one has a single query.
"""

import numpy as np

from app.problems.errormodel import Probe
from app.problems.helpers import close as _close
from app.problems.helpers import qkv

# The property probes' sizes: three queries at the end of five positions.
BATCH, N_Q, N_K, D = 2, 3, 5, 4


def _inputs(rng, lead, n_q, n_k, d):
    return qkv(rng, lead, n_q, n_k, d, scale=d**-0.25)


def _positions():
    return np.broadcast_to(np.arange(float(N_K))[None, :, None], (BATCH, N_K, D)).copy()


def _about(n_q, n_k):
    if n_q == n_k:
        return "no cache (n_q = n_k)"
    return "a single query after a KV cache" if n_q == 1 else "a KV cache (n_k > n_q)"


def probes(rng):
    fault = [
        # name, leading axes, n_q, n_k, d
        ("cache-3-of-5", (2,), 3, 5, 4),
        ("square-4", (), 4, 4, 3),
        ("one-query", (2,), 1, 4, 2),
        ("cache-2-of-6", (2, 2), 2, 6, 5),
        ("cache-2d", (), 2, 5, 3),
        ("square-3d", (2,), 3, 3, 4),
    ]
    out = [
        Probe(
            f"probe-{name}",
            _inputs(rng, *dims),
            # Rank marks ("2-d", ...) for code written for one rank only (a 2-D k.T, a 3-D
            # transpose(0, 2, 1)); "no-cache" for code that works only while n_q == n_k.
            marks=frozenset(
                {f"{len(dims[0]) + 2}-d"} | ({"no-cache"} if dims[1] == dims[2] else set())
            ),
            about=_about(*dims[1:3]),
        )
        for name, *dims in fault
    ]

    base = _inputs(rng, (BATCH,), N_Q, N_K, D)
    other = _inputs(rng, (BATCH,), N_Q, N_K, D)

    def prop(name, **changes):
        return Probe(f"prop-{name}", {**base, **changes}, purpose="property")

    def replaced(name, position):
        x = base[name].copy()
        x[:, position] = other[name][:, position]
        return x

    out += [
        prop("base"),
        # Position N_K - 1 is in the future of every query but the last.
        prop("last-key-changed", k=replaced("k", -1), v=replaced("v", -1)),
        # Position 0 is in the past of every query.
        prop("first-key-changed", k=replaced("k", 0), v=replaced("v", 0)),
        prop("ones-values", v=np.ones_like(base["v"])),
        # Every score 0 and value j equal to j: query i outputs the mean of 0 .. N_K - N_Q + i.
        prop("zero-queries", q=np.zeros_like(base["q"]), v=_positions()),
    ]
    return out


def implicated(outputs):
    """(requirement, evidence) for each property the outputs break; silent where unsure."""
    found = []
    names = ("base", "last-key-changed", "first-key-changed", "ones-values", "zero-queries")
    values = {n: outputs.get(f"prop-{n}") for n in names}
    usable = {n: v for n, v in values.items() if v is not None and np.all(np.isfinite(v))}

    base, later = usable.get("base"), usable.get("last-key-changed")
    if base is not None and later is not None and not _close(base[:, :-1], later[:, :-1]):
        found.append(
            (
                "block-future",
                "Changing only the last key and value changed the output of earlier "
                "queries: they attend to a position after their own.",
            )
        )
    if "base" in usable and "first-key-changed" in usable:
        unchanged = np.isclose(
            usable["base"], usable["first-key-changed"], rtol=1e-9, atol=1e-12
        ).all(axis=-1)
        if unchanged.any():
            found.append(
                (
                    "block-future",
                    "Changing the first key and value left some query's output unchanged: every "
                    "query must see position 0.",
                )
            )
    sums_to_one = None
    if "ones-values" in usable:
        sums_to_one = _close(usable["ones-values"], np.ones_like(usable["ones-values"]))
        if not sums_to_one:
            found.append(
                (
                    "softmax-keys",
                    "With every value equal to one, every output must be one; yours is not: a "
                    "query's weights do not sum to one.",
                )
            )
    if sums_to_one and not found and "zero-queries" in usable:
        # Query i averages positions 0 .. N_K - N_Q + i, whose mean is half the last one.
        last = N_K - N_Q + np.arange(N_Q)
        want = np.broadcast_to((last / 2.0)[None, :, None], (BATCH, N_Q, D))
        if not _close(usable["zero-queries"], want):
            found.append(
                (
                    "align-to-cache",
                    "With q = 0 every visible key gets the same weight, so query i must output "
                    "the mean of the values at positions 0 .. n_k - n_q + i; yours differs: the "
                    "queries do not see exactly the positions up to their own.",
                )
            )
    return found
