"""What reading a report imports: the distribution tails without numpy's unused modules, and
none of the per-event audit or result models (each import is start-up time of `bias-audit
report`, issue 13)."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = """
import sys
import {module}
loaded = [name for name in {watched!r} if name in sys.modules]
lazy = type(sys.modules.get("numpy.f2py")).__name__
print(",".join(loaded) + "|" + lazy)
"""


def probe(module: str, watched: tuple[str, ...], env: dict[str, str] | None = None) -> tuple[list[str], str]:
    done = subprocess.run([sys.executable, "-c", PROBE.format(module=module, watched=watched)], capture_output=True,
                          text=True, timeout=60, check=True, env={**os.environ, **(env or {})})
    loaded, lazy = done.stdout.strip().split("|")
    return [name for name in loaded.split(",") if name], lazy


def test_the_tails_leave_numpys_unused_modules_unimported():
    loaded, lazy = probe("bias_audit.analysis.special", ("charset_normalizer", "numpy.f2py.crackfortran",
                                                         "numpy.testing._private.utils", "numpy.ma.core"))
    assert loaded == []
    assert lazy == "_LazyModule"  # registered, not executed


def test_a_deferred_module_still_works_when_used():
    done = subprocess.run([sys.executable, "-c", "import bias_audit.analysis.special\n"
                           "import numpy as np\nnp.testing.assert_allclose(np.ma.masked_array([1.0, 2.0]).sum(), 3.0)\n"
                           "from numpy.polynomial import Polynomial\nprint(Polynomial([1, 2])(3))"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "7.0"


def test_reading_a_report_builds_no_audit_or_result_models():
    loaded, _ = probe("bias_audit.reports.build, bias_audit.storage.report_reader",
                      ("bias_audit.schemas.results", "bias_audit.analysis.session_audit", "bias_audit.schemas.events"))
    assert loaded == []


def test_the_command_line_keeps_openblas_to_one_thread_unless_told():
    code = "import os, bias_audit.worker.cli; print(os.environ['OPENBLAS_NUM_THREADS'])"
    environment = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    default = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=environment)
    told = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**environment, "OPENBLAS_NUM_THREADS": "2"})
    assert (default.stdout.strip(), told.stdout.strip()) == ("1", "2")


def test_the_tails_load_without_scipy_specials_package_and_leave_it_importable():
    """The tails come from scipy.special's compiled ufuncs alone (no array-API layer, ~35 ms);
    the package imported afterwards is the real one, with the very same functions."""
    code = ("import sys\nfrom bias_audit.analysis import special\n"
            "print(sorted(m for m in ('scipy.special', 'scipy.special._support_alternative_backends') if m in sys.modules))\n"
            "import scipy\ngamma = scipy.special.gamma  # scipy's lazy attribute: the package, not a stand-in\n"
            "import scipy.special, scipy.stats\n"
            "print(scipy.special.stdtr is special.stdtr, scipy.special.fdtrc is special.fdtrc, gamma(5.0),"
            " round(float(scipy.stats.t.sf(2.0, 3)), 6), scipy.special.__file__.endswith('__init__.py'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["[]", "True True 24.0 0.069663 True"]


def test_the_tails_are_scipy_specials_own_when_its_package_came_first():
    code = ("import scipy.special\nfrom bias_audit.analysis import special\n"
            "print(special.stdtr is scipy.special.stdtr, special.chdtri is scipy.special.chdtri)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, "True True"), done.stderr
