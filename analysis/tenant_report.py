"""One tenant's cross-session report from its window of digests (and the window before it)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from bias_audit.schemas.report import (
    Affinity,
    CalibratedModel,
    CouncilBias,
    Estimate,
    LengthControl,
    LengthCorrelation,
    PositionAnalysis,
    PositionConsistency,
    Randomization,
    ReviewerProfile,
    SelfConsistency,
    TenantReport,
    TrendTest,
)

from .agreement import agreement, position_consistency
from .council_biases import (
    affinity,
    anchoring,
    calibrated_view,
    length_given_correctness,
    pair_fit,
    reviewer_posteriors,
    self_consistency,
    style_similarity,
)
from .cross_session import (
    ClusterBootstrap,
    WindowThresholds,
    length_and_position,
    length_control,
    length_correlation,
    length_fit,
    position_effects,
    randomization_balance,
    reviewer_profiles,
)
from .digest import SessionDigest, iso_ms
from .stats import confidence_tier
from .trends import change_points, compare_windows, timeline
from .window_cells import WindowCells, window_cells

CHART_POINTS = 2000
# The report's sections in the order they run: `progress` hears each name as it begins.
REPORT_STEPS = (
    "length and position fits",
    "length correlation",
    "position consistency",
    "randomization",
    "trends",
    "timeline and change points",
    "reviewer profiles",
    "agreement",
    "self-consistency and calibration",
    "pair fit",
    "affinity",
    "anchoring",
    "style mimicry",
    "finding drivers",
)
Progress = Callable[[str], None]


def _quiet(step: str) -> None:
    """No one is told."""


def _chart_points(x: np.ndarray, y: np.ndarray) -> list[tuple[float, float]]:
    """An evenly strided sample, deterministic, so the chart stays small on long windows."""
    step = max(1, len(x) // CHART_POINTS)
    return [(round(float(a), 1), round(float(b) + 1.0, 3)) for a, b in zip(x[::step], y[::step])]


def tenant_report(
    window: Sequence[SessionDigest] | WindowCells,
    previous: Sequence[SessionDigest] | int = (),
    thresholds: WindowThresholds = WindowThresholds(),
    progress: Progress | None = None,
) -> TenantReport:
    """The window's report. `window`: its digests oldest first, or columns already built
    (the report's path) whose first `previous` sessions are the window before it; given
    digests, `previous` is that earlier window's digests. The earlier window feeds the
    trend tests and the change points only. `progress` hears each of REPORT_STEPS as it begins."""
    if isinstance(window, WindowCells):
        combined, before = window, previous if isinstance(previous, int) else len(previous)
    else:
        earlier = [] if isinstance(previous, int) else list(previous)
        combined, before = window_cells([*earlier, *window]), len(earlier)
    cells = combined.slice(before, combined.sessions) if before else combined
    begin = _handing_back(combined, progress or _quiet)
    sessions = cells.sessions
    units = cells.length_units
    warnings = []
    if len(units) > 1:
        warnings.append(
            "lengths mix words (bias-audit records) and characters (llm-council-core records); "
            "the length metrics pool unlike units"
        )
    if sessions < 10:
        warnings.append(f"only {sessions} sessions: metrics need 10 to leave 'collecting data'")
    length, control, position, consistent_positions, balance, trends = _window_metrics(
        cells, combined, before, thresholds, begin
    )
    # what reads the per-session fits' quantities comes before the council sections, which run
    # without them (a window's responses long each)
    begin("timeline and change points")
    _, x, y = cells.length_points
    chart, line, buckets, changes = _chart_points(x, y), length_fit(cells), timeline(cells), change_points(combined)
    del x, y
    for window in (cells,) if combined is cells else (cells, combined):
        window.let_go("session_offsets", "length_points", "response_lengths", "session_mean_score")
    reviewers, alpha, affinities, anchors, styles, consistency, calibrated = _council_metrics(cells, thresholds, begin)
    flags = []
    if length.flagged:
        flags.append("LENGTH_BIAS")
    if control.coefficient.flagged:
        flags.append("LENGTH_PREFERENCE_IN_SCORES")
    if position.flagged:
        flags.append(f"POSITION_BIAS_{(position.direction or 'mixed').upper()}")
    if balance.broken:
        flags.append("RANDOMIZATION_BROKEN")
    if balance.shared:
        flags.append("ORDER_SHARED_ACROSS_REVIEWERS")
    begin("finding drivers")
    drivers = finding_drivers(cells, thresholds, flags)
    for profile in reviewers:
        flags.extend(f"{flag}:{profile.reviewer}" for flag in profile.flags)
    flags.extend(
        f"{'COLLUSION' if a.mutual else 'AFFINITY'}:{a.reviewer}->{a.model}"
        for a in affinities
        if a.flagged and (a.effect or 0) > 0
    )
    flags.extend(f"DISFAVOUR:{a.reviewer}->{a.model}" for a in affinities if a.flagged and (a.effect or 0) < 0)
    flags.extend(f"ANCHORING:{a.reviewer}" for a in anchors if a.flagged)
    flags.extend(f"STYLE_MIMICRY:{a.reviewer}" for a in styles if a.flagged and (a.effect or 0) > 0)
    flags.extend(f"INCONSISTENT:{a.reviewer}" for a in consistency if a.flagged)
    flags.extend(f"TREND:{t.metric}:{t.subject}" for t in trends if t.flagged)
    if any(a.mutual for a in affinities) and len(cells.active_models) == 4:
        warnings.append(
            "with four members who each review the other three, mutual favour between two of them reads "
            "the same as mutual favour between the other two (plus generosity and quality): check both pairs"
        )
    if position.status == "not identifiable" and sessions >= 10:
        warnings.append("position effects are not identifiable: no model was seen at more than one position")
    return TenantReport(
        tenant_id=cells.tenant_id,
        sessions=sessions,
        scores=int(cells.peer.sum()),
        window_start=iso_ms(int(cells.ts_ms[0])) if sessions else None,
        window_end=iso_ms(int(cells.ts_ms[-1])) if sessions else None,
        confidence=confidence_tier(sessions),
        length_unit=units.pop() if len(units) == 1 else "mixed" if units else "words",
        length_correlation=length,
        length_control=control,
        position=position,
        position_consistency=consistent_positions,
        randomization=balance,
        reviewers=reviewers,
        agreement={"krippendorff_alpha": alpha},
        timeline=buckets,
        trends=trends,
        change_points=changes,
        flags=flags,
        finding_drivers=drivers,
        warnings=warnings,
        length_points=chart,
        length_fit=line,
        affinity=affinities,
        anchoring=anchors,
        style_similarity=styles,
        self_consistency=consistency,
        length_given_correctness=length_given_correctness(cells),
        reviewer_posteriors=reviewer_posteriors(reviewers),
        calibrated_view=calibrated,
    )


def _handing_back(window: WindowCells, progress: Progress) -> Progress:
    """`progress`, the pages the section before read of a spilled window handed back first."""

    def begin(step: str) -> None:
        window.hand_back()
        progress(step)

    return begin


def finding_drivers(cells: WindowCells, thresholds: WindowThresholds, flags: list[str]) -> dict[str, str]:
    """Each pooled flag (length, position) that comes from one reviewer: the one reviewer without
    whose scores the same test no longer flags it, when exactly one does so."""

    # every refit resamples the same sessions: one set of draws serves them all
    bootstrap = ClusterBootstrap(
        cells.sessions, thresholds.bootstrap_replicates, thresholds.bootstrap_seed, keep_draws=True
    )

    active = set(cells.active_reviewers)
    if len(active) < 3:  # with two reviewers, either one alone is half the council
        return {}
    position = [flag for flag in flags if flag.startswith("POSITION_BIAS_")]
    length, control = "LENGTH_BIAS" in flags, "LENGTH_PREFERENCE_IN_SCORES" in flags
    gone: dict[str, list[str]] = {
        flag: [] for flag in flags if flag in position or flag in ("LENGTH_BIAS", "LENGTH_PREFERENCE_IN_SCORES")
    }
    if not gone:
        return {}
    for index, name in enumerate(cells.reviewers):
        if name not in active:
            continue
        # the tests read peer scores alone: the reviewer's are counted out, not copied out
        without = cells.peer_scores_without(index)
        # length control and the position fit share their pass over the rows when both run; they
        # come first, before the length test's per-session offsets are held beside their columns
        controlled: LengthControl | None
        placed: PositionAnalysis | None
        if control and position:
            controlled, placed = length_and_position(without, thresholds)
        else:
            controlled = length_control(without, thresholds) if control else None
            placed = position_effects(without, thresholds) if position else None
        if placed is not None and not placed.flagged:
            for flag in position:
                gone[flag].append(name)
        if controlled is not None and not controlled.coefficient.flagged:
            gone["LENGTH_PREFERENCE_IN_SCORES"].append(name)
        if length and not length_correlation(without, thresholds, ranks=False, bootstrap=bootstrap).flagged:
            gone["LENGTH_BIAS"].append(name)
        del without  # its cached per-session quantities, before the next reviewer's
    return {flag: names[0] for flag, names in gone.items() if len(names) == 1}


_WindowMetrics = tuple[
    LengthCorrelation, LengthControl, PositionAnalysis, list[PositionConsistency], Randomization, list[TrendTest]
]
_CouncilMetrics = tuple[
    list[ReviewerProfile],
    Estimate,
    list[Affinity],
    list[CouncilBias],
    list[CouncilBias],
    list[SelfConsistency],
    list[CalibratedModel],
]


def _window_metrics(
    cells: WindowCells, combined: WindowCells, before: int, thresholds: WindowThresholds, progress: Progress
) -> _WindowMetrics:
    """Length, position, randomization, trends."""
    # the two fits first, before the length test's per-session offsets are held beside their columns
    progress("length and position fits")
    control, position = length_and_position(cells, thresholds)
    progress("length correlation")
    length = length_correlation(cells, thresholds)
    progress("position consistency")
    consistent = position_consistency(cells)
    progress("randomization")
    balance = randomization_balance(cells, thresholds)
    progress("trends")
    trends = compare_windows(combined.slice(0, before), cells) if before else []
    return length, control, position, consistent, balance, trends


def _council_metrics(cells: WindowCells, thresholds: WindowThresholds, progress: Progress) -> _CouncilMetrics:
    """Reviewers, agreement between them, favouritism, anchoring, style mimicry, self-consistency,
    the calibrated view."""
    progress("reviewer profiles")
    profiles = reviewer_profiles(cells, thresholds)
    progress("agreement")
    alpha = agreement(cells)
    progress("self-consistency and calibration")
    consistency, calibrated = self_consistency(cells), calibrated_view(cells)
    cells.let_go("peer_sums")  # the sections from the pair fit on do not read it
    # the pair fit holds a few arrays the length of the window's cells: built last, dropped first
    progress("pair fit")
    fitted = pair_fit(cells)
    progress("affinity")
    affinities = affinity(cells, fitted)
    progress("anchoring")
    anchors = anchoring(cells, fitted)
    progress("style mimicry")
    styles = style_similarity(cells, fitted)
    return profiles, alpha, affinities, anchors, styles, consistency, calibrated
