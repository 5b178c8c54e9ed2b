"""The distribution tails and exact tests every analysis module takes: scipy's, imported in one place."""

from scipy.special import chdtrc, chdtri, fdtrc, ndtr, ndtri, stdtr, stdtrit

__all__ = ["chdtrc", "chdtri", "fdtrc", "fisher_exact_p", "ndtr", "ndtri", "stdtr", "stdtrit"]


def fisher_exact_p(a: int, b: int, c: int, d: int) -> float:
    """Two-sided p of Fisher's exact test of the table [[a, b], [c, d]]."""
    # scipy.stats costs every worker and command a second at start; only two tests call this
    from scipy.stats import fisher_exact

    return float(fisher_exact([[a, b], [c, d]]).pvalue)
