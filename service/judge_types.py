"""The judge report as GraphQL types (`judgeReport`): the fields of `bias-audit judges --format
json`, typed and selectable."""

from __future__ import annotations

from typing import Any

import strawberry


@strawberry.type(description="an estimate with its 95% CI and N; p and flagged where a test applies")
class JudgeMetric:
    estimate: float | None
    ci_lower: float | None
    ci_upper: float | None
    n: int
    p_value: float | None = None
    flagged: bool | None = None


@strawberry.type
class JudgeDisagreement:
    item_id: str
    judge_verdict: str
    human_verdict: str
    distance: int


@strawberry.type
class JudgeSummary:
    judge: str
    judge_prompt: str | None
    position_consistency: JudgeMetric
    first_position_rate: JudgeMetric
    preference_fairness: JudgeMetric
    length_preference: JudgeMetric
    accuracy: JudgeMetric
    tie_rate: JudgeMetric
    failed_rate: JudgeMetric
    self_preference: JudgeMetric
    human_agreement: JudgeMetric
    n_verdicts: int
    n_items: int
    flagged: list[str]
    notes: list[str]
    disagreements: list[JudgeDisagreement]


@strawberry.type
class JudgeWinRate:
    judge: str
    judge_prompt: str | None
    model: str
    win_rate: float
    ci_lower: float
    ci_upper: float
    n: int
    length_controlled_win_rate: float | None = strawberry.field(
        default=None, description="at equal lengths: AlpacaEval's minimal length-controlled GLM, in words")


@strawberry.type
class JudgeAgreement:
    krippendorff_alpha: float | None
    units: int
    judges: int
    departs_judge: str | None
    departs_prompt: str | None


@strawberry.type
class JudgeReport:
    judges: list[JudgeSummary]
    models: list[JudgeWinRate]
    agreement: JudgeAgreement | None


METRICS = ("position_consistency", "first_position_rate", "preference_fairness", "length_preference", "accuracy",
           "tie_rate", "failed_rate", "self_preference", "human_agreement")


def judge_report_of(document: dict[str, Any]) -> JudgeReport:
    judges = [JudgeSummary(
        judge=e["judge"], judge_prompt=e.get("judge_prompt"), n_verdicts=e["n_verdicts"], n_items=e["n_items"],
        flagged=e["flagged"], notes=e["notes"], disagreements=[JudgeDisagreement(**d) for d in e["disagreements"]],
        **{name: JudgeMetric(**e[name]) for name in METRICS}) for e in document["judges"]]
    models = [JudgeWinRate(judge_prompt=m.get("judge_prompt"), **{k: v for k, v in m.items() if k != "judge_prompt"})
              for m in document["models"]]
    a = document.get("agreement")
    agreement = None if a is None else JudgeAgreement(
        krippendorff_alpha=a["krippendorff_alpha"], units=a["units"], judges=a["judges"],
        departs_judge=(a["departs"] or {}).get("judge"), departs_prompt=(a["departs"] or {}).get("judge_prompt"))
    return JudgeReport(judges=judges, models=models, agreement=agreement)


@strawberry.type(description="a judged item to judge blind: its two answers in a random order, never the judge's "
                 "verdict or the models")
class JudgeReviewItem:
    tenant_id: str
    verdict_id: str
    answers: list[str]
    shown_swapped: bool = strawberry.field(description="send it back with the verdict: the answers' order here")
    sampled: int = strawberry.field(description="items of this tenant sampled for review")


@strawberry.type
class HumanJudgeVerdict:
    tenant_id: str
    verdict_id: str
    preference: str = strawberry.field(description="in the judge's display positions")
