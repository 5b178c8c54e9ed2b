"""The judge report as GraphQL types (`judgeReport`): the fields of `bias-audit judges --format
json`, typed and selectable."""

from __future__ import annotations

from typing import Any

import strawberry

from bias_audit.analysis.judges import METRIC_NAMES as METRICS


@strawberry.type(description="an estimate with its 95% CI and N; p and flagged where a test applies")
class JudgeMetric:
    estimate: float | None
    ci_lower: float | None
    ci_upper: float | None
    n: int
    p_value: float | None = None
    flagged: bool | None = None


@strawberry.type(description="single-answer grading: the scores a judge gave (failed gradings left out)")
class JudgeScoreDistribution:
    mean: float
    sd: float | None
    min: float
    max: float
    ceiling_share: float = strawberry.field(description="share at the top of the scale the source names")
    floor_share: float = strawberry.field(description="share at its bottom")
    n: int


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
    repeat_consistency: JudgeMetric
    score_length_correlation: JudgeMetric
    score_distribution: JudgeScoreDistribution | None
    n_verdicts: int
    single_answer_verdicts: int
    n_items: int
    flagged: list[str]
    notes: list[str]
    disagreements: list[JudgeDisagreement]


@strawberry.type(
    description="one (judge, model): its win rate against the source's baseline, and its mean score "
    "where the judge graded its answers alone"
)
class JudgeWinRate:
    judge: str
    judge_prompt: str | None
    model: str
    win_rate: float | None = None
    ci_lower: float | None = None
    ci_upper: float | None = None
    n: int | None = None
    length_controlled_win_rate: float | None = strawberry.field(
        default=None, description="at equal lengths: AlpacaEval's minimal length-controlled GLM, in words"
    )
    mean_score: JudgeMetric | None = None


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


def judge_report_of(document: dict[str, Any]) -> JudgeReport:
    judges = [
        JudgeSummary(
            judge=e["judge"],
            judge_prompt=e.get("judge_prompt"),
            n_verdicts=e["n_verdicts"],
            single_answer_verdicts=e["single_answer_verdicts"],
            n_items=e["n_items"],
            flagged=e["flagged"],
            notes=e["notes"],
            disagreements=[JudgeDisagreement(**d) for d in e["disagreements"]],
            score_distribution=None
            if e["score_distribution"] is None
            else JudgeScoreDistribution(**e["score_distribution"]),
            **{name: JudgeMetric(**e[name]) for name in METRICS},
        )
        for e in document["judges"]
    ]
    models = [
        JudgeWinRate(
            judge_prompt=m.get("judge_prompt"),
            mean_score=None if m.get("mean_score") is None else JudgeMetric(**m["mean_score"]),
            **{k: v for k, v in m.items() if k not in ("judge_prompt", "mean_score")},
        )
        for m in document["models"]
    ]
    a = document.get("agreement")
    agreement = (
        None
        if a is None
        else JudgeAgreement(
            krippendorff_alpha=a["krippendorff_alpha"],
            units=a["units"],
            judges=a["judges"],
            departs_judge=(a["departs"] or {}).get("judge"),
            departs_prompt=(a["departs"] or {}).get("judge_prompt"),
        )
    )
    return JudgeReport(judges=judges, models=models, agreement=agreement)


@strawberry.type(
    description="a judged item to judge blind: its two answers in a random order, never the judge's "
    "verdict or the models"
)
class JudgeReviewItem:
    review_id: str = strawberry.field(description="opaque, for this reviewer only: send it back with the verdict")
    tenant_id: str
    question: str | None = strawberry.field(description="the question both answer, when the verdict sent it")
    answers: list[str] = strawberry.field(description="in an order the server drew and remembers")
    sampled: int = strawberry.field(description="items of this tenant sampled for review")


@strawberry.type
class HumanJudgeVerdict:
    review_id: str
    preference: str = strawberry.field(description="as given, over the answers as shown")
    counted: bool = strawberry.field(
        description="false for a change of mind: kept, but a person's first verdict on an item is the one that counts"
    )
