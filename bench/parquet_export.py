"""Parquet export of bias metric records: memory and size, at 100,000 and 1,000,000 records.

    .venv/bin/python bench/parquet_export.py [--records 1000000]

Records are real ones (40 sample sessions audited in process, 25 records each) repeated under new
session ids, times over 30 days and random trace ids, written as JSONL, then streamed from that file through the
production writer (storage.parquet_export.write_parquet) in a child process per size, so each
peak RSS is that export's alone. Flat memory: the peak does not grow with the count."""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from random import Random

from rich.table import Table
from run import ROOT, console  # this folder

sys.path.insert(0, str(ROOT))


def sample_records() -> list[dict]:
    """The bias metric records a worker stores for 40 sample sessions (through the real consumer)."""
    with tempfile.TemporaryDirectory() as tmp:
        events = Path(tmp) / "events.jsonl"
        from bias_audit.worker.samples import generate_sessions

        events.write_text("".join(json.dumps(s) + "\n" for s in generate_sessions(40, seed=5)))
        subprocess.run(
            [sys.executable, "-m", "bias_audit", "audit", str(events), "--store", str(Path(tmp) / "store")],
            check=True,
            capture_output=True,
            cwd=ROOT,
        )
        return [
            json.loads(line)
            for path in sorted((Path(tmp) / "store" / "records").glob("*.jsonl"))
            for line in path.read_text().splitlines()
        ]


def write_jsonl(path: Path, count: int, records: list[dict]) -> None:
    """`count` records: the samples' members, scores and lengths, under new sessions, each with
    its own time and random trace id (ids are what compresses worst)."""
    random = Random(7)
    start = datetime(2026, 10, 27, tzinfo=timezone.utc)
    step = timedelta(days=30) / count
    with path.open("w") as handle:
        for n in range(count):
            base = records[n % len(records)]
            if n % 25 == 0:  # a session's 25 records share its time and trace
                moment = (start + step * n).isoformat().replace("+00:00", "Z")
                trace = f"{random.getrandbits(128):032x}"
            handle.write(
                json.dumps({**base, "session_id": f"s{n // 25:08d}", "timestamp": moment, "trace_id": trace}) + "\n"
            )


def export_child(jsonl: str, folder: str) -> None:
    """In a child: stream the JSONL through the writer, print rows, seconds and peak RSS."""
    import orjson

    from bias_audit.storage.parquet_export import write_parquet

    def rows():
        with open(jsonl, "rb") as handle:
            for line in handle:
                yield orjson.loads(line)

    started = time.perf_counter()
    written = write_parquet(rows(), "records", Path(folder))
    elapsed = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "rows": written.rows,
                "seconds": elapsed,
                "peak_mb": peak_mb,
                "bytes": written.bytes,
                "files": len(written.files),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        export_child(*options.child)
        return
    records = sample_records()
    table = Table(title="Parquet export of bias metric records (zstd, a folder per UTC day, 50,000-row batches)")
    for column in (
        "records",
        "JSONL MB",
        "Parquet MB",
        "JSONL / Parquet",
        "files",
        "seconds",
        "records/s",
        "peak RSS MB",
    ):
        table.add_column(column, justify="right")
    for count in sorted({options.records // 10, options.records}):
        with tempfile.TemporaryDirectory() as tmp:
            jsonl = Path(tmp) / "records.jsonl"
            write_jsonl(jsonl, count, records)
            done = subprocess.run(
                [sys.executable, __file__, "--child", str(jsonl), str(Path(tmp) / "parquet")],
                check=True,
                capture_output=True,
                text=True,
                env={**os.environ},
            )
            figures = json.loads(done.stdout.splitlines()[-1])
            size = jsonl.stat().st_size
            table.add_row(
                f"{figures['rows']:,}",
                f"{size / 1e6:,.1f}",
                f"{figures['bytes'] / 1e6:,.1f}",
                f"{size / figures['bytes']:.1f}x",
                str(figures["files"]),
                f"{figures['seconds']:.1f}",
                f"{figures['rows'] / figures['seconds']:,.0f}",
                f"{figures['peak_mb']:,.0f}",
            )
    console.print(table)


if __name__ == "__main__":
    main()
