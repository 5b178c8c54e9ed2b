"""Print constraints pinning every direct runtime dependency at the lowest version pyproject.toml allows
(`make test-lowest` installs them): the declared lower bounds are then versions the tests ran on."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent


def lowest(requirement: Requirement) -> str:
    bounds = [spec.version for spec in requirement.specifier if spec.operator in (">=", "==", "~=")]
    if not bounds:
        sys.exit(f"{requirement.name} has no lower bound in pyproject.toml: give it one")
    return f"{requirement.name}=={bounds[0]}"  # a constraint: the extras come with the install


def main() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for line in project["dependencies"]:
        print(lowest(Requirement(line)))


if __name__ == "__main__":
    main()
