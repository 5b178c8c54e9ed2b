"""scipy.special's distribution functions, imported without paying for numpy modules nobody uses.

scipy.special's array-API layer (scipy 1.15+) copies numpy's namespace attribute by attribute,
which imports numpy.f2py (and through it charset_normalizer), numpy.testing, numpy.ma and
numpy.polynomial: ~60-90 ms of a short command's start-up, for modules the analysis never calls.
Registering them first as lazy modules (the standard library's importlib.util.LazyLoader) defers
each one's import to the first use of one of its attributes, so a caller that does use one still
gets the real module. Every analysis module takes its tails from here.
"""

from __future__ import annotations

import importlib.util
import sys

import numpy

# what the array-API layer touches and the analysis never calls (tests/analysis/test_import_cost.py)
DEFERRED = ("numpy.f2py", "numpy.testing", "numpy.ma", "numpy.polynomial")


def _defer(name: str) -> None:
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        return
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    setattr(numpy, name.rpartition(".")[2], module)  # numpy's own lazy __getattr__ would import it


for _name in DEFERRED:
    _defer(_name)

from scipy.special import chdtrc, chdtri, fdtrc, ndtr, ndtri, stdtr, stdtrit  # noqa: E402

__all__ = ["chdtrc", "chdtri", "fdtrc", "ndtr", "ndtri", "stdtr", "stdtrit"]
