"""Pairs of a class's submissions to one problem, ranked by evidence (pure: no database).

Code: the share of two submissions' fingerprints (``fingerprint``) they have in common,
counting only fingerprints that are not the starter's and that few students have: what a
canonical solution makes everyone write alike is not evidence (MOSS's and Dolos's rule).
Behaviour: the same combination of diagnoses, or the same failures on the same test cases,
where few of the class have it. Every bound here keeps one job's work linear in the class:
a fingerprint shared by more than ``common_limit`` students adds no pair, and a behaviour
shared by more than ``rare_limit`` students is not rare.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations

from app.similarity.fingerprint import Fingerprints, fingerprints, merge_lines
from app.similarity.schemas import Evidence, PairOut

# A fingerprint in more than this share of the class (at least COMMON_FLOOR students, at most
# COMMON_CEILING: MOSS's default) is how everyone writes it.
COMMON_SHARE = 0.1
COMMON_FLOOR = 4
COMMON_CEILING = 10
# A behaviour is rare when at most this share of the class (and never more than
# RARE_FLOOR students when the class is small) has it.
RARE_SHARE = 0.05
RARE_FLOOR = 2
# Code shared below this share is not reported on its own; from FLAG_SHARE the page marks it.
REPORT_SHARE = 0.3
FLAG_SHARE = 0.5
# Fewer distinctive fingerprints than this: too little code to say anything.
MIN_FINGERPRINTS = 5
MAX_PAIRS = 100
# What a rare behaviour adds to the ranking score (code similarity is 0..1): a combination of
# diagnoses 2 students of 300 share ranks with half of their code in common.
BEHAVIOUR_WEIGHT = 0.5


@dataclass(frozen=True)
class Entry:
    """One student's latest graded attempt at the problem."""

    user_id: int
    name: str
    submission_id: str
    code: str
    diagnoses: tuple[str, ...] = ()
    # (case index, status, message digest) of each case that did not pass; the index and the
    # status are all a reader is shown.
    failures: tuple[tuple[int, str, str], ...] = ()


@dataclass
class _Prepared:
    entry: Entry
    prints: Fingerprints
    kept: set[int] = field(default_factory=set)


def common_limit(students: int) -> int:
    return max(COMMON_FLOOR, min(COMMON_CEILING, math.ceil(COMMON_SHARE * students)))


def rare_limit(students: int) -> int:
    return max(RARE_FLOOR, math.floor(RARE_SHARE * students))


def rank(entries: Sequence[Entry], starter: str, max_pairs: int = MAX_PAIRS) -> list[PairOut]:
    n = len(entries)
    boiler = set(fingerprints(starter).spans)
    prepared = [_Prepared(e, fingerprints(e.code)) for e in entries]
    postings: dict[int, list[int]] = defaultdict(list)
    for i, p in enumerate(prepared):
        for h in p.prints.spans:
            if h not in boiler:
                postings[h].append(i)
    limit = common_limit(n)
    shared: Counter[tuple[int, int]] = Counter()
    for h, who in postings.items():
        if len(who) > limit:
            continue
        for i in who:
            prepared[i].kept.add(h)
        for pair in combinations(who, 2):
            shared[pair] += 1

    evidence: dict[tuple[int, int], list[Evidence]] = defaultdict(list)
    code_share: dict[tuple[int, int], float] = {}
    for (i, j), count in shared.items():
        smaller = min(len(prepared[i].kept), len(prepared[j].kept))
        if smaller < MIN_FINGERPRINTS:
            continue
        share = count / smaller
        if share >= REPORT_SHARE:
            code_share[(i, j)] = share
            evidence[(i, j)].append(
                Evidence(
                    kind="code",
                    strength=round(share, 3),
                    text=f"{share:.0%} of the distinctive code of the shorter one is also in the "
                    f"other ({count} fingerprints; names, comments, the starter and what more "
                    f"than {limit} students wrote alike are left out).",
                )
            )
    _behaviour(entries, evidence)

    def score(pair: tuple[int, int]) -> float:
        return code_share.get(pair, 0.0) + BEHAVIOUR_WEIGHT * sum(
            1 for e in evidence[pair] if e.kind != "code"
        )

    best = heapq.nlargest(max_pairs, evidence, key=lambda pair: (score(pair), pair))
    out: list[PairOut] = []
    for i, j in best:
        a, b = prepared[i], prepared[j]
        common = a.kept & b.kept
        out.append(
            PairOut(
                rank=len(out) + 1,
                score=round(score((i, j)), 3),
                code_share=round(code_share.get((i, j), 0.0), 3),
                flagged=code_share.get((i, j), 0.0) >= FLAG_SHARE,
                a=a.entry.submission_id,
                b=b.entry.submission_id,
                a_user_id=a.entry.user_id,
                b_user_id=b.entry.user_id,
                a_name=a.entry.name,
                b_name=b.entry.name,
                a_lines=merge_lines([a.prints.spans[h] for h in common]),
                b_lines=merge_lines([b.prints.spans[h] for h in common]),
                evidence=evidence[(i, j)],
            )
        )
    return out


def _behaviour(entries: Sequence[Entry], evidence: dict[tuple[int, int], list[Evidence]]) -> None:
    """Pairs that share a rare diagnosis combination or a rare failure pattern. Only groups of
    at most ``rare_limit`` students make pairs, so this stays linear in the class."""
    n = len(entries)
    limit = rare_limit(n)
    by_diagnoses: dict[tuple[str, ...], list[int]] = defaultdict(list)
    by_failures: dict[tuple[tuple[int, str, str], ...], list[int]] = defaultdict(list)
    for i, e in enumerate(entries):
        if e.diagnoses:
            by_diagnoses[tuple(sorted(set(e.diagnoses)))].append(i)
        if e.failures:
            by_failures[e.failures].append(i)
    for codes, who in by_diagnoses.items():
        if len(who) <= limit:
            for pair in combinations(who, 2):
                evidence[pair].append(
                    Evidence(
                        kind="diagnoses",
                        strength=round(1 - len(who) / n, 3),
                        text=f"Both latest attempts have exactly the diagnoses "
                        f"{', '.join(codes)}; {len(who)} of {n} students have this combination.",
                    )
                )
    for failures, who in by_failures.items():
        if len(who) <= limit:
            cases = ", ".join(f"#{index + 1} ({status})" for index, status, _ in failures)
            for pair in combinations(who, 2):
                evidence[pair].append(
                    Evidence(
                        kind="failures",
                        strength=round(1 - len(who) / n, 3),
                        text=f"Both latest attempts fail the same test cases the same way: "
                        f"{cases}; {len(who)} of {n} students fail exactly so.",
                    )
                )
