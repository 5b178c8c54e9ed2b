"""scipy.special's distribution functions, imported without paying for what the analysis never calls.

scipy.special's package import (scipy 1.15+) builds an array-API layer over its ~300 functions
(~35 ms) and copies numpy's namespace attribute by attribute, which imports numpy.f2py (and
through it charset_normalizer), numpy.testing, numpy.ma and numpy.polynomial: ~60-90 ms of a short
command's start-up. The tails are plain ufuncs of its compiled `_ufuncs` module, so that module is
loaded alone, under a stand-in parent package that is removed at once: a later `import
scipy.special` (by a caller, or another library) runs the real package, which takes the same
`_ufuncs` module and its same functions. If that fails (another scipy layout), the package is
imported as usual. numpy's unused modules are also registered as lazy modules (the standard
library's importlib.util.LazyLoader), for whoever imports the real package: each one's import
waits for the first use of one of its attributes. Every analysis module takes its tails from here.
"""

from __future__ import annotations

import importlib.util
import sys
import types

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


def _ufuncs() -> types.ModuleType:
    """scipy.special._ufuncs, without running scipy.special's package import when it has not run."""
    if "scipy.special" in sys.modules:
        return sys.modules["scipy.special"]
    spec = importlib.util.find_spec("scipy.special")
    stand_in = types.ModuleType("scipy.special")
    stand_in.__path__ = list(spec.submodule_search_locations or []) if spec else []
    sys.modules["scipy.special"] = stand_in
    try:
        from scipy.special import _ufuncs

        module: types.ModuleType = _ufuncs
        return module
    except ImportError:
        pass
    finally:  # the real package, for anyone who imports it later (scipy.special was never set on scipy)
        if sys.modules.get("scipy.special") is stand_in:
            del sys.modules["scipy.special"]
    import scipy.special

    package: types.ModuleType = scipy.special
    return package


for _name in DEFERRED:
    _defer(_name)

_tails = _ufuncs()
chdtrc, chdtri, fdtrc, ndtr, ndtri, stdtr, stdtrit = (
    _tails.chdtrc, _tails.chdtri, _tails.fdtrc, _tails.ndtr, _tails.ndtri, _tails.stdtr, _tails.stdtrit)

__all__ = ["chdtrc", "chdtri", "fdtrc", "ndtr", "ndtri", "stdtr", "stdtrit"]
