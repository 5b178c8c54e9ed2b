"""The cross-session bias report (`bias-audit report`, and the live window's analytics).

Score quantities are in points of a 1-10 scale whatever scale the sessions used. Every metric
carries its sample size, the sessions behind it, a 95% CI and a confidence tier; below the floor
of 10 sessions it says "collecting data" and carries no number.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .tiers import ConfidenceTier

REPORT_SCHEMA_VERSION = "1.0"
Status = Literal["ok", "collecting data", "not identifiable"]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)


class Estimate(_Out):
    point_estimate: float | None
    ci_lower: float | None
    ci_upper: float | None
    sample_size: int  # points, cells or pairs behind the estimate
    sessions: int
    confidence: ConfidenceTier
    status: Status = "ok"
    p_value: float | None = None
    flagged: bool = False


class LengthCorrelation(Estimate):
    """Pooled over (session, model) points after removing each reviewer's offset; the Fisher CI
    treats points as independent, the session-cluster bootstrap CI does not."""

    bootstrap_ci_lower: float | None = None
    bootstrap_ci_upper: float | None = None
    spearman: float | None = None


class ModelScore(_Out):
    model: str
    scores: int
    raw_score: float
    length_controlled_score: float | None
    raw_rank: int
    length_controlled_rank: int | None


class LengthControl(_Out):
    status: Status
    coefficient: Estimate  # points per unit of tanh(standardized length difference)
    models: list[ModelScore] = Field(default_factory=list)
    rank_changes: int = 0


class PositionEffect(_Out):
    position: int
    effect: Estimate  # points, relative to the first position


class PositionAnalysis(_Out):
    status: Status
    baseline_position: int | None = None
    effects: list[PositionEffect] = Field(default_factory=list)
    f_statistic: float | None = None
    p_value: float | None = None
    flagged: bool = False
    direction: Literal["primacy", "recency", "mixed"] | None = None


class PositionConsistency(_Out):
    reviewer: str
    pairs: int
    position_consistency: float | None  # consistent / all swapped pairs (MT-Bench)
    preference_fairness: float | None  # -1 primacy .. 0 fair .. +1 recency (Shi et al. 2024)
    primacy_preferred: int
    recency_preferred: int


class Randomization(_Out):
    status: Status
    sessions: int
    placements: int
    models: list[str] = Field(default_factory=list)
    positions: list[int] = Field(default_factory=list)
    counts: list[list[int]] = Field(default_factory=list)  # models x positions
    chi_square: float | None = None
    degrees_of_freedom: int | None = None
    p_value: float | None = None
    shared_order_fraction: float | None = None
    broken: bool = False
    shared: bool = False
    # per-reviewer orders in which every model took every position equally often (a Latin square,
    # `bias-audit orders`), and whether each model also followed each other one equally (Williams)
    balanced: bool = False
    carryover_balanced: bool = False
    # within each reviewer: its own models x positions table (every review counts). Pooled, a
    # design can balance while each reviewer sees the same row session after session: position
    # is then confounded with that reviewer's affinity for a model and with self-preference
    reviewers_balanced: bool = False  # every reviewer's table within one count of even
    reviewer_chi_square: float | None = None  # the reviewers' chi-squares summed (independent tables)
    reviewer_degrees_of_freedom: int | None = None
    reviewer_p_value: float | None = None
    confounded_reviewers: list[str] = Field(default_factory=list)  # whose own table departs (p < alpha / reviewers)


class ReviewerProfile(_Out):
    reviewer: str
    sessions: int
    scores: int
    confidence: ConfidenceTier
    mean_score: float | None
    score_std: float | None
    offset: Estimate  # leave-one-out: negative = harsh
    self_preference: Estimate
    agreement_with_peers: float | None  # Pearson of its scores with the other reviewers' mean
    flags: list[str] = Field(default_factory=list)


class CouncilBias(_Out):
    """One reviewer's (or reviewer x model pair's) council bias, in points of a 1-10 scale unless
    the section says otherwise; `flagged` needs both the size and the multiplicity-corrected p."""

    reviewer: str
    effect: float | None
    ci_lower: float | None
    ci_upper: float | None
    p_value: float | None
    n: int  # scores (or repeated-content scores) behind the effect
    sessions: int
    confidence: ConfidenceTier
    status: Status = "ok"
    flagged: bool = False


class Affinity(CouncilBias):
    """Reviewer x model interaction: how much more this reviewer scores this model than its own
    harshness and the model's quality (as the rest of the council scores it) predict."""

    model: str
    p_adjusted: float | None = None  # Benjamini-Hochberg over the window's pairs
    mutual: bool = False  # the model, as a reviewer, also favours this reviewer: possible collusion


