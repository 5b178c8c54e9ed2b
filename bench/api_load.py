"""The audit API under load: GraphQL list queries and /analyze-bias against `bias-audit serve`.

    python bench/api_load.py                       # 100,000 audits; this checkout's serve, its defaults
    python bench/api_load.py --python /tmp/before/.venv/bin/python --python .venv/bin/python --rounds 3

An embedded PostgreSQL gets AUDITS llm_interaction_audit rows (real audits of generated responses,
copied under new ids, tenants and times, written with the store's own COPY), one database per
interpreter, migrated by that interpreter's own `bias-audit setup` (a checkout is measured on its
own schema). Then, for each round and each interpreter in turn (alternated), one `bias-audit serve`
(its defaults, or `--workers N`) answers three loads, measured at the client per request:

- open loop: GraphQL list queries (a reviewer's first page of flagged items with totalCount, one
  model, one bias type, the design document's list) sent at `--rate` per second for `--seconds`,
  each on its schedule whether or not the ones before were answered; latency from the scheduled
  moment, so a server that falls behind is charged for the wait (no coordinated omission);
- burst: `--burst` concurrent list queries at once, `--waves` times;
- /analyze-bias at `--analyze-rate` per second, open loop, each a new audit_id;
- cpu (`--loads cpu`): `--serial` list queries, as many review-queue pages, then as many
  /analyze-bias, one at a time: the CPU a request costs `serve` (its processes and its embedded
  Redis) and PostgreSQL (its processes), from /proc.

A request that fails to connect or is cut (a dropped connection) counts as an error.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import jwt
from percentiles import percentile
from process_cpu import cpu_of, named_processes, process_tree
from rich.console import Console
from rich.table import Table

SECRET = "bench-secret-of-at-least-thirty-two-bytes!!"
TENANTS = [f"tenant-{i}" for i in range(10)]
QUERIES = [
    (
        "flagged, first page",
        "{ c: llmInteractionAuditConnection(first: 50, filter: {biasDetected: true}) "
        "{ totalCount pageInfo { endCursor } edges { node { id biasType biasConfidenceScore llmModel } } } }",
    ),
    (
        "one model",
        '{ c: llmInteractionAuditConnection(first: 50, filter: {llmModel: "gpt-4o", humanReviewed: false}) '
        "{ totalCount edges { node { id biasType } } } }",
    ),
    (
        "one bias type",
        '{ c: llmInteractionAuditConnection(first: 50, filter: {biasType: "gendered_language"}) '
        "{ totalCount edges { node { id biasScore } } } }",
    ),
    (
        "design schema list",
        "{ llmInteractionAudits(filter: {biasDetected: true}, pagination: {limit: 50, offset: 100}) "
        "{ id llmModel biasType } }",
    ),
]


# a reviewer's next page of the review queue: unreviewed items in the order of their key's hash
REVIEW_QUEUE = "{ reviewQueue(limit: 50) { id biasType biasConfidenceScore } }"


def templates() -> list[dict]:
    """The audited records of 500 generated responses, through the response consumer."""
    from bias_audit.consumers.envelope import Delivery
    from bias_audit.consumers.responses import ResponseProcessor
    from bias_audit.lexicons.load import shipped_lexicons
    from bias_audit.lexicons.sentiment import vader_scorer
    from bias_audit.state.memory_window import MemoryWindow
    from bias_audit.storage.jsonl_store import JsonlRecordStore, read_records
    from bias_audit.worker.response_samples import generate_responses

    with tempfile.TemporaryDirectory() as tmp:
        files = JsonlRecordStore(Path(tmp), "interactions")
        processor = ResponseProcessor(
            window=MemoryWindow(), store=files, lexicons=shipped_lexicons(), sentiment=vader_scorer()
        )
        events = generate_responses(500, seed=31)
        asyncio.run(
            processor.process([Delivery(str(i), json.dumps(e).encode(), "llm.responses") for i, e in enumerate(events)])
        )
        files.close()
        return list(read_records([files.path]))


def fill(url: str, audits: int) -> None:
    """`audits` rows: the templates copied with new ids, tenants and times (one month), through the
    interaction store's COPY; then VACUUM ANALYZE, as autovacuum leaves a loaded table, and a
    checkpoint."""
    import psycopg

    from bias_audit.storage.postgres import PostgresInteractionStore, interaction_row

    rows = templates()
    store = PostgresInteractionStore(url)
    start = datetime(2026, 10, 1, tzinfo=timezone.utc)
    batch = []
    for number in range(audits):
        record = dict(rows[number % len(rows)])
        record["audit_id"] = f"load-{number}"
        record["tenant_id"] = TENANTS[number % len(TENANTS)]
        record["timestamp"] = (start + timedelta(seconds=number * 26)).isoformat().replace("+00:00", "Z")
        batch.append(interaction_row(record))
        if len(batch) == 5_000:
            store.write(batch)
            batch = []
    if batch:
        store.write(batch)
    store.close()
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("VACUUM ANALYZE")
        # the fill's WAL would otherwise be checkpointed during a measurement: a stall of every
        # commit for a few hundred ms, at a moment that differs from run to run
        connection.execute("CHECKPOINT")


def database(server_url: str, name: str) -> str:
    import re

    import psycopg

    with psycopg.connect(server_url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return re.sub(r"(postgresql://[^/]*/)[^?]*", lambda m: m.group(1) + name, server_url, count=1)


def spawn(python: str, store: str, data_dir: str, workers: int | None) -> tuple[subprocess.Popen, str]:
    """`bias-audit serve` of the interpreter's checkout on a free port, once /healthz answers."""
    import httpx

    from tests.services import free_port

    port = free_port()
    extra = [] if workers is None else ["--workers", str(workers)]
    env = {
        **os.environ,
        "BIAS_AUDIT_JWT_SECRET": SECRET,
        "BIAS_AUDIT_LOG_LEVEL": "WARNING",
        "BIAS_AUDIT_DATA_DIR": data_dir,
    }
    process = subprocess.Popen(
        [python, "-m", "bias_audit", "serve", "--port", str(port), "--store", store, *extra],
        env=env,
        cwd=data_dir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return process, url
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"{python} -m bias_audit serve did not start")


