"""What a flood of distinct label values costs the worker's metrics: 23,000 verdicts from one
judge against 23,000 from as many judges (each name once), through WorkerMetrics as the worker
counts them. Prints a table; the figures go in bench/RESULTS.md.

    python bench/metric_labels.py [--verdicts 23000]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rich.console import Console
from rich.table import Table

from bias_audit.consumers.envelope import Delivery
from bias_audit.consumers.outcome import Outcome
from bias_audit.schemas.results import AuditResult
from bias_audit.worker.metrics import WorkerMetrics

WINDOW = {"first_position_rate": {"estimate": 0.5}, "length_preference": {"estimate": 0.5}}


def outcomes(count: int, judges: int) -> list[Outcome]:
    delivery = Delivery(delivery_id="1", body=b"{}", source_topic="judge.verdicts")
    return [
        Outcome(
            delivery,
            result=AuditResult(
                audit_id=f"v{i}",
                source="judge.verdict",
                tenant_id="acme",
                trace_id="t",
                timestamp="2026-11-26T08:00:00Z",
                event_timestamp="2026-11-26T08:00:00Z",
                bias_detected=True,
                bias_type=["judge_position_bias"],
                bias_score={},
                bias_confidence_score=0.5,
                overall_bias_risk="high",
                judge={"model": f"judge-{i % judges}", "window": WINDOW},
            ),
        )
        for i in range(count)
    ]


def measure(count: int, judges: int) -> tuple[int, int, float]:
    """(judge_rate series, scrape bytes, us of metrics work a verdict)."""
    metrics = WorkerMetrics("redis")
    batch = outcomes(count, judges)
    started = time.perf_counter()
    for start in range(0, count, 100):
        metrics.completed("judge.verdicts", batch[start : start + 100], time.perf_counter())
    elapsed = time.perf_counter() - started
    scrape = metrics.exposition().decode()
    series = sum(line.startswith("bias_audit_judge_rate{") for line in scrape.splitlines())
    return series, len(scrape), elapsed / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verdicts", type=int, default=23_000)
    count = parser.parse_args().verdicts
    table = Table(title=f"WorkerMetrics over {count:,} judge verdicts")
    for column in ("judges", "judge_rate series", "scrape", "us a verdict"):
        table.add_column(column, justify="right")
    for judges in (1, count):
        series, size, cost = measure(count, judges)
        table.add_row(f"{judges:,}", f"{series:,}", f"{size / 1024:.1f} KiB", f"{cost:.1f}")
    Console().print(table)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
