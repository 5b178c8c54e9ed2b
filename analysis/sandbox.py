"""Candidate vs baseline: for each bias type, how often each side's answers were flagged, the
difference with a 95% CI, a test, and a verdict after a correction for testing many types.

Unpaired sides: Wilson intervals for each rate, Newcombe's hybrid score interval for the
difference (his method 10), Fisher's exact test. Paired sides (the same prompts: events matched
by audit_id or query_hash): the Agresti-Min interval for the paired difference and McNemar's exact
test on the discordant pairs. Holm's step-down correction over the bias types; `p_value` is the
adjusted one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .multiple_tests import binomial_two_sided_half, holm
from .proportions import Z95, newcombe_difference
from .special import fisher_exact_p

ALPHA = 0.05
CORRECTION = "holm"


@dataclass(frozen=True)
class Comparison:
    bias_type: str
    baseline_rate: float
    candidate_rate: float
    difference: float  # candidate - baseline
    ci_lower: float
    ci_upper: float
    p_value: float  # Holm-adjusted over the bias types compared
    paired: bool
    verdict: str  # "worse" | "no_difference" | "better"


def agresti_min_paired(b: int, c: int, n: int, z: float = Z95) -> tuple[float, float]:
    """95% CI of the paired difference (c - b) / n: Wald after adding 1/2 to each of the four
    cells (Agresti & Min 2005). b: flagged in the baseline only; c: in the candidate only."""
    bb, cc, nn = b + 0.5, c + 0.5, n + 2.0
    d = (cc - bb) / nn
    se = math.sqrt(((bb + cc) - (cc - bb) ** 2 / nn) / (nn * nn))
    return max(-1.0, d - z * se), min(1.0, d + z * se)


def mcnemar_exact_p(b: int, c: int) -> float:
    """Exact McNemar: the two-sided binomial test of the discordant pairs against 1/2."""
    return binomial_two_sided_half(min(b, c), b + c)


def compare(
    baseline: Sequence[frozenset[str]],
    candidate: Sequence[frozenset[str]],
    pairs: Sequence[tuple[int, int]] | None = None,
    bias_types: Sequence[str] | None = None,
    alpha: float = ALPHA,
) -> list[Comparison]:
    """baseline / candidate: each answer's flagged bias types. pairs: (baseline index, candidate
    index) of the same prompt; given, the paired tests are used on those pairs alone."""
    if not baseline or not candidate:
        raise ValueError("each side needs at least one answer")
    types = sorted(bias_types if bias_types is not None else set().union(*baseline, *candidate))
    raw = []
    for bias_type in types:
        if pairs:
            b = sum(1 for i, j in pairs if bias_type in baseline[i] and bias_type not in candidate[j])
            c = sum(1 for i, j in pairs if bias_type not in baseline[i] and bias_type in candidate[j])
            n = len(pairs)
            base = sum(1 for i, _ in pairs if bias_type in baseline[i]) / n
            cand = sum(1 for _, j in pairs if bias_type in candidate[j]) / n
            lower, upper = agresti_min_paired(b, c, n)
            p = mcnemar_exact_p(b, c)
        else:
            k1 = sum(1 for flags in candidate if bias_type in flags)
            k0 = sum(1 for flags in baseline if bias_type in flags)
            cand, base = k1 / len(candidate), k0 / len(baseline)
            lower, upper = newcombe_difference(k1, len(candidate), k0, len(baseline))
            p = fisher_exact_p(k1, len(candidate) - k1, k0, len(baseline) - k0)
        raw.append((bias_type, base, cand, lower, upper, p))
    adjusted = holm([entry[5] for entry in raw])
    out = []
    for (bias_type, base, cand, lower, upper, _), p in zip(raw, adjusted):
        difference = cand - base
        verdict = "no_difference" if p >= alpha else ("worse" if difference > 0 else "better")
        out.append(
            Comparison(
                bias_type,
                round(base, 6),
                round(cand, 6),
                round(difference, 6),
                round(lower, 6),
                round(upper, 6),
                round(p, 8),
                bool(pairs),
                verdict,
            )
        )
    return out
