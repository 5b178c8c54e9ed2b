"""A detector's precision and recall estimated from people's reviews.

Precision comes from reviews of flagged answers (served in random order, so the reviewed ones are
a uniform sample of the flagged). Recall needs the misses, which only reviews of unflagged answers
can show: the review queue also serves a uniform share of unflagged answers, each review keeping
its inclusion probability. Two strata then: flagged answers (N1, true positives N1 x precision)
and unflagged ones (N2, misses N2 x the weighted share people marked biased), and

    recall = N1 p / (N1 p + N2 q).

Its interval propagates both shares' uncertainty: p and q are drawn from their Jeffreys posteriors
(Beta(k + 1/2, n - k + 1/2)), and the 2.5th and 97.5th percentiles of the recall they give are the
bounds. Jeffreys' interval keeps close to its nominal coverage at the small counts a 2% sample of
a rare bias gives (k = 0 or 1 of 100), where a normal approximation does not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .proportions import wilson_interval

DRAWS = 4_000


@dataclass(frozen=True)
class Estimate:
    value: float | None
    ci: tuple[float, float] | None
    n: int  # the reviews behind it


@dataclass(frozen=True)
class DetectorQuality:
    bias_type: str
    flagged: int  # answers flagged (for this type)
    unflagged: int  # answers nothing was flagged on: the stratum the sample is drawn from
    precision: Estimate
    recall: Estimate


def weighted_share(marked: Sequence[bool], inclusion: Sequence[float]) -> tuple[float, float]:
    """(share, effective count): the Hajek estimate of the share marked, each review weighted by
    1 / its inclusion probability, and the number of reviews it rests on."""
    weights = 1.0 / np.asarray(inclusion, dtype=float)
    share = float(np.sum(weights * np.asarray(marked, dtype=float)) / np.sum(weights))
    return share, float(len(marked))


def detector_quality(
    bias_type: str,
    *,
    flagged: int,
    unflagged: int,
    confirmed: int,
    dismissed: int,
    sampled_marked: Sequence[bool],
    sampled_inclusion: Sequence[float],
    seed: int = 0,
    draws: int = DRAWS,
) -> DetectorQuality:
    """confirmed / dismissed: verdicts on reviewed flagged answers; sampled_marked: for each
    reviewed unflagged answer, whether the person marked it biased (with this type)."""
    reviews = confirmed + dismissed
    precision = Estimate(
        confirmed / reviews if reviews else None, wilson_interval(confirmed, reviews) if reviews else None, reviews
    )
    m = len(sampled_marked)
    if not reviews or not m or flagged + unflagged == 0:
        return DetectorQuality(bias_type, flagged, unflagged, precision, Estimate(None, None, m))
    q, n = weighted_share(sampled_marked, sampled_inclusion)
    k = q * n
    p_hat = confirmed / reviews
    true_positives, misses = flagged * p_hat, unflagged * q
    value = true_positives / (true_positives + misses) if true_positives + misses > 0 else None
    rng = np.random.default_rng(seed)
    p_draws = rng.beta(confirmed + 0.5, dismissed + 0.5, draws)
    q_draws = rng.beta(k + 0.5, n - k + 0.5, draws)
    recalls = flagged * p_draws / (flagged * p_draws + unflagged * q_draws)
    low, high = np.percentile(recalls, [2.5, 97.5])
    return DetectorQuality(bias_type, flagged, unflagged, precision, Estimate(value, (float(low), float(high)), m))


@dataclass(frozen=True)
class ReviewedAnswer:
    """An answer's latest review, as detector_quality_of reads it."""

    flagged_types: tuple[str, ...]  # what the detectors flagged on it (empty: nothing)
    verdicts: dict[str, str]  # flagged type -> confirmed | dismissed
    tags: tuple[str, ...]  # the types the person saw
    inclusion: float | None  # the queue's inclusion probability; None: not served as a sample
    answer_biased: bool | None  # the person's judgement of the whole answer


ANY = "any bias"


def detector_quality_of(
    flagged: dict[str, int], flagged_any: int, unflagged: int, reviews: Sequence[ReviewedAnswer], seed: int = 0
) -> list[DetectorQuality]:
    """Per bias type (and ANY, flagged for anything): precision from the verdicts on flagged
    answers, recall with the sampled unflagged answers' reviews. A type's misses are counted among
    the answers nothing was flagged on (those flagged for another type only are not sampled)."""
    sampled = [r for r in reviews if not r.flagged_types and r.inclusion and r.answer_biased is not None]
    out = []
    decided = [
        r for r in reviews if r.flagged_types and any(v in ("confirmed", "dismissed") for v in r.verdicts.values())
    ]
    any_confirmed = sum(1 for r in decided if "confirmed" in r.verdicts.values())
    out.append(
        detector_quality(
            ANY,
            flagged=flagged_any,
            unflagged=unflagged,
            confirmed=any_confirmed,
            dismissed=len(decided) - any_confirmed,
            sampled_marked=[bool(r.answer_biased) for r in sampled],
            sampled_inclusion=[float(r.inclusion or 1.0) for r in sampled],
            seed=seed,
        )
    )
    types = sorted(set(flagged) | {t for r in sampled for t in r.tags})
    for name in types:
        verdicts = [r.verdicts.get(name) for r in reviews if name in r.flagged_types]
        out.append(
            detector_quality(
                name,
                flagged=flagged.get(name, 0),
                unflagged=unflagged,
                confirmed=verdicts.count("confirmed"),
                dismissed=verdicts.count("dismissed"),
                sampled_marked=[bool(r.answer_biased) and name in r.tags for r in sampled],
                sampled_inclusion=[float(r.inclusion or 1.0) for r in sampled],
                seed=seed,
            )
        )
    return out
