"""What the OpenTelemetry evaluation events cost the worker, side by side: one Redis worker drains
the same backlog of council sessions with BIAS_AUDIT_OTLP_ENDPOINT unset, pointed at a running
OTLP/HTTP receiver, and pointed at a port where nothing listens (a collector that is down).

    .venv/bin/python bench/telemetry.py [--sessions 10000] [--rounds 3]

Rounds alternate the three settings (the machine's speed drifts); the table shows the median
rate and worker CPU per session, the ratio to telemetry off, the results published (none lost)
and the log records the receiver got."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import redis
from rich.table import Table
from run import ROOT, WORKER_BATCH, _process_cpu, _publish, _start_worker, console, kb_sessions  # this folder

sys.path.insert(0, str(ROOT))
from bias_audit.worker.embedded_redis import EmbeddedRedis, free_port
from tests.otlp_receiver import OtlpReceiver


def one_run(bodies: list[bytes], endpoint: str | None) -> tuple[float, float, int]:
    """(sessions/s, worker CPU us/session, results) draining `bodies` once."""
    count = len(bodies)
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(Path(tmp) / "redis", persist=False) as server:
        client = redis.Redis.from_url(server.url)
        _publish(client, bodies)
        settings = {"batch_size": WORKER_BATCH, **({"otlp_endpoint": endpoint} if endpoint else {})}
        worker = _start_worker(server.url, Path(tmp), "bench", **settings)
        while client.xlen("bias.audit.stream") == 0:
            time.sleep(0.005)
        started, first, cpu = time.perf_counter(), client.xlen("bias.audit.stream"), _process_cpu(worker.pid)
        deadline = time.monotonic() + 600
        while client.xlen("bias.audit.stream") < count and time.monotonic() < deadline:
            time.sleep(0.01)
        elapsed, used = time.perf_counter() - started, _process_cpu(worker.pid) - cpu
        results = client.xlen("bias.audit.stream")
        worker.terminate()
        worker.wait(timeout=60)
    done = results - first
    return done / elapsed, used / done * 1e6, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    bodies = [json.dumps(s).encode() for s in kb_sessions(options.sessions)]
    receiver = OtlpReceiver()
    settings = {"off": None, "collector up": receiver.url, "collector down": f"http://127.0.0.1:{free_port()}"}
    runs: dict[str, list[tuple[float, float, int]]] = {name: [] for name in settings}
    for round_ in range(options.rounds):
        for name, endpoint in settings.items():
            runs[name].append(one_run(bodies, endpoint))
            console.print(f"round {round_ + 1} {name}: {runs[name][-1][0]:,.0f} sessions/s", style="dim")
    time.sleep(2)  # the last export's batch
    records = len(receiver.log_records())
    receiver.close()
    table = Table(
        title=f"Telemetry cost: 1 Redis worker, {options.sessions:,} 5x5 sessions, "
        f"median of {options.rounds} alternating rounds"
    )
    for column in (
        "OTLP",
        "sessions/s",
        "vs off",
        "worker CPU us/session",
        "CPU vs off",
        "results",
        "log records received",
    ):
        table.add_column(column, justify="right")
    base = statistics.median(rate for rate, _, _ in runs["off"])
    base_cpu = statistics.median(cpu for _, cpu, _ in runs["off"])
    for name, values in runs.items():
        rate, cpu = statistics.median(r for r, _, _ in values), statistics.median(c for _, c, _ in values)
        table.add_row(
            name,
            f"{rate:,.0f}",
            f"{rate / base:.3f}",
            f"{cpu:,.0f}",
            f"{cpu / base_cpu:.3f}",
            f"{min(n for _, _, n in values):,} of {options.sessions:,}",
            f"{records:,}" if name == "collector up" else "-",
        )
    console.print(table)


if __name__ == "__main__":
    main()
