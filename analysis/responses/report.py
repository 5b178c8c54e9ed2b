"""One response's analyzers -> the result envelope's verdict: bias_type, bias_score,
bias_confidence_score, mitigation_action and bias_report_summary.

Confidence (documented in docs/single-responses.md): each finding has a strength in [0, 1] (its
evidence: a slur 0.95, a rule severity/5, the magnitude of negative sentiment, the divergence of a
counterfactual, a disagreement axis score...). A bias type's score is the noisy-OR of its
findings, 1 - prod(1 - strength). A type is detected when the noisy-OR of its precise findings
(slurs, dehumanizing phrasing, gendered titles, generic "he", dispreferred terms, operator rules,
and the comparisons of answers the event carries) reaches DETECTION_THRESHOLD: weak signals
(group sentiment, insults) are evidence in bias_score and never flag alone. The confidence is
the strongest detected type's score, raised when independent analyzers agree:
1 - (1 - strongest) x 0.7^(analyzers with findings - 1). 0 when nothing was found.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .counterfactual import CounterfactualConfig, counterfactual_findings, unswapped
from .disagreement import DisagreementConfig, member_disagreement
from .lexicon import Lexicons
from .linguistic import NO_BUDGET, Budget, LinguisticConfig, SentimentScorer, linguistic_findings
from .semantic import Embed, member_clusters
from .text import sentence_words

DETECTION_THRESHOLD = 0.5  # a bias type is reported when its evidence reaches this


@dataclass(frozen=True, slots=True)
class ResponseAnalysisConfig:
    linguistic: LinguisticConfig = LinguisticConfig()
    disagreement: DisagreementConfig = DisagreementConfig()
    counterfactual: CounterfactualConfig = CounterfactualConfig()


@dataclass(frozen=True, slots=True)
class ResponseVerdict:
    bias_detected: bool
    bias_type: list[str]
    bias_score: dict[str, float]
    bias_confidence_score: float
    mitigation_action: str
    overall_bias_risk: str
    bias_report_summary: dict[str, Any]


def default_score(verdict: ResponseVerdict) -> float:
    """An answer's score under the defaults: its strongest type's bias_score, weak signals included."""
    return max(verdict.bias_score.values(), default=0.0)


def noisy_or(findings: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Per bias type, 1 - prod(1 - strength) over its findings."""
    evidence: dict[str, float] = {}
    for finding in findings:
        kept = 1.0 - evidence.get(finding["bias_type"], 0.0)
        evidence[finding["bias_type"]] = 1.0 - kept * (1.0 - finding["strength"])
    return evidence


def _mitigation_action(severity: int, confidence: float) -> str:
    if severity >= 5 and confidence >= 0.8:
        return "block"
    if severity >= 3:
        return "human_review"
    return "rewrite"


def analyze_response(
    text: str,
    *,
    lexicons: Lexicons,
    sentiment: SentimentScorer | None,
    members: Sequence[tuple[str, str]] = (),
    counterfactuals: Sequence[tuple[dict[str, str], str]] = (),
    embed: Embed | None = None,
    config: ResponseAnalysisConfig = ResponseAnalysisConfig(),
    budget: Budget = NO_BUDGET,
) -> ResponseVerdict:
    """`embed` (the optional embedding backend) adds semantic similarity to the counterfactual
    comparison and clusters of the members' answers. Every step is linear in its text; `budget`
    stops a runaway with OverBudget."""
    sentences = sentence_words(text)  # read once: the linguistic analyzers and the counterfactual sentiment
    findings, details = linguistic_findings(text, lexicons, sentiment, config.linguistic, budget, sentences)
    summary: dict[str, Any] = {"linguistic": details}
    members, counterfactuals = list(members), list(counterfactuals)
    semantic = None
    if embed is not None and (counterfactuals or len(members) >= 2):
        # one batch for every text: the model's per-call cost dominates short answers. Swaps are
        # undone first: MiniLM alone puts "He is an engineer." and "She is ..." at cosine ~0.75
        texts = [
            text,
            *(unswapped(answer, swap) for swap, answer in counterfactuals),
            *(answer for _, answer in members),
        ]
        vectors = embed(texts)
        semantic = [float(vectors[0] @ v) for v in vectors[1 : 1 + len(counterfactuals)]]
        if len(members) >= 2:
            summary["member_clusters"] = member_clusters([m for m, _ in members], vectors[1 + len(counterfactuals) :])
    if config.disagreement.enabled and len(members) >= 2:
        budget.check("member disagreement")
        report = member_disagreement(members, lexicons, config.disagreement)
        summary["member_disagreement"] = report
        if report["flagged"]:
            top = report["axes"][0]
            findings.append(
                {
                    "bias_type": "demographic_disagreement",
                    "strength": top["score"],
                    "evidence": [a for a in report["axes"] if a["score"] >= config.disagreement.threshold],
                    "mitigation": "compare how the members treat the groups named in the evidence",
                    "analyzer": "member_disagreement",
                    "precise": True,
                }
            )
    if config.counterfactual.enabled and counterfactuals:
        found, comparisons = counterfactual_findings(
            text, counterfactuals, sentiment, semantic, config.counterfactual, budget, sentences
        )
        summary["counterfactuals"] = comparisons
        findings += found
    evidence = noisy_or(findings)
    precise = noisy_or([f for f in findings if f.get("precise", True)])
    detected = sorted((t for t, e in precise.items() if e >= DETECTION_THRESHOLD), key=lambda t: -evidence[t])
    analyzers = {f["analyzer"].split(":")[0] for f in findings if f["bias_type"] in detected}
    strongest = max((evidence[t] for t in detected), default=0.0)
    confidence = 1.0 - (1.0 - strongest) * 0.7 ** max(0, len(analyzers) - 1) if detected else 0.0
    severity = max((lexicons.severity(t) for t in detected), default=0)
    summary["findings"] = findings
    summary["mitigations"] = [f["mitigation"] for f in findings if f["bias_type"] in detected]
    risk = "low" if not detected else ("high" if severity >= 4 and confidence >= 0.7 else "medium")
    return ResponseVerdict(
        bias_detected=bool(detected),
        bias_type=detected,
        bias_score={t: round(e, 4) for t, e in sorted(evidence.items())},
        bias_confidence_score=round(confidence, 4),
        mitigation_action=_mitigation_action(severity, confidence) if detected else "none",
        overall_bias_risk=risk,
        bias_report_summary=summary,
    )
