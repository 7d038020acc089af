"""Words a diagnosis's evidence: what the probes vary, and on which of them the explanation's
output differs from the correct one (or the submission could not run).

Probes are named only by what the problem declares about them (``Probe.about``), their rank and
their sizes: never by their values, nor by anything the submission did there (a probe runs with
the hidden cases, so its exception message is the submission's to choose).
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from app.grading.faulttable import FaultTable


def _plural(k: int, word: str) -> str:
    return f"{k} {word}" if k == 1 else f"{k} {word}s"


def _ranks(ranks: Collection[int]) -> str:
    ordered = sorted(set(ranks))
    return " and ".join(f"{r}-D" for r in ordered)


def _size_name(dim: str) -> str:
    """A dimension of the signature as the evidence names it: "*lead" is "leading axes"."""
    if dim == "*lead":
        return "leading axes"
    if not dim.startswith("*"):
        return dim
    base = dim[1:].removesuffix("_shape")
    return "shapes" if base == "dims" else f"{base} shapes"


def varied(table: FaultTable) -> str:
    """What the fault probes vary, e.g. "2-D to 4-D inputs; n_q, n_k; no mask, a KV cache"."""
    facts = table.probe_facts
    parts = []
    ranks = sorted({f.rank for f in facts.values()})
    if len(ranks) > 1:
        parts.append(f"{ranks[0]}-D to {ranks[-1]}-D inputs")
    sizes = [
        name
        for name in dict.fromkeys(k for f in facts.values() for k in f.dims)
        if len({repr(f.dims.get(name)) for f in facts.values()}) > 1
    ]
    if sizes:
        parts.append("different " + ", ".join(_size_name(s) for s in sizes))
    abouts = list(dict.fromkeys(f.about for f in facts.values() if f.about))
    if abouts:
        parts.append("with " + ", ".join(abouts))
    return "; ".join(parts)


def named(table: FaultTable, names: Collection[str]) -> str:
    """The probes ``names`` by what sets them apart: "the 2 probes with a KV cache", "the
    probe with 2-D inputs", "the 3 probes marked 'equal-lengths'", "every probe", else one
    phrase per probe."""
    facts = table.probe_facts
    chosen = [n for n in facts if n in names]
    others = [n for n in facts if n not in names]
    k = len(chosen)
    if not others:
        return "every probe" if k > 1 else "the probe"
    the = f"the {k} probes" if k > 1 else "the probe"
    about = facts[chosen[0]].about
    shared = all(facts[n].about == about for n in chosen)
    if about and shared and not any(facts[n].about == about for n in others):
        return f"{the} with {about}"
    inside = {facts[n].rank for n in chosen}
    if not inside & {facts[n].rank for n in others}:
        return f"{the} with {_ranks(inside)} inputs"
    for mark in sorted(frozenset.intersection(*(facts[n].marks for n in chosen))):
        if not any(mark in facts[n].marks for n in others):
            return f"{the} marked {mark!r}"
    each = [facts[n].about or facts[n].sizes for n in chosen]
    return f"{_plural(k, 'probe')} ({'; '.join(dict.fromkeys(each))})"


def differs(table: FaultTable, row: int) -> set[str]:
    """The probes on which combination ``row`` gives another output than the correct one (row 0:
    the empty combination) or raises where it does not."""
    out: set[str] = set()
    for column in table.columns:
        if column.raised is not None and column.raised[row] != column.raised[0]:
            out.add(column.name)
            continue
        a, b = column.filled[row], column.filled[0]
        same = bool(
            np.array_equal(column.finite[row], column.finite[0])
            and np.all(np.abs(a - b) <= column.tolerance[0])
        )
        if not same:
            out.add(column.name)
    return out


def reproduced(table: FaultTable, row: int, prefix: str = "It reproduces") -> str:
    """The evidence of an explanation matching on every probe."""
    n = len(table.probe_facts)
    text = f"{prefix} your output on all {n} probe inputs ({varied(table)})."
    wrong = differs(table, row)
    if wrong:
        text += f" Your output differs from the correct one on {named(table, wrong)}."
    return text
