"""What people's reviews say about the detectors: per tenant, bias type and analyzer, the share of
reviewed flags a reviewer confirmed (precision, with a Wilson 95% CI and N), and the evidence
terms and rules most often dismissed.

An item's verdict for a bias type counts for every analyzer whose finding gave that type; the
latest review of an item is its verdict (a later one corrects an earlier one).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from bias_audit.schemas.report import DetectorPrecision, DismissedEvidence

from .proportions import wilson_interval

EVIDENCE_KEYS = ("term", "matched", "rule_id", "phrase", "word")  # what an analyzer names as its evidence


@dataclass(frozen=True)
class ReviewedItem:
    tenant_id: str
    verdicts: dict[str, str]  # bias type -> "confirmed" | "dismissed"
    findings: list[dict[str, Any]]  # bias_report_summary["findings"]: bias_type, analyzer, evidence


def evidence_of(finding: dict[str, Any]) -> list[str]:
    """The terms and rule ids a finding names (nested evidence too), lower-cased, each once."""
    found: list[str] = []

    def walk(entries: object) -> None:
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict):
                continue
            for key in EVIDENCE_KEYS:
                value = entry.get(key)
                if isinstance(value, str) and value.strip():
                    found.append(value.strip().lower())
            walk(entry.get("evidence"))

    walk(finding.get("evidence"))
    return list(dict.fromkeys(found))


def detector_precision(
    items: Iterable[ReviewedItem], most_dismissed: int = 10
) -> tuple[list[DetectorPrecision], list[DismissedEvidence]]:
    tallies: Counter[tuple[str, str, str, str]] = Counter()  # (tenant, type, analyzer, verdict)
    evidence: Counter[tuple[str, str, str, str]] = Counter()  # (tenant, type, term, verdict)
    for item in items:
        for bias_type, verdict in item.verdicts.items():
            if verdict not in ("confirmed", "dismissed"):
                continue
            findings = [f for f in item.findings if f.get("bias_type") == bias_type]
            for analyzer in dict.fromkeys(str(f.get("analyzer") or "unknown") for f in findings) or ["unknown"]:
                tallies[(item.tenant_id, bias_type, analyzer, verdict)] += 1
            for term in dict.fromkeys(term for f in findings for term in evidence_of(f)):
                evidence[(item.tenant_id, bias_type, term, verdict)] += 1
    precision = []
    for tenant, bias_type, analyzer in sorted({key[:3] for key in tallies}):
        confirmed = tallies[(tenant, bias_type, analyzer, "confirmed")]
        reviewed = confirmed + tallies[(tenant, bias_type, analyzer, "dismissed")]
        lower, upper = wilson_interval(confirmed, reviewed)
        precision.append(
            DetectorPrecision(
                tenant_id=tenant,
                bias_type=bias_type,
                analyzer=analyzer,
                reviewed=reviewed,
                confirmed=confirmed,
                precision=round(confirmed / reviewed, 6),
                ci_lower=round(lower, 6),
                ci_upper=round(upper, 6),
            )
        )
    dismissed = [
        DismissedEvidence(
            tenant_id=tenant,
            bias_type=bias_type,
            evidence=term,
            dismissed=count,
            confirmed=evidence[(tenant, bias_type, term, "confirmed")],
        )
        for (tenant, bias_type, term, verdict), count in evidence.items()
        if verdict == "dismissed"
    ]
    dismissed.sort(key=lambda d: (d.tenant_id, -d.dismissed, d.confirmed, d.bias_type, d.evidence))
    per_tenant: Counter[str] = Counter()
    kept = []
    for entry in dismissed:
        if per_tenant[entry.tenant_id] < most_dismissed:
            per_tenant[entry.tenant_id] += 1
            kept.append(entry)
    return precision, kept


def precision_of_reviews(
    rows: Iterable[tuple[str, dict[str, str] | None, dict[str, Any] | None]],
) -> tuple[list[DetectorPrecision], list[DismissedEvidence]]:
    """detector_precision over stored reviews: (tenant, verdicts, bias_report_summary) rows."""
    return detector_precision(
        ReviewedItem(tenant, verdicts or {}, (summary or {}).get("findings", [])) for tenant, verdicts, summary in rows
    )
