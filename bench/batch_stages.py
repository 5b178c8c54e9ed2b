"""Where a small batch's time goes: the council processor in this process on a real Redis
window and alert state (JSONL records), batches of N sessions after a full window, wall time
per batch of each stage. What a lightly loaded worker pays per batch, without the transport.

    python bench/batch_stages.py          # batches of 1 and 3
    python bench/batch_stages.py 1 10 100

Below the batch: Redis's own time per command (INFO commandstats, ms per batch), what the
worker waits for inside its scripts and calls.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from redis.asyncio import Redis
from rich.console import Console
from rich.table import Table
from run import kb_sessions

import bias_audit.consumers.council as council
from bias_audit.consumers.envelope import Delivery
from bias_audit.gc_tuning import collector_paused, tune_gc
from bias_audit.state.alert_state import RedisAlertState
from bias_audit.state.redis_window import RedisWindow
from bias_audit.storage.jsonl_store import JsonlRecordStore
from bias_audit.worker.composition import council_processor
from bias_audit.worker.embedded_redis import EmbeddedRedis
from bias_audit.worker.logging_setup import configure_logging
from bias_audit.worker.settings import Settings

WINDOW_STAGE = "the window's script and replay"
SESSIONS, WARM = 1500, 300  # the first WARM fill the window and are not timed


def timed(owner, name: str, label: str, spent: Counter) -> None:
    """Wrap owner.name (a function or a coroutine function) to add its wall time to spent[label]."""
    original = getattr(owner, name)
    if asyncio.iscoroutinefunction(original):

        async def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return await original(*args, **kwargs)
            finally:
                spent[label] += time.perf_counter() - start
    else:

        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent[label] += time.perf_counter() - start

    setattr(owner, name, wrapper)


async def one_size(url: str, directory: str, bodies: list[bytes], batch: int) -> tuple[float, Counter]:
    settings = Settings(data_dir=directory)
    client = Redis.from_url(url)
    await client.flushall()
    window = RedisWindow(client, settings.window_policy)
    processor = council_processor(
        settings,
        window,
        JsonlRecordStore(Path(directory), f"records-{batch}"),
        RedisAlertState(client, settings.alert_limits),
    )
    spent: Counter = Counter()
    for owner, name, label in [
        (window, "digests", "read the window's digests"),
        (window, "add_many", WINDOW_STAGE),
        (window, "_call", "  of which the script's arguments"),
        (window, "_replay", "  of which the replay"),
        (processor, "parse", "parse and validate"),
        (council, "audit_batch", "the audit"),
        (processor, "_prepare", "records, traits, contribution"),
        (processor.once, "append", "append records, mark"),
        (processor.levels, "values", "anomaly levels"),
        (council, "window_baseline", "anomaly baseline"),
        (council, "session_signals", "signals"),
        (processor.alert_state, "apply", "the alert-state script"),
        (processor, "_result", "the result"),
    ]:
        timed(owner, name, label, spent)
    deliveries = [Delivery(f"{i}-0", body, "council.sessions") for i, body in enumerate(bodies)]
    total = 0.0
    for start in range(0, len(deliveries), batch):
        if start == WARM:
            spent.clear()
            total = 0.0
            await client.config_resetstat()
        began = time.perf_counter()
        with collector_paused():
            outcomes = await processor.process(deliveries[start : start + batch])
            await processor.published(outcomes)
        total += time.perf_counter() - began
    # Redis's own time per command (INFO commandstats), what the worker waits for in its scripts
    for command, stats in (await client.info("commandstats")).items():
        spent[f"  Redis: {command.removeprefix('cmdstat_')}"] = stats["usec"] / 1e6
    await client.aclose()
    batches = (len(deliveries) - WARM) / batch
    return total / batches, Counter({k: v / batches for k, v in spent.items()})


def main(sizes: list[int]) -> None:
    configure_logging("ERROR")
    bodies = [json.dumps(s).encode() for s in kb_sessions(SESSIONS)]
    tune_gc()
    table = Table(title=f"Council processor on a real Redis, ms per batch (after {WARM} sessions), by stage")
    table.add_column("stage")
    results = []
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(Path(tmp) / "redis", persist=False) as server:
        for size in sizes:
            results.append(asyncio.run(one_size(server.url, tmp, bodies, size)))
            table.add_column(f"batches of {size}", justify="right")
    parents = sorted(
        {k for _, spent in results for k in spent if not k.startswith("  ")}, key=lambda k: -results[0][1][k]
    )
    # "  of which" rows under the window's stage, Redis's own time per command last
    children = sorted({k for _, spent in results for k in spent if k.startswith("  of which")})
    redis_rows = sorted(
        {k for _, spent in results for k in spent if k.startswith("  Redis")}, key=lambda k: -results[0][1][k]
    )
    stages = [row for k in parents for row in ([k, *children] if k == WINDOW_STAGE else [k])]
    for stage in stages:
        table.add_row(stage, *(f"{spent[stage] * 1e3:.2f}" for _, spent in results))
    table.add_row("[b]the batch[/b]", *(f"[b]{total * 1e3:.2f}[/b]" for total, _ in results))
    for stage in redis_rows:
        table.add_row(stage, *(f"{spent[stage] * 1e3:.2f}" for _, spent in results))
    Console().print(table)


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if any(a in ("-h", "--help") for a in arguments):
        print(__doc__.strip())
        sys.exit(0)
    if not all(a.isdigit() and int(a) > 0 for a in arguments):
        print("batch sizes are positive integers; see --help", file=sys.stderr)
        sys.exit(2)
    main([int(a) for a in arguments] or [1, 3])
