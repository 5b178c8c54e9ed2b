"""Agreement between reviewers (Krippendorff's alpha) and position consistency on swapped
pairs (MT-Bench's PC; Shi et al. 2024's preference fairness)."""

from __future__ import annotations

import numpy as np

from bias_audit.schemas.report import Estimate, PositionConsistency

from .stats import COUNT_BLOCK, confidence_tier, present_levels
from .window_cells import SUM_BLOCK, WindowCells

MIN_SESSIONS = 10


def krippendorff_alpha_interval(values: np.ndarray, units: np.ndarray) -> tuple[float | None, int]:
    """Alpha with the interval metric, in O(n): for squared differences the pairable sums
    reduce to sums and sums of squares per unit. Units with one value are not pairable.
    Returns (alpha or None, pairable values)."""
    _, units = present_levels(units)
    m = np.bincount(units)
    return alpha_interval_of_sums(m, np.bincount(units, weights=values), np.bincount(units, weights=values * values))


def alpha_interval_of_sums(
    count: np.ndarray, total: np.ndarray, squares: np.ndarray, block: int = COUNT_BLOCK
) -> tuple[float | None, int]:
    """krippendorff_alpha_interval from each unit's count, sum and sum of squares of its values
    (units with fewer than two values, or none, are not pairable): a window's units, not its
    cells, read a block of units at a time."""
    n, observed, s1_total, s2_total = 0, 0.0, 0.0, 0.0
    for start in range(0, len(count), block):
        keep = count[start : start + block] >= 2
        m_u = count[start : start + block][keep].astype(np.float64)
        s1, s2 = total[start : start + block][keep], squares[start : start + block][keep]
        n += int(m_u.sum())
        # sum over ordered pairs i != j of (v_i - v_j)^2 = 2 m S2 - 2 S1^2
        observed += float(np.sum((2 * m_u * s2 - 2 * s1 * s1) / (m_u - 1)))
        s1_total += float(s1.sum())
        s2_total += float(s2.sum())
    if n < 2:
        return None, n
    expected = (2 * n * s2_total - 2 * s1_total**2) / (n * (n - 1))
    if expected <= 0:
        return None, n
    return float(1.0 - observed / n / expected), n


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


def position_consistency(cells: WindowCells, block: int = SUM_BLOCK) -> list[PositionConsistency]:
    """For each reviewer, every time it saw a pair of models in one order is matched (in time
    order) with a time it saw them in the other order. Consistent: the same model preferred
    (or a tie) both times. Primacy-preferred: the first shown won both times; recency: the
    second. PF = (recency - primacy) / pairs. Read a block of whole sessions (about `block`
    cells) at a time, each reviewer's orders not yet matched carried to the next block."""
    n_models = len(cells.models)
    tallies: dict[int, _SwapTally] = {}
    for part, _, _ in cells.session_blocks(block):
        use = ~cells.own[part] & (cells.position[part] >= 0)
        reviewer = cells.reviewer[part]
        # one reviewer at a time: its pairs are matched only with its own, and the pair arrays of
        # all of a block's cells would be many times them
        for k in np.flatnonzero(np.bincount(reviewer[use], minlength=len(cells.reviewers))).tolist():
            mine = use & (reviewer == k)
            seen = _orders_seen(
                cells.session[part][mine], cells.model[part][mine], cells.position[part][mine], cells.scores(part)[mine]
            )
            tallies.setdefault(k, _SwapTally(n_models)).add(*seen)
    out = []
    for k, tally in sorted(tallies.items()):
        if tally.pairs == 0:
            continue
        out.append(
            PositionConsistency(
                reviewer=cells.reviewers[k],
                pairs=tally.pairs,
                position_consistency=round(tally.consistent / tally.pairs, 4),
                preference_fairness=round((tally.recency - tally.primacy) / tally.pairs, 4),
                primacy_preferred=tally.primacy,
                recency_preferred=tally.recency,
            )
        )
    return out


def _orders_seen(
    session: np.ndarray, model: np.ndarray, position: np.ndarray, score: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each time one reviewer saw two models in one session: (the lower model, the higher, whether
    the lower was shown first, +1 if the lower won, -1 if the higher, 0 a tie), in session order."""
    order = np.argsort(session, kind="stable")
    i, j = _within_group_pairs(session[order])
    i, j = order[i], order[j]
    swap = model[i] > model[j]  # orient each pair as (lower model index, higher)
    a, b = np.where(swap, j, i), np.where(swap, i, j)
    del i, j, swap
    sort = np.argsort(session[a], kind="stable")
    a, b = a[sort], b[sort]
    preference = np.sign(score[a] - score[b]).astype(np.int8)
    return model[a], model[b], position[a] < position[b], preference


class _SwapTally:
    """One reviewer's matched pairs of opposite orders so far, and for each pair of models the
    preferences of the orders not yet matched (those of one order only), in time order: the k-th
    time it saw the lower model first meets the k-th time it saw the higher model first."""

    def __init__(self, n_models: int) -> None:
        self.n_models = n_models
        self.waiting: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # pair -> (lower first, higher first)
        self.pairs = self.consistent = self.primacy = self.recency = 0

    def add(self, lower: np.ndarray, higher: np.ndarray, lower_first: np.ndarray, preference: np.ndarray) -> None:
        """Orders seen in later sessions than any added before."""
        pair = lower.astype(np.int64) * self.n_models + higher
        none = np.zeros(0, dtype=np.int8)
        for key in np.unique(pair).tolist():
            here = pair == key
            was_first, was_second = self.waiting.get(key, (none, none))
            first = np.concatenate([was_first, preference[here & lower_first]])
            second = np.concatenate([was_second, preference[here & ~lower_first]])
            matched = min(len(first), len(second))
            pa, pb = first[:matched], second[:matched]
            self.pairs += matched
            self.consistent += int(np.count_nonzero(pa == pb))
            self.primacy += int(np.count_nonzero((pa == 1) & (pb == -1)))  # the first shown won both times
            self.recency += int(np.count_nonzero((pa == -1) & (pb == 1)))
            self.waiting[key] = (first[matched:], second[matched:])