class SelfConsistency(CouncilBias):
    """effect: this reviewer's within-content score SD (the same answer scored again);
    council_sd: the other reviewers' pooled within-content SD; icc: test-retest reliability."""

    council_sd: float | None = None
    icc: float | None = None
    contents: int = 0  # distinct answers this reviewer scored more than once


class ReviewerPosterior(_Out):
    """Empirical-Bayes partial pooling of a reviewer's offset toward the council's (0): shrunk by
    its own evidence, with a 95% credible interval."""

    reviewer: str
    offset: float | None  # the profile's (unpooled) estimate
    posterior_mean: float | None
    credible_lower: float | None
    credible_upper: float | None
    shrinkage: float | None  # 0: its own estimate, 1: the council's
    mean_score: float | None  # its peer scores' mean and SD: the calibrated view's scale
    score_sd: float | None


class CalibratedModel(_Out):
    """A model's peer scores z-normalized by each reviewer's own mean and SD, then averaged:
    for analytics only, never fed back into a council's vote."""

    model: str
    scores: int
    raw_mean: float
    calibrated_z: float | None


class Agreement(_Out):
    krippendorff_alpha: Estimate  # interval metric, raw scores, units = (session, model)


class TimeBucket(_Out):
    start: str
    end: str
    sessions: int
    mean_score: float | None
    length_correlation: float | None
    reviewer_offsets: dict[str, float] = Field(default_factory=dict)


class TrendTest(_Out):
    metric: str
    subject: str
    previous: float | None
    current: float | None
    difference: float | None
    p_value: float | None
    previous_sessions: int
    current_sessions: int
    flagged: bool = False


class ChangePoint(_Out):
    at: str
    trace_id: str | None
    from_version: str
    to_version: str
    tests: list[TrendTest] = Field(default_factory=list)


class TenantReport(_Out):
    tenant_id: str
    sessions: int
    scores: int
    window_start: str | None
    window_end: str | None
    confidence: ConfidenceTier
    length_unit: str
    length_correlation: LengthCorrelation
    length_control: LengthControl
    position: PositionAnalysis
    position_consistency: list[PositionConsistency] = Field(default_factory=list)
    randomization: Randomization
    reviewers: list[ReviewerProfile] = Field(default_factory=list)
    agreement: Agreement
    timeline: list[TimeBucket] = Field(default_factory=list)
    trends: list[TrendTest] = Field(default_factory=list)
    change_points: list[ChangePoint] = Field(default_factory=list)
    flags: list[str] = Field(default_factory=list)
    # a pooled flag (LENGTH_BIAS, POSITION_BIAS_*) -> the one reviewer without whose scores the same
    # test no longer flags it
    finding_drivers: dict[str, str] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    # Points of the length-vs-score chart: (length, offset-adjusted mean peer score), at most a
    # few thousand, and the fitted line's intercept and slope (points per length unit).
    length_points: list[tuple[float, float]] = Field(default_factory=list)
    length_fit: tuple[float, float] | None = None
    # Council biases (contracts.md, "Report: council biases")
    affinity: list[Affinity] = Field(default_factory=list)
    anchoring: list[CouncilBias] = Field(default_factory=list)  # slope: later residuals on the first's departure
    style_similarity: list[CouncilBias] = Field(default_factory=list)  # points per unit of similarity
    self_consistency: list[SelfConsistency] = Field(default_factory=list)
    length_given_correctness: Estimate | None = None  # points per 100 words among equally correct answers
    reviewer_posteriors: list[ReviewerPosterior] = Field(default_factory=list)
    calibrated_view: list[CalibratedModel] = Field(default_factory=list)


