"""How well a detector separates labelled answers: AUROC, and recall, precision and the
false-positive rate of a flag, each with its 95% interval, and the paired comparison of two
detectors on the same examples. Examples that share an item (one question's answers) are resampled
together, so an interval is not narrowed by near-copies."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .proportions import wilson_interval
from .stats import average_ranks

BOOTSTRAP = 1_000


def auroc(scores: np.ndarray, labels: np.ndarray) -> float | None:
    """The probability that a biased example scores above an unbiased one, ties counting half
    (Mann-Whitney U / n1 n0); None without both classes."""
    positives = int(labels.sum())
    negatives = len(labels) - positives
    if positives == 0 or negatives == 0:
        return None
    ranks = average_ranks(np.asarray(scores, dtype=float))
    return float((ranks[labels].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def threshold_for_fpr(
    scores: np.ndarray, labels: np.ndarray, max_fpr: float, already_flagged: np.ndarray | None = None
) -> float:
    """The lowest threshold t such that flagging `score > t` (or an example already flagged) lets
    through at most max_fpr of the unbiased examples; +inf when the already flagged ones use up
    the allowance."""
    flagged = np.zeros(len(labels), dtype=bool) if already_flagged is None else already_flagged
    negatives = ~labels
    allowed = int(np.floor(max_fpr * negatives.sum() + 1e-9)) - int((flagged & negatives).sum())
    open_scores = np.sort(scores[negatives & ~flagged])[::-1]
    if allowed < 0 or len(open_scores) == 0:
        return float("inf")
    if allowed >= len(open_scores):
        return float(open_scores[-1]) - 1.0  # every unbiased one fits in the allowance
    return float(open_scores[allowed])


@dataclass(frozen=True)
class Rate:
    value: float | None
    ci: tuple[float, float] | None
    k: int
    n: int

    @staticmethod
    def of(k: int, n: int) -> Rate:
        return Rate(k / n if n else None, wilson_interval(k, n) if n else None, k, n)


@dataclass(frozen=True)
class FlagQuality:
    n: int
    biased: int
    auroc: float | None
    auroc_ci: tuple[float, float] | None
    recall: Rate
    precision: Rate
    false_positive_rate: Rate


def _clusters(items: Sequence[str] | None, n: int) -> list[np.ndarray]:
    if items is None:
        return [np.array([i]) for i in range(n)]
    index: dict[str, list[int]] = {}
    for i, item in enumerate(items):
        index.setdefault(item, []).append(i)
    return [np.array(v) for v in index.values()]


def _resamples(clusters: list[np.ndarray], rng: np.random.Generator, count: int) -> list[np.ndarray]:
    return [np.concatenate([clusters[j] for j in rng.integers(0, len(clusters), len(clusters))]) for _ in range(count)]


def _percentile_ci(values: Sequence[float | None]) -> tuple[float, float] | None:
    kept = [v for v in values if v is not None and bool(np.isfinite(v))]
    if len(kept) < 20:
        return None
    low, high = np.percentile(kept, [2.5, 97.5])
    return float(low), float(high)


def flag_quality(
    scores: Sequence[float] | np.ndarray,
    flags: Sequence[bool] | np.ndarray,
    labels: Sequence[bool] | np.ndarray,
    items: Sequence[str] | None = None,
    *,
    seed: int = 0,
    bootstrap: int = BOOTSTRAP,
) -> FlagQuality:
    """AUROC of the score (CI by resampling items), and recall, precision and false-positive rate
    of the flag (Wilson intervals)."""
    s, f, y = np.asarray(scores, dtype=float), np.asarray(flags, dtype=bool), np.asarray(labels, dtype=bool)
    area = auroc(s, y)
    ci = None
    if area is not None and bootstrap:
        rng = np.random.default_rng(seed)
        ci = _percentile_ci([auroc(s[r], y[r]) for r in _resamples(_clusters(items, len(y)), rng, bootstrap)])
    return FlagQuality(
        len(y),
        int(y.sum()),
        area,
        ci,
        Rate.of(int((f & y).sum()), int(y.sum())),
        Rate.of(int((f & y).sum()), int(f.sum())),
        Rate.of(int((f & ~y).sum()), int((~y).sum())),
    )


@dataclass(frozen=True)
class PairedDifference:
    """B minus A on the same examples: the estimate, its bootstrap interval and two-sided p."""

    estimate: float | None
    ci: tuple[float, float] | None
    p_value: float | None


def paired_difference(
    scores_a: Sequence[float] | np.ndarray,
    flags_a: Sequence[bool] | np.ndarray,
    scores_b: Sequence[float] | np.ndarray,
    flags_b: Sequence[bool] | np.ndarray,
    labels: Sequence[bool] | np.ndarray,
    items: Sequence[str] | None = None,
    *,
    seed: int = 0,
    bootstrap: int = BOOTSTRAP,
) -> dict[str, PairedDifference]:
    """AUROC and recall of B minus A, resampling items once for both detectors (paired)."""
    sa, sb = np.asarray(scores_a, dtype=float), np.asarray(scores_b, dtype=float)
    fa, fb, y = np.asarray(flags_a, dtype=bool), np.asarray(flags_b, dtype=bool), np.asarray(labels, dtype=bool)

    def differences(rows: np.ndarray) -> tuple[float | None, float | None]:
        ya = y[rows]
        a, b = auroc(sa[rows], ya), auroc(sb[rows], ya)
        positives = int(ya.sum())
        recall = (int((fb[rows] & ya).sum()) - int((fa[rows] & ya).sum())) / positives if positives else None
        return (None if a is None or b is None else b - a), recall

    estimate = differences(np.arange(len(y)))
    draws = [differences(r) for r in _resamples(_clusters(items, len(y)), np.random.default_rng(seed), bootstrap)]
    out = {}
    for k, name in enumerate(("auroc", "recall")):
        values = [d[k] for d in draws if d[k] is not None]
        p = None
        if estimate[k] is not None and len(values) >= 20:
            # the share of resamples on the other side of zero, both tails (percentile bootstrap)
            below = float(np.mean(np.asarray(values) <= 0))
            above = float(np.mean(np.asarray(values) >= 0))
            p = min(1.0, 2 * min(below, above))
        out[name] = PairedDifference(estimate[k], _percentile_ci(values), p)
    return out
