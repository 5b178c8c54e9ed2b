"""The audit API under load: concurrent GraphQL list queries against stored interaction audits.

    python bench/api_load.py [AUDITS] [CONCURRENT] [ROUNDS]   # defaults: 100000 200 5

An embedded PostgreSQL gets AUDITS llm_interaction_audit rows (real audits of generated responses,
copied under new ids, tenants and times, written with the store's own COPY), then one `bias-audit
serve` process answers ROUNDS waves of CONCURRENT GraphQL queries sent at once: a reviewer's first
page of flagged items (with totalCount), filtered by model or bias type, and the page after it.
Latency is measured at the client, per request. Prints a table; record it in bench/RESULTS.md.
"""

from __future__ import annotations

import asyncio
import json
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


def fill(url: str, audits: int) -> None:
    """`audits` rows: the audited records of 500 generated responses, copied with new ids,
    tenants and times (one month), through the interaction store's COPY."""
    from bias_audit.consumers.envelope import Delivery
    from bias_audit.consumers.responses import ResponseProcessor
    from bias_audit.lexicons.load import shipped_lexicons
    from bias_audit.lexicons.sentiment import vader_scorer
    from bias_audit.state.memory_window import MemoryWindow
    from bias_audit.storage.jsonl_store import JsonlRecordStore, read_records
    from bias_audit.storage.postgres import PostgresInteractionStore, interaction_row
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
        templates = list(read_records([files.path]))
    store = PostgresInteractionStore(url)
    start = datetime(2026, 10, 1, tzinfo=timezone.utc)
    batch = []
    for number in range(audits):
        record = dict(templates[number % len(templates)])
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
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:  # as autovacuum leaves a loaded table
        connection.execute("VACUUM ANALYZE")


async def wave(client, base: str, concurrent: int, tokens: list[str]) -> list[tuple[str, float, int]]:
    async def one(index: int) -> tuple[str, float, int]:
        name, query = QUERIES[index % len(QUERIES)]
        started = time.perf_counter()
        async with client.post(
            base + "/graphql", json={"query": query}, headers={"Authorization": "Bearer " + tokens[index % len(tokens)]}
        ) as reply:
            ok = reply.status == 200 and "errors" not in await reply.json()
        return name, (time.perf_counter() - started) * 1000, 1 if ok else 0

    return await asyncio.gather(*(one(i) for i in range(concurrent)))


def main(audits: int = 100_000, concurrent: int = 200, rounds: int = 5) -> None:
    from bias_audit.storage.embedded_postgres import EmbeddedPostgres
    from bias_audit.storage.postgres import apply_migrations
    from tests.services import spawn_serve

    tokens = [
        jwt.encode(
            {"sub": f"reviewer-{t}", "tenant_id": t, "roles": ["reviewer"], "exp": int(time.time()) + 3600},
            SECRET,
            algorithm="HS256",
        )
        for t in TENANTS
    ]
    with tempfile.TemporaryDirectory() as tmp, EmbeddedPostgres(Path(tmp) / "pg") as database:
        apply_migrations(database.url)
        started = time.perf_counter()
        fill(database.url, audits)
        filled = time.perf_counter() - started
        server, base = spawn_serve(
            "--store",
            database.url,
            env={"BIAS_AUDIT_JWT_SECRET": SECRET, "BIAS_AUDIT_LOG_LEVEL": "WARNING", "BIAS_AUDIT_DATA_DIR": tmp},
        )
        try:

            async def run() -> tuple[list[tuple[str, float, int]], float]:
                import aiohttp

                # aiohttp: httpx's async client spent a whole core of its own on 200 connections,
                # and the latency measured was the client's; keep-alive shorter than the server's 5 s
                connector = aiohttp.TCPConnector(limit=concurrent, keepalive_timeout=3.0)
                async with aiohttp.ClientSession(
                    connector=connector, timeout=aiohttp.ClientTimeout(total=120)
                ) as client:
                    await wave(client, base, 20, tokens)  # warm: connections, the pool, PostgreSQL's caches
                    results = []
                    begun = time.perf_counter()
                    for _ in range(rounds):
                        results += await wave(client, base, concurrent, tokens)
                    return results, time.perf_counter() - begun

            results, elapsed = asyncio.run(run())
        finally:
            server.terminate()
            server.wait(timeout=30)
    table = Table(
        title=f"{concurrent} concurrent GraphQL queries x {rounds} waves, {audits:,} stored interaction "
        f"audits (10 tenants), one serve process (ms, at the client)"
    )
    for column in ("query", "requests", "ok", "p50", "p90", "p99", "max"):
        table.add_column(column, justify="right")
    for name in [*dict.fromkeys(n for n, _ in QUERIES), "all"]:
        times = sorted(t for n, t, _ in results if name in (n, "all"))
        ok = sum(o for n, _, o in results if name in (n, "all"))
        table.add_row(
            name,
            str(len(times)),
            str(ok),
            *(f"{percentile(times, q):,.0f}" for q in (0.5, 0.9, 0.99)),
            f"{times[-1]:,.0f}",
        )
    Console().print(table)
    Console().print(f"filled {audits:,} rows in {filled:.1f} s; {len(results) / elapsed:,.0f} requests/s overall")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:4]))
