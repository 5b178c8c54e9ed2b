"""The distribution tails every analysis module takes: scipy.special's, imported in one place."""

from scipy.special import chdtrc, chdtri, fdtrc, ndtr, ndtri, stdtr, stdtrit

__all__ = ["chdtrc", "chdtri", "fdtrc", "ndtr", "ndtri", "stdtr", "stdtrit"]
