"""Type-check the package as installed: mypy cannot follow setuptools' editable import finder, so
this mirrors pyproject.toml's package-dir as a tree of links under build/typecheck and runs mypy
on it (the configuration is [tool.mypy] in pyproject.toml: strict on analysis and schemas)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "build" / "typecheck"


def link_tree() -> Path:
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    shutil.rmtree(TREE, ignore_errors=True)
    for package, folder in sorted(mapping.items()):  # parents first: bias_audit before bias_audit.x
        target = TREE.joinpath(*package.split("."))
        if package == "bias_audit":
            target.mkdir(parents=True)
            for item in (ROOT / folder).iterdir():
                if item.suffix == ".py":
                    os.symlink(item, target / item.name)
        else:
            os.symlink(ROOT / folder, target, target_is_directory=True)
    return TREE


def main() -> int:
    tree = link_tree()
    # the cache lives beside the tree, which is made anew each run: a second run checks what changed
    cache = ROOT / "build" / "mypy-cache"
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(cache)]
    command += ["-p", "bias_audit"]
    return subprocess.run(command, cwd=tree, env={**os.environ, "MYPYPATH": str(tree)}).returncode


if __name__ == "__main__":
    sys.exit(main())