class RolledUpTotal(_Out):
    """Daily aggregates retention kept of deleted rows, summed over the rolled-up days."""

    source: Literal["council", "interaction", "judge"]
    model: str  # "" where it does not apply; judges: the judge's model
    reviewer: str  # council cells: the reviewer; "" for interactions; judges: the judge's prompt
    # interactions: a detected bias type, "" for none; "" for council cells; judges: "" (verdicts,
    # flagged = failed), first_position (decisive, flagged = the first shown won), longer_answer
    bias_type: str
    items: int  # scored cells, or interactions
    flagged: int  # self-reviews among the cells; interactions with this bias type detected
    mean: float | None  # cells: the mean raw score; interactions: the mean confidence (0-1)


class RolledUpHistory(_Out):
    """What is left of a tenant's rows older than the retention's aggregation age: not part of
    the window's statistics (those need the scored cells), only counts and means."""

    tenant_id: str
    first_day: str
    last_day: str
    days: int
    totals: list[RolledUpTotal] = Field(default_factory=list)


class DetectorPrecision(_Out):
    """Of the flags people reviewed, the share they confirmed, per tenant, bias type and analyzer."""

    tenant_id: str
    bias_type: str
    analyzer: str
    reviewed: int
    confirmed: int
    precision: float
    ci_lower: float  # Wilson 95%
    ci_upper: float


class DetectorQualityEntry(_Out):
    """Precision and recall of the flags, per tenant and bias type ("any bias": flagged for
    anything), estimated from reviews: precision from reviewed flags, recall with the reviews of
    the uniform sample of unflagged answers. None until there are reviews of both kinds."""

    tenant_id: str
    bias_type: str
    flagged: int
    unflagged: int
    precision: float | None
    precision_ci: tuple[float, float] | None
    precision_reviews: int
    recall: float | None
    recall_ci: tuple[float, float] | None  # Jeffreys posterior draws of both shares
    sampled_reviews: int


class TrafficGap(_Out):
    """One metric of a group against the model's answers for the axis' other groups."""

    value: float  # the group's own refusal or toxicity rate, mean sentiment or geometric mean words
    value_ci: tuple[float, float]  # its 95% CI: Wilson for a rate, t for a mean (of log words for length)
    others: float
    estimate: float  # value - others; for length_ratio value / others
    ci_lower: float
    ci_upper: float
    p_value: float | None  # Holm-adjusted across the axis' groups; None: too few answers to test
    flagged: bool


class GroupDisparityEntry(_Out):
    """Live traffic, unpaired: a model's answers to queries naming a group (consent >= 2)."""

    tenant_id: str
    llm_model: str
    axis: str
    group: str
    answers: int
    others: int
    refusal_rate_gap: TrafficGap
    sentiment_gap: TrafficGap
    toxicity_gap: TrafficGap
    length_ratio: TrafficGap


class DismissedEvidence(_Out):
    tenant_id: str
    bias_type: str
    evidence: str  # a lexicon term, a rule id or the text a rule matched
    dismissed: int
    confirmed: int


class ReportInputs(_Out):
    sources: list[str]
    files: int
    lines: int
    records: int
    sessions_read: int
    duplicate_sessions: int
    skipped_lines: int
    skipped_examples: list[str] = Field(default_factory=list)


class TenantJudges(_Out):
    """A tenant's judge report (`bias-audit judges --format json`'s document), for tenants with verdicts."""

    tenant_id: str
    report: dict[str, Any]


class BiasReport(_Out):
    schema_version: str = REPORT_SCHEMA_VERSION
    report_type: Literal["bias.audit.report"] = "bias.audit.report"
    generated_at: str
    window_sessions: int | None
    window_days: float | None
    inputs: ReportInputs
    tenants: list[TenantReport]
    rolled_up: list[RolledUpHistory] = Field(default_factory=list)  # from a store's daily aggregates
    detector_precision: list[DetectorPrecision] = Field(default_factory=list)  # from a store's reviews
    most_dismissed: list[DismissedEvidence] = Field(default_factory=list)
    judges: list[TenantJudges] = Field(default_factory=list)  # from a store's judge verdicts
    detector_quality: list[DetectorQualityEntry] = Field(default_factory=list)  # from a store's reviews
    # from a store's answers whose queries named a group; unpaired (see group_disparity_note)
    group_disparity: list[GroupDisparityEntry] = Field(default_factory=list)
    group_disparity_note: str | None = None
