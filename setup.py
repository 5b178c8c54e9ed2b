"""The one compiled module; everything else is in pyproject.toml.

analysis/_text.c holds the worker's loops over answer text: counting an answer's words,
normalizing it for its fingerprint, and the answers' word 1-2-gram cosines. It is the only
implementation of that work (its Python mirror is the tests' oracle), so the build needs a C
compiler: `make install` installs one when it is missing.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("bias_audit.analysis._text", ["analysis/_text.c"])])