def tokens(role: str) -> list[str]:
    return [
        jwt.encode(
            {"sub": f"{role}-{t}", "tenant_id": t, "roles": [role], "exp": int(time.time()) + 3600},
            SECRET,
            algorithm="HS256",
        )
        for t in TENANTS
    ]


Result = tuple[str, float, bool]  # (what, ms, answered well)


async def _send(client, url: str, body: dict, token: str, what: str, since: float) -> Result:
    import aiohttp

    try:
        async with client.post(url, json=body, headers={"Authorization": "Bearer " + token}) as reply:
            answer = await reply.json()
            ok = reply.status == 200 and "errors" not in answer
    except (aiohttp.ClientError, asyncio.TimeoutError):
        ok = False  # refused, cut or timed out: a dropped request
    return what, (time.perf_counter() - since) * 1000, ok


async def open_loop(client, base: str, rate: float, seconds: float, request) -> list[Result]:
    """`request(i)` -> (path, body, token, what), sent at i / rate seconds from the start."""
    started = time.perf_counter()
    pending = []
    for index in range(int(rate * seconds)):
        moment = started + index / rate
        await asyncio.sleep(max(0.0, moment - time.perf_counter()))
        path, body, token, what = request(index)
        pending.append(asyncio.create_task(_send(client, base + path, body, token, what, moment)))
    return list(await asyncio.gather(*pending))


async def burst(client, base: str, concurrent: int, waves: int, readers: list[str]) -> list[Result]:
    results: list[Result] = []
    for _ in range(waves):
        began = time.perf_counter()
        results += await asyncio.gather(
            *(
                _send(
                    client,
                    base + "/graphql",
                    {"query": QUERIES[i % len(QUERIES)][1]},
                    readers[i % len(readers)],
                    QUERIES[i % len(QUERIES)][0],
                    began,
                )
                for i in range(concurrent)
            )
        )
    return results


