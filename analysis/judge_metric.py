"""A judge metric's value: an estimate with its 95% CI and N, and a test's p and flag where one
applies (contracts.md "Judge report"), with the intervals the judge metrics share."""

from __future__ import annotations

from dataclasses import dataclass

from .multiple_tests import binomial_two_sided_half
from .proportions import wilson_interval


@dataclass(frozen=True, slots=True)
class Metric:
    estimate: float | None
    ci_lower: float | None
    ci_upper: float | None
    n: int
    p_value: float | None = None  # where a test applies
    flagged: bool | None = None  # None where no test applies

    def document(self, digits: int = 4) -> dict[str, object]:
        def r(x: float | None) -> float | None:
            return None if x is None else round(x, digits)

        out: dict[str, object] = {
            "estimate": r(self.estimate),
            "ci_lower": r(self.ci_lower),
            "ci_upper": r(self.ci_upper),
            "n": self.n,
        }
        if self.flagged is not None:
            out["p_value"] = None if self.p_value is None else float(f"{self.p_value:.4g}")
            out["flagged"] = self.flagged
        return out


EMPTY = Metric(None, None, None, 0)


def rate_metric(k: int, n: int, scale: float = 1.0) -> Metric:
    if n == 0:
        return EMPTY
    low, high = wilson_interval(k, n)
    return Metric(scale * k / n, scale * low, scale * high, n)


def half_rate_metric(k: int, n: int) -> Metric:
    """A rate whose neutral value is 1/2: Wilson CI, exact binomial p."""
    if n == 0:
        return Metric(None, None, None, 0, None, False)
    low, high = wilson_interval(k, n)
    return Metric(k / n, low, high, n, binomial_two_sided_half(k, n), False)
