"""Instructions the worker's process spends per council session: a measure that does not drift
with the machine's speed (wall and CPU time here moved by up to 1.5x within an hour).

The council processor and the Redis Streams outbox run in this process on a real Redis and a
real PostgreSQL store (embedded, started here), batches of 100 5x5 sessions; valgrind's
cachegrind counts the instructions of a run of WARM sessions and of WARM + N, and the
difference over N is the cost per session (start-up and warm-up cancel). Redis's and
PostgreSQL's own work is in their processes, not counted (see `bench/run.py throughput`'s Redis
CPU column). Needs valgrind (Debian: `apt-get install valgrind`); ~2 minutes for N = 600.

    python bench/instructions.py          # N = 600
    python bench/instructions.py 1000
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

WARM, BATCH = 300, 100


def run_sessions(redis_url: str, store_url: str, extra: int) -> None:
    """What valgrind runs: WARM + extra sessions through the processor and the outbox."""
    from redis.asyncio import Redis
    from run import kb_sessions  # this folder is on the path: run as a script

    from bias_audit.consumers.envelope import Delivery
    from bias_audit.gc_tuning import collector_paused, tune_gc
    from bias_audit.producers.redis_streams import RedisStreamsOutbox
    from bias_audit.state.alert_state import RedisAlertState
    from bias_audit.state.redis_window import RedisWindow
    from bias_audit.storage.postgres import PostgresRecordStore
    from bias_audit.worker.composition import council_processor
    from bias_audit.worker.logging_setup import configure_logging
    from bias_audit.worker.settings import Settings

    bodies = [json.dumps(s).encode() for s in kb_sessions(WARM + extra)]

    async def main(directory: str) -> None:
        import psycopg

        settings = Settings(data_dir=directory)
        client = Redis.from_url(redis_url)
        await client.flushall()
        with psycopg.connect(store_url, autocommit=True) as connection:
            connection.execute("TRUNCATE council_session_audit")
        processor = council_processor(
            settings,
            RedisWindow(client, settings.window_policy),
            PostgresRecordStore(store_url),
            RedisAlertState(client, settings.alert_limits),
        )
        outbox = RedisStreamsOutbox(client)
        deliveries = [Delivery(f"{i}-0", body, "council.sessions") for i, body in enumerate(bodies)]
        for start in range(0, len(deliveries), BATCH):
            with collector_paused():
                outcomes = await processor.process(deliveries[start : start + BATCH])
                await processor.published(outcomes)
                await outbox.complete(outcomes, stream="council.sessions", group="bench")
        await client.aclose()

    configure_logging("ERROR")
    tune_gc()
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(tmp))


def instructions(redis_url: str, store_url: str, extra: int) -> int:
    command = [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
        sys.executable,
        __file__,
        "--run",
        redis_url,
        store_url,
        str(extra),
    ]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode != 0 or found is None:
        sys.exit(f"valgrind failed: {done.stderr.strip().splitlines()[-1:]}")
    return int(found.group(1).replace(",", ""))


def main(extra: int) -> None:
    from rich.console import Console
    from rich.table import Table

    from bias_audit.storage.embedded_postgres import EmbeddedPostgres
    from bias_audit.storage.postgres import apply_migrations
    from bias_audit.worker.embedded_redis import EmbeddedRedis

    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        sys.exit(2)
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(Path(tmp) / "redis", persist=False) as server:
        database = EmbeddedPostgres(Path(tmp) / "pg").start()
        try:
            apply_migrations(database.url)
            base = instructions(server.url, database.url, 0)
            total = instructions(server.url, database.url, extra)
        finally:
            database.stop()
    table = Table(
        title=f"Worker instructions per 5x5 session (processor + outbox, PostgreSQL store, "
        f"real Redis; {extra} sessions after {WARM})"
    )
    for column in ("instructions/session", f"run of {WARM}", f"run of {WARM + extra}"):
        table.add_column(column, justify="right")
    table.add_row(f"{(total - base) / extra:,.0f}", f"{base:,}", f"{total:,}")
    Console().print(table)


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if arguments[:1] == ["--run"]:
        run_sessions(arguments[1], arguments[2], int(arguments[3]))
    elif any(a in ("-h", "--help") for a in arguments):
        print(__doc__.strip())
    elif len(arguments) > 1 or (arguments and not (arguments[0].isdigit() and int(arguments[0]) > 0)):
        print("one argument at most: the number of sessions to count (a positive integer); see --help", file=sys.stderr)
        sys.exit(2)
    else:
        main(int(arguments[0]) if arguments else 600)
