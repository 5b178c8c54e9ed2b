"""The benchmarks' CPU accounting from Linux /proc: a process's, its descendants', PostgreSQL's."""

from __future__ import annotations

import os
from pathlib import Path


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a process; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_tree(pid: int) -> list[int]:
    """The process and all its descendants."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        for children in Path(f"/proc/{current}/task").glob("*/children"):
            try:
                pending += [int(child) for child in children.read_text().split()]
            except OSError:
                pass
    return found


def named_processes(name: str) -> list[int]:
    """Every process whose command name is `name` (PostgreSQL's backends: "postgres")."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == name:
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def cpu_of(pids: list[int]) -> float:
    return sum(process_cpu(pid) for pid in pids)
