"""Compile the package to bytecode before timing whole processes, as installing the wheel does.

With PYTHONDONTWRITEBYTECODE set (it is on these machines) an editable install never writes
its .pyc files, so every start would compile each imported module from source: ~0.5-1 s of a
`bias-audit report`, which a user of the installed wheel never pays. The reference is installed
from a wheel, with its bytecode."""

from __future__ import annotations

import compileall
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def compile_package() -> None:
    """Every folder pyproject.toml maps into the package (the same list the wheel ships)."""
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    for folder in sorted(set(mapping.values())):
        compileall.compile_dir(ROOT / folder, quiet=1)
