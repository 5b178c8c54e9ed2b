"""The one compiled module: everything else is in pyproject.toml.

analysis/_cosines.c computes the answers' word 1-2-gram cosines on the worker's hot path (a
third of its CPU in numpy). `optional=True`: with no C compiler the install still succeeds and
analysis/response_traits.py computes the same numbers with numpy."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("bias_audit.analysis._cosines", ["analysis/_cosines.c"], optional=True)])
