"""`bias-audit report --store` (PostgreSQL) against llm-council-core's report on the same records.

    python bench/store.py FILE [N]  # e.g. the 10,000-session file bench/report.py --dir DIR wrote

The records are imported into an embedded PostgreSQL (`bias-audit import`), then each report runs
as a fresh process over a window of the newest N sessions (default 10,000: all of that file),
timed from the outside: ours from the store, the reference from the file, as bench/report.py
runs it (max_sessions=N). Prints a table; record it in bench/RESULTS.md.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rich.console import Console
from rich.table import Table

from bench.bytecode import compile_package
from bench.report import REFERENCE


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        command, check=True, stdout=subprocess.DEVNULL, cwd=ROOT, env={**os.environ, "PYTHONWARNINGS": "ignore"}
    )
    return time.perf_counter() - started


def main(path: Path, window: int = 10_000, rounds: int = 3) -> None:
    from bias_audit.storage.embedded_postgres import EmbeddedPostgres
    from bias_audit.storage.postgres import apply_migrations

    compile_package()  # as the installed wheel has it
    with tempfile.TemporaryDirectory() as tmp:
        database = EmbeddedPostgres(Path(tmp) / "pg").start()
        try:
            apply_migrations(database.url)
            imported = timed([sys.executable, "-m", "bias_audit", "import", str(path), "--store", database.url])
            ours = [
                timed(
                    [
                        sys.executable,
                        "-m",
                        "bias_audit",
                        "report",
                        "--store",
                        database.url,
                        "--sessions",
                        str(window),
                        "--days",
                        "0",
                        "--format",
                        "json",
                    ]
                )
                for _ in range(rounds)
            ]
            reference = timed([sys.executable, "-c", REFERENCE, str(path), str(window)])
        finally:
            database.stop()
    best = min(ours)
    table = Table(title=f"Report over the newest {window:,} sessions of {path.name}, whole processes (s)")
    for column in ("what", "seconds", "vs reference"):
        table.add_column(column, justify="right")
    table.add_row("import into PostgreSQL (once)", f"{imported:.2f}", "")
    table.add_row(f"bias-audit report --store (best of {rounds})", f"{best:.2f}", f"{reference / best:.1f}x")
    table.add_row("llm-council-core run_aggregated_bias_audit", f"{reference:.2f}", "1.0x")
    Console().print(table)


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3) or not Path(sys.argv[1]).exists():
        raise SystemExit(__doc__)
    main(Path(sys.argv[1]), *(int(a) for a in sys.argv[2:]))