def measure(base: str, pid: int, args, events: list[dict]) -> tuple[dict[str, list[Result]], dict[str, tuple]]:
    """The loads' results, and for the cpu load (serve's ms, PostgreSQL's ms, wall ms) a request."""
    import aiohttp

    readers, senders = tokens("reviewer"), tokens("service")
    serial = iter(range(10**9))

    def list_query(index: int):
        name, query = QUERIES[index % len(QUERIES)]
        return "/graphql", {"query": query}, readers[index % len(readers)], name

    def review_queue(index: int):
        return "/graphql", {"query": REVIEW_QUEUE}, readers[index % len(readers)], "review queue"

    def analyze(index: int):
        event = dict(events[index % len(events)])
        event["audit_id"] = f"bench-{os.getpid()}-{time.time_ns()}-{next(serial)}"
        event["tenant_id"] = TENANTS[index % len(TENANTS)]
        return "/analyze-bias", event, senders[index % len(senders)], "analyze-bias"

    async def run() -> tuple[dict[str, list[Result]], dict[str, tuple]]:
        # aiohttp: httpx's async client spent a core of its own on 200 connections; keep-alive
        # shorter than the server's 5 s, so the client never reuses a connection the server closes
        connector = aiohttp.TCPConnector(limit=1000, keepalive_timeout=3.0)
        async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as client:
            await open_loop(client, base, 20, 1, list_query)  # warm: connections, pools, caches
            await open_loop(client, base, 20, 1, analyze)
            measured = {}
            if "lists" in args.loads:
                name = f"GraphQL lists, open loop {args.rate:g}/s"
                measured[name] = await open_loop(client, base, args.rate, args.seconds, list_query)
            if "burst" in args.loads:
                name = f"GraphQL lists, {args.burst} at once x {args.waves}"
                measured[name] = await burst(client, base, args.burst, args.waves, readers)
            if "analyze" in args.loads:
                name = f"/analyze-bias, open loop {args.analyze_rate:g}/s"
                measured[name] = await open_loop(client, base, args.analyze_rate, args.seconds, analyze)
            spent = {}
            if "cpu" in args.loads:
                kinds = (
                    ("GraphQL list", list_query),
                    ("GraphQL review queue", review_queue),
                    ("/analyze-bias", analyze),
                )
                for name, request in kinds:
                    serve, postgres = process_tree(pid), named_processes("postgres")
                    before = cpu_of(serve), cpu_of(postgres), time.perf_counter()
                    for index in range(args.serial):
                        path, body, token, what = request(index)
                        await _send(client, base + path, body, token, what, time.perf_counter())
                    after = cpu_of(serve), cpu_of(postgres), time.perf_counter()
                    spent[name] = tuple((b - a) / args.serial * 1000 for a, b in zip(before, after))
            return measured, spent

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--audits", type=int, default=100_000)
    parser.add_argument("--python", action="append", help="the interpreter whose checkout serves (repeatable)")
    parser.add_argument("--workers", type=int, help="serve --workers N (default: serve's own default)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds, each interpreter in turn")
    parser.add_argument("--rate", type=float, default=150.0, help="GraphQL list queries a second")
    parser.add_argument("--analyze-rate", type=float, default=100.0, help="/analyze-bias requests a second")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--burst", type=int, default=200)
    parser.add_argument("--waves", type=int, default=3)
    parser.add_argument("--serial", type=int, default=600, help="requests of each kind the cpu load sends")
    parser.add_argument(
        "--loads", default="lists,burst,analyze", help="which loads, comma-separated (lists, burst, analyze, cpu)"
    )
    args = parser.parse_args()
    pythons = [os.path.abspath(p) for p in args.python or [sys.executable]]  # serve runs in a data folder

    from bias_audit.storage.embedded_postgres import EmbeddedPostgres
    from bias_audit.worker.response_samples import generate_responses

    events = generate_responses(500, seed=7)
    for event in events:
        event.pop("original_query", None)
    results: dict[tuple[str, str], list[Result]] = {}
    costs: dict[tuple[str, str], list[tuple]] = {}
    console = Console(width=150)
    with tempfile.TemporaryDirectory() as tmp, EmbeddedPostgres(Path(tmp) / "pg") as server:
        stores = {}
        for number, python in enumerate(pythons):
            stores[python] = database(server.url, f"bench_{number}")
            subprocess.run(
                [python, "-m", "bias_audit", "setup", "--store", stores[python]],
                check=True,
                capture_output=True,
                cwd=tmp,
            )
            began = time.perf_counter()
            fill(stores[python], args.audits)
            console.print(f"{python}: {args.audits:,} audits filled in {time.perf_counter() - began:.0f} s")
        # this process's pauses would be charged to the server it measures: the fill's objects
        # leave the collector's walks
        gc.collect()
        gc.freeze()
        for round_number in range(args.rounds):
            for python in pythons:
                data = Path(tmp) / f"data-{round_number}-{pythons.index(python)}"
                data.mkdir()
                process, base = spawn(python, stores[python], str(data), args.workers)
                try:
                    measured_loads, spent = measure(base, process.pid, args, events)
                    for load, measured in measured_loads.items():
                        results.setdefault((python, load), []).extend(measured)
                    for load, figures in spent.items():
                        costs.setdefault((python, load), []).append(figures)
                finally:
                    process.terminate()
                    process.wait(timeout=60)
    table = Table(
        title=f"bias-audit serve, {args.audits:,} stored interaction audits (10 tenants), "
        f"{'its default processes' if args.workers is None else f'--workers {args.workers}'}, "
        f"{args.rounds} round(s) alternated; ms at the client"
    )
    for column in ("serve of", "load", "requests", "errors", "p50", "p90", "p99", "max"):
        table.add_column(column, justify="right")
    for (python, load), measured in results.items():
        times = sorted(ms for _, ms, _ in measured)
        table.add_row(
            python.replace(str(ROOT), "."),
            load,
            str(len(measured)),
            str(sum(1 for *_, ok in measured if not ok)),
            *(f"{percentile(times, q):,.0f}" for q in (0.5, 0.9, 0.99)),
            f"{times[-1]:,.0f}",
        )
    if results:
        console.print(table)
    if costs:
        spent = Table(title=f"one request at a time ({args.serial} of each), ms a request, each round")
        for column in ("serve of", "request", "serve's CPU", "PostgreSQL's CPU", "wall"):
            spent.add_column(column, justify="right")
        for (python, load), rounds in costs.items():
            spent.add_row(
                python.replace(str(ROOT), "."),
                load,
                *(" / ".join(f"{figures[i]:.2f}" for figures in rounds) for i in range(3)),
            )
        console.print(spent)


if __name__ == "__main__":
    main()
