"""The two compiled modules: everything else is in pyproject.toml.

analysis/_text.c holds the worker's loops over answer text: counting an answer's words,
normalizing it for its fingerprint, and the answers' word 1-2-gram cosines (a third of its CPU in
numpy). analysis/_audit.c is the per-session audit of a batch (numpy's per-call overhead on a
council's 5 x 5 scores was most of its cost). `optional=True`: with no C compiler the install
still succeeds and analysis/observations.py, analysis/response_traits.py and
analysis/session_audit.py compute the same numbers in Python and numpy."""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("bias_audit.analysis._text", ["analysis/_text.c"], optional=True),
    Extension("bias_audit.analysis._audit", ["analysis/_audit.c"], optional=True),
])
