"""Agreement between reviewers (Krippendorff's alpha) and position consistency on swapped
pairs (MT-Bench's PC; Shi et al. 2024's preference fairness)."""

from __future__ import annotations

import numpy as np

from bias_audit.schemas.report import Estimate, PositionConsistency

from .stats import confidence_tier, present_levels
from .window_cells import WindowCells

MIN_SESSIONS = 10


def krippendorff_alpha_interval(values: np.ndarray, units: np.ndarray) -> tuple[float | None, int]:
    """Alpha with the interval metric, in O(n): for squared differences the pairable sums
    reduce to sums and sums of squares per unit. Units with one value are not pairable.
    Returns (alpha or None, pairable values)."""
    _, units = present_levels(units)
    m = np.bincount(units)
    return alpha_interval_of_sums(m, np.bincount(units, weights=values), np.bincount(units, weights=values * values))


def alpha_interval_of_sums(count: np.ndarray, total: np.ndarray, squares: np.ndarray) -> tuple[float | None, int]:
    """krippendorff_alpha_interval from each unit's count, sum and sum of squares of its values
    (units with fewer than two values, or none, are not pairable): a window's units, not its cells."""
    keep = count >= 2
    m_u, s1, s2 = count[keep].astype(np.float64), total[keep], squares[keep]
    n = int(m_u.sum())
    if n < 2:
        return None, n
    # sum over ordered pairs i != j of (v_i - v_j)^2 = 2 m S2 - 2 S1^2
    observed = np.sum((2 * m_u * s2 - 2 * s1 * s1) / (m_u - 1)) / n
    expected = (2 * n * s2.sum() - 2 * s1.sum() ** 2) / (n * (n - 1))
    if expected <= 0:
        return None, n
    return float(1.0 - observed / expected), n


def krippendorff_alpha_nominal(labels: list[str], units: list[object]) -> tuple[float | None, int]:
    """Alpha with the nominal metric (people's verdicts: confirmed / dismissed), from the
    coincidence counts: D_o = sum_u (m_u^2 - sum_c n_uc^2) / (m_u - 1) / n and
    D_e = (n^2 - sum_c n_c^2) / (n (n - 1)). Units with one label are not pairable.
    Returns (alpha or None, pairable labels); None when every label is the same (no variation)."""
    by_unit: dict[object, dict[str, int]] = {}
    for label, unit in zip(labels, units):
        counts = by_unit.setdefault(unit, {})
        counts[label] = counts.get(label, 0) + 1
    totals: dict[str, int] = {}
    observed = 0.0
    n = 0
    for counts in by_unit.values():
        m = sum(counts.values())
        if m < 2:
            continue
        n += m
        observed += (m * m - sum(c * c for c in counts.values())) / (m - 1)
        for label, c in counts.items():
            totals[label] = totals.get(label, 0) + c
    if n < 2:
        return None, n
    expected = (n * n - sum(c * c for c in totals.values())) / (n * (n - 1))
    if expected <= 0:
        return None, n
    return 1.0 - (observed / n) / expected, n


def agreement(cells: WindowCells) -> Estimate:
    sessions = cells.sessions
    alpha, n = alpha_interval_of_sums(*cells.peer_sums, cells.peer_square_sums())
    if sessions < MIN_SESSIONS or alpha is None:
        return Estimate(
            point_estimate=None,
            ci_lower=None,
            ci_upper=None,
            sample_size=n,
            sessions=sessions,
            confidence=confidence_tier(sessions),
            status="collecting data",
        )
    return Estimate(
        point_estimate=round(alpha, 4),
        ci_lower=None,
        ci_upper=None,
        sample_size=n,
        sessions=sessions,
        confidence=confidence_tier(sessions),
    )


def _within_group_pairs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (i, j), i before j, of elements sharing a key; keys must be sorted."""
    firsts, seconds = [], []
    n = len(keys)
    distance = 1
    while distance < n:
        same = keys[distance:] == keys[:-distance]
        if not same.any():
            break
        i = np.flatnonzero(same)
        firsts.append(i)
        seconds.append(i + distance)
        distance += 1
    if not firsts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(firsts), np.concatenate(seconds)


def position_consistency(cells: WindowCells) -> list[PositionConsistency]:
    """For each reviewer, every time it saw a pair of models in one order is matched (in time
    order) with a time it saw them in the other order. Consistent: the same model preferred
    (or a tie) both times. Primacy-preferred: the first shown won both times; recency: the
    second. PF = (recency - primacy) / pairs."""
    use = cells.peer & (cells.position >= 0)
    out = []
    # one reviewer at a time: its pairs are matched only with its own, and the pair arrays of
    # the whole window would be many times its cells
    for k in np.flatnonzero(np.bincount(cells.reviewer[use], minlength=len(cells.reviewers))):
        mine = use & (cells.reviewer == k)
        total, n_consistent, n_primacy, n_recency = _swapped_pair_counts(
            cells.session[mine], cells.model[mine], cells.position[mine], cells.score[mine], len(cells.models)
        )
        if total == 0:
            continue
        out.append(
            PositionConsistency(
                reviewer=cells.reviewers[k],
                pairs=total,
                position_consistency=round(n_consistent / total, 4),
                preference_fairness=round((n_recency - n_primacy) / total, 4),
                primacy_preferred=n_primacy,
                recency_preferred=n_recency,
            )
        )
    return out


def _swapped_pair_counts(
    session: np.ndarray, model: np.ndarray, position: np.ndarray, score: np.ndarray, n_models: int
) -> tuple[int, int, int, int]:
    """One reviewer's (matched pairs, consistent, primacy-preferred, recency-preferred) from its
    scores: the k-th time it saw a pair with the lower model first is matched with the k-th time
    it saw it the other way round."""
    order = np.argsort(session, kind="stable")
    i, j = _within_group_pairs(session[order])
    i, j = order[i], order[j]
    lo = np.minimum(model[i], model[j])
    swap = model[i] != lo  # orient each pair as (lower model index, higher)
    a, b = np.where(swap, j, i), np.where(swap, i, j)
    del i, j, lo, swap
    lo_first = position[a] < position[b]
    preference = np.sign(score[a] - score[b]).astype(np.int8)  # +1: the lower-index model won
    # (pair, orientation) blocks, each in time (session) order: one stable sort of a packed key
    kind = (model[a].astype(np.int64) * n_models + model[b]) * 2 + lo_first
    sessions = int(session.max()) + 1
    sort = np.argsort(kind * sessions + session[a], kind="stable")
    del a, b
    counts = np.bincount(kind, minlength=2 * n_models * n_models)
    starts = np.cumsum(counts) - counts
    # the k-th time a pair was seen lower model first meets the k-th time it was seen the other way
    matched = np.minimum(counts[1::2], counts[0::2])
    pair = np.repeat(np.arange(len(matched)), matched)
    k = np.arange(len(pair)) - np.repeat(np.cumsum(matched) - matched, matched)
    pa, pb = preference[sort[starts[1::2][pair] + k]], preference[sort[starts[0::2][pair] + k]]
    primacy = (pa == 1) & (pb == -1)  # lower model won when first, higher model won when first
    recency = (pa == -1) & (pb == 1)
    return len(pa), int(np.count_nonzero(pa == pb)), int(np.count_nonzero(primacy)), int(np.count_nonzero(recency))
