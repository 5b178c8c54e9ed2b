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
