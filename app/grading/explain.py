"""Words a diagnosis for the student: per-requirement statuses and one entry per code."""

from __future__ import annotations

from app.grading.diagnose import Finding
from app.grading.schemas import Diagnosis, RequirementResult
from app.problems.errormodel import ErrorModel
from app.problems.loader import Problem


def requirements_unchecked(problem: Problem, detail: str = "") -> list[RequirementResult]:
    return [
        RequirementResult(id=r.id, title=r.title, status="not_checked", detail=detail)
        for r in problem.spec.requirements
    ]


def requirements_passed(problem: Problem) -> list[RequirementResult]:
    return [
        RequirementResult(id=r.id, title=r.title, status="passed")
        for r in problem.spec.requirements
    ]


def requirements(problem: Problem, model: ErrorModel, finding: Finding) -> list[RequirementResult]:
    """Failed where every explanation (or a property) breaks it; passed for the rest only when
    the explanation accounts for every probe output; not_checked otherwise."""

    def broken(codes: frozenset[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for code in codes:
            out.setdefault(model.faults[code].requirement, []).append(model.faults[code].title)
        return out

    per_alternative = [broken(codes) for codes in finding.alternatives]
    implicated: dict[str, list[str]] = {}
    for req, evidence in finding.implicated:
        implicated.setdefault(req, []).append(evidence)
    results = []
    for r in problem.spec.requirements:
        hits = [alt[r.id] for alt in per_alternative if r.id in alt]
        if per_alternative and len(hits) == len(per_alternative):
            titles = sorted({t for titles in hits for t in titles})
            results.append(_result(r.id, r.title, "failed", " or ".join(titles)))
        elif hits:
            detail = "Broken in one of the explanations that fit equally well: " + ", ".join(
                sorted({t for titles in hits for t in titles})
            )
            results.append(_result(r.id, r.title, "not_checked", detail))
        elif r.id in implicated:
            results.append(_result(r.id, r.title, "failed", " ".join(implicated[r.id])))
        elif finding.explained:
            results.append(_result(r.id, r.title, "passed", ""))
        else:
            results.append(_result(r.id, r.title, "not_checked", ""))
    return results


def _with_value(text: str, value: str) -> str:
    # Plain replacement, not str.format: the wording holds braces of its own (code, math).
    return text.replace("{value}", value) if value else text


def _result(id_: str, title: str, status: str, detail: str) -> RequirementResult:
    return RequirementResult.model_validate(
        {"id": id_, "title": title, "status": status, "detail": detail}
    )


def diagnoses(problem: Problem, model: ErrorModel, finding: Finding) -> list[Diagnosis]:
    """Fault codes in the problem's requirement order, then the contract codes."""
    order = {r.id: i for i, r in enumerate(problem.spec.requirements)}
    fault_order = list(model.faults)
    codes = sorted(
        finding.codes, key=lambda c: (order[model.faults[c].requirement], fault_order.index(c))
    )
    common = frozenset.intersection(*finding.alternatives) if finding.alternatives else frozenset()
    ambiguous = len(finding.alternatives) > 1
    out = []
    for code in codes:
        evidence = finding.evidence
        if ambiguous and code not in common:
            others = [" + ".join(sorted(a)) for a in finding.alternatives if code not in a]
            evidence = f"{evidence} So does {' or '.join(others)}: we cannot tell which."
        fault = model.faults[code]
        value = finding.values.get(code, "")
        out.append(
            Diagnosis(
                code=code,
                requirement=fault.requirement,
                title=_with_value(fault.title, value),
                explanation=_with_value(fault.explanation, value),
                hint=_with_value(fault.hint, value),
                evidence=evidence.strip(),
                certain=code in common,
            )
        )
    for code, evidence in finding.contract.items():
        wording = model.contract[code]
        out.append(
            Diagnosis(
                code=code,
                requirement=None,
                title=wording.title,
                explanation=wording.explanation,
                hint=wording.hint,
                evidence=evidence,
            )
        )
    return out
