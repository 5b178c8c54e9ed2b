"""Benchmarks of the worker, the audit and the command line. Prints tables; the current figures go
in bench/RESULTS.md.

    python bench/run.py                 # all sections
    python bench/run.py audit storage   # some
    python bench/run.py --postgres throughput latency storage   # the workers write to PostgreSQL

audit      per-session audit of 5x5 sessions vs llm-council-core's run_bias_audit, side by side
cli        `bias-audit --help` (and an argument error) against a two-command typer app's `--help` and a
           bare `python -c pass`, start to exit
throughput one worker process, one local Redis, 5x5 sessions with ~1 KB answers
pipeline   the council pipeline's own CPU per session, in-process (in-memory window and alert state,
           no broker, records to a JSONL file): the worker's own cost, without Redis, PostgreSQL or
           the round trips, for comparing two commits' pipelines
verdicts   one `--consume judges` worker over a backlog of judge verdicts, per second
latency    publish-to-result latency at a fixed 200 sessions/s (Redis server clock: entry ids)
storage    stored bytes per 5x5 session, raw and gzip-compressed (--postgres: on disk in PostgreSQL,
           tables, indexes and TOAST, at 10,000 sessions)
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis
from bytecode import compile_package
from percentiles import percentile
from process_cpu import process_cpu
from rich.console import Console
from rich.table import Table

from bias_audit.analysis.observations import session_scores
from bias_audit.analysis.session_audit import audit_batch, audit_scores
from bias_audit.gc_tuning import tune_gc
from bias_audit.producers.redis_streams import wire_fields
from bias_audit.schemas.events import CouncilSessionEvent
from bias_audit.worker.embedded_redis import EmbeddedRedis
from bias_audit.worker.samples import generate_sessions
from bias_audit.worker.settings import Settings

BATCH = Settings.model_fields["batch_size"].default  # as the worker audits
WORKER_BATCH = 200  # the benched worker's batch size (throughput, pipeline)

console = Console()


def kb_sessions(count: int, seed: int = 21) -> list[dict]:
    """5x5 sessions with answers of about 1 KB (the samples' answers are 80-400 words)."""
    sessions = generate_sessions(count, seed=seed)
    for session in sessions:
        for response in session["responses"]:
            response["response"] = response["response"][:1024]
    return sessions


def bench_audit(rounds: int = 15) -> None:
    """Both implementations run in this process with the worker's GC settings (worker.gc_tuning);
    ours builds the score cells from the validated event, as the worker does."""
    from llm_council.bias_audit import derive_position_mapping, extract_scores_from_stage2, run_bias_audit

    sessions = kb_sessions(500)
    events = [CouncilSessionEvent.model_validate(s) for s in sessions]
    # The reference takes one shared order; give it each session's first reviewer's labels.
    reference_inputs = []
    for s in sessions:
        labels = s["reviews"][0]["label_to_model"]
        stage2 = [
            {"model": r["reviewer"], "parsed_ranking": {"scores": r["scores"], "ranking": r["ranking"]}}
            for r in s["reviews"]
        ]
        reference_inputs.append((s["responses"], stage2, labels))

    def ours() -> None:  # as the worker does: a batch of deliveries at a time
        for start in range(0, len(events), BATCH):
            audit_batch([session_scores(event) for event in events[start : start + BATCH]])

    def ours_one_at_a_time() -> None:
        for event in events:
            audit_scores(session_scores(event))

    def reference() -> None:
        for responses, stage2, labels in reference_inputs:
            run_bias_audit(responses, extract_scores_from_stage2(stage2, labels), derive_position_mapping(labels))

    ours_name = f"bias-audit, batches of {BATCH}"
    tune_gc()
    timings = {ours_name: [], "bias-audit, batches of 1": [], "llm-council-core 0.53.0": []}
    for _ in range(rounds):  # interleaved, one run, same sessions
        for name, fn in (
            (ours_name, ours),
            ("bias-audit, batches of 1", ours_one_at_a_time),
            ("llm-council-core 0.53.0", reference),
        ):
            start = time.perf_counter()
            fn()
            timings[name].append((time.perf_counter() - start) / len(events) * 1e6)
    table = Table(title=f"Per-session audit, 5 models x 5 reviewers, {len(events)} sessions x {rounds} rounds")
    for column in ("implementation", "median us/session", "best us/session", "speed-up"):
        table.add_column(column, justify="right")
    ref = statistics.median(timings["llm-council-core 0.53.0"])
    for name, values in timings.items():
        table.add_row(
            name, f"{statistics.median(values):.1f}", f"{min(values):.1f}", f"{ref / statistics.median(values):.2f}x"
        )
    console.print(table)


def _start_worker(url: str, data_dir: Path, name: str, **env) -> subprocess.Popen:
    environment = {
        **os.environ,
        "BIAS_AUDIT_BROKER_URL": url,
        "BIAS_AUDIT_DATA_DIR": str(data_dir),
        "BIAS_AUDIT_CONSUMER_NAME": name,
        "BIAS_AUDIT_LOG_LEVEL": "WARNING",
        "BIAS_AUDIT_STORE_URL": str(data_dir),  # JSONL unless --postgres names a store
        **{f"BIAS_AUDIT_{k.upper()}": str(v) for k, v in env.items()},
    }
    return subprocess.Popen([sys.executable, "-m", "bias_audit", "worker"], env=environment, cwd=ROOT)


def _publish(client, bodies) -> None:
    pipe = client.pipeline(transaction=False)
    for body in bodies:
        pipe.xadd("council.sessions", wire_fields(body, event_type="council.session", tenant_id="bench", trace_id=None))
    pipe.execute()


def _entry_ms(entry_id: bytes) -> int:
    return int(entry_id.split(b"-")[0])


POSTGRES = {"on": False}  # --postgres: the workers write to an embedded PostgreSQL store


@contextlib.contextmanager
def _store(tmp: str):
    """{} for JSONL records, or {"store_url": ...} of a migrated embedded PostgreSQL."""
    if not POSTGRES["on"]:
        yield {}
        return
    from bias_audit.storage.embedded_postgres import EmbeddedPostgres
    from bias_audit.storage.postgres import apply_migrations

    database = EmbeddedPostgres(Path(tmp) / "pg").start()
    try:
        apply_migrations(database.url)
        yield {"store_url": database.url}
    finally:
        database.stop()


def _redis_cpu(client) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def bench_throughput(count: int = 10_000) -> dict:
    bodies = [json.dumps(s).encode() for s in kb_sessions(count)]
    with (
        tempfile.TemporaryDirectory() as tmp,
        EmbeddedRedis(Path(tmp) / "redis", persist=False) as server,
        _store(tmp) as store,
    ):
        client = redis.Redis.from_url(server.url)
        _publish(client, bodies)  # backlog first: measures the worker, not the publisher
        worker = _start_worker(server.url, Path(tmp), "bench", batch_size=WORKER_BATCH, **store)
        while client.xlen("bias.audit.stream") == 0:
            time.sleep(0.005)
        started = time.perf_counter()
        first = client.xlen("bias.audit.stream")
        cpu_before = process_cpu(worker.pid), _redis_cpu(client)
        while client.xlen("bias.audit.stream") < count:
            time.sleep(0.01)
        elapsed = time.perf_counter() - started
        worker_cpu, redis_cpu = process_cpu(worker.pid) - cpu_before[0], _redis_cpu(client) - cpu_before[1]
        worker.terminate()
        worker.wait(timeout=30)
        record_bytes = sum(p.stat().st_size for p in (Path(tmp) / "records").glob("*.jsonl"))
    rate = (count - first) / elapsed
    where = "PostgreSQL store" if POSTGRES["on"] else "JSONL records"
    table = Table(title=f"Worker throughput: 1 process, local Redis, {where}, {count} 5x5 sessions (~1 KB answers)")
    table.add_column("sessions/s", justify="right")
    table.add_column("target", justify="right")
    # CPU per session of the worker and of Redis: steadier than the rate on a machine whose speed drifts
    table.add_column("worker CPU us/session", justify="right")
    table.add_column("Redis CPU us/session", justify="right")
    done = count - first
    table.add_row(f"{rate:,.0f}", ">= 1,000", f"{worker_cpu / done * 1e6:,.0f}", f"{redis_cpu / done * 1e6:,.0f}")
    console.print(table)
    return {"record_bytes": record_bytes, "sessions": count}


def bench_verdicts(count: int = 40_000) -> None:
    """One `--consume judges` worker over a backlog of judge verdicts (two answers with ~100-word
    texts each, read for their lengths and dropped)."""
    answer = " ".join(["word"] * 100)
    bodies = [
        json.dumps(
            {
                "verdict_id": f"v{n}",
                "tenant_id": "bench",
                "timestamp": "2026-11-20T10:30:00Z",
                "judge": {"model": f"judge-{n % 4}", "prompt": "pairwise"},
                "item_id": f"i{n // 2}",
                "game": n % 2 + 1,
                "candidates": [{"model": "a", "response": answer}, {"model": "b", "response": answer + " more"}],
                "verdict": {"kind": "pairwise", "preference": "A>B" if n % 3 else "B>A"},
            }
        ).encode()
        for n in range(count)
    ]
    with (
        tempfile.TemporaryDirectory() as tmp,
        EmbeddedRedis(Path(tmp) / "redis", persist=False) as server,
        _store(tmp) as store,
    ):
        client = redis.Redis.from_url(server.url)
        pipe = client.pipeline(transaction=False)
        for body in bodies:
            pipe.xadd("judge.verdicts", wire_fields(body, event_type="judge.verdict", tenant_id="bench", trace_id=None))
        pipe.execute()
        worker = _start_worker(server.url, Path(tmp), "bench", batch_size=WORKER_BATCH, consume="judges", **store)
        while client.xlen("bias.audit.stream") == 0:
            time.sleep(0.005)
        started = time.perf_counter()
        first = client.xlen("bias.audit.stream")
        cpu_before = process_cpu(worker.pid)
        while client.xlen("bias.audit.stream") < count:
            time.sleep(0.01)
        elapsed = time.perf_counter() - started
        worker_cpu = process_cpu(worker.pid) - cpu_before
        worker.terminate()
        worker.wait(timeout=30)
    done = count - first
    where = "PostgreSQL store" if POSTGRES["on"] else "JSONL rows"
    table = Table(title=f"Judge verdicts: 1 `--consume judges` process, local Redis, {where}, {count:,} verdicts")
    for column in ("verdicts/s", "target", "worker CPU us/verdict"):
        table.add_column(column, justify="right")
    table.add_row(f"{done / elapsed:,.0f}", ">= 2,000", f"{worker_cpu / done * 1e6:,.0f}")
    console.print(table)


def bench_latency(rate: int = 200, seconds: int = 15) -> None:
    bodies = [json.dumps(s).encode() for s in kb_sessions(rate * seconds, seed=22)]
    with (
        tempfile.TemporaryDirectory() as tmp,
        EmbeddedRedis(Path(tmp) / "redis", persist=False) as server,
        _store(tmp) as store,
    ):
        client = redis.Redis.from_url(server.url)
        worker = _start_worker(server.url, Path(tmp), "bench", batch_size=100, poll_ms=5, **store)
        client.xadd("warmup", {"x": 1})
        time.sleep(2.0)
        interval = 1.0 / rate
        start = time.perf_counter()
        for index, body in enumerate(bodies):  # paced: one session every 5 ms
            delay = start + index * interval - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            _publish(client, [body])
        while client.xlen("bias.audit.stream") < len(bodies):
            time.sleep(0.01)
        worker.terminate()
        worker.wait(timeout=30)
        sent = {}
        for entry_id, fields in client.xrange("council.sessions"):
            sent[json.loads(fields[b"data"])["session_id"]] = _entry_ms(entry_id)
        latencies = sorted(
            _entry_ms(entry_id) - sent[json.loads(fields[b"data"])["audit_id"]]
            for entry_id, fields in client.xrange("bias.audit.stream")
        )

    def p(q: float) -> float:
        return percentile(latencies, q)

    where = "PostgreSQL store" if POSTGRES["on"] else "JSONL records"
    table = Table(title=f"Publish-to-result latency at {rate} sessions/s for {seconds} s, {where} (Redis clock, ms)")
    for column in ("p50", "p90", "p99", "max", "target p99"):
        table.add_column(column, justify="right")
    table.add_row(str(p(0.5)), str(p(0.9)), str(p(0.99)), str(latencies[-1]), "< 50")
    console.print(table)


def bench_storage_postgres(sessions: int = 10_000) -> None:
    """Bytes on disk per 5x5 session in PostgreSQL: every table, index and TOAST, after VACUUM."""
    import asyncio

    import psycopg

    from bias_audit.consumers.envelope import Delivery
    from bias_audit.worker.composition import in_process_processor, record_store
    from bias_audit.worker.settings import Settings

    with tempfile.TemporaryDirectory() as tmp, _store(tmp) as store:
        settings = Settings(data_dir=Path(tmp), consumer_name="bench", **store)
        sink = record_store(settings)
        consumer = in_process_processor(settings, sink)
        with psycopg.connect(store["store_url"], autocommit=True) as connection:
            empty = _database_bytes(connection)
            bodies = kb_sessions(sessions)
            for start in range(0, sessions, 500):
                deliveries = [
                    Delivery(str(i), json.dumps(s).encode(), "bench")
                    for i, s in enumerate(bodies[start : start + 500], start)
                ]
                asyncio.run(consumer.process(deliveries))
            sink.close()
            connection.execute("VACUUM ANALYZE")
            full = _database_bytes(connection)
            [(rows,)] = connection.execute("SELECT count(*) FROM council_session_audit").fetchall()
    table = Table(title=f"PostgreSQL bytes per 5x5 session (25 records), {sessions:,} sessions")
    for column in ("what", "bytes/session", "design target"):
        table.add_column(column, justify="right")
    table.add_row("tables + indexes + TOAST", f"{(full - empty) / rows:,.0f}", "<= 1,024")
    console.print(table)


def _database_bytes(connection) -> int:
    [(size,)] = connection.execute(
        "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'"
    ).fetchall()
    return int(size)


def bench_storage(sessions: int = 1000) -> None:
    if POSTGRES["on"]:
        bench_storage_postgres()
        return
    with tempfile.TemporaryDirectory() as tmp:
        import asyncio

        from bias_audit.consumers.envelope import Delivery
        from bias_audit.worker.composition import in_process_processor, record_store
        from bias_audit.worker.settings import Settings

        settings = Settings(data_dir=Path(tmp), consumer_name="bench")
        store = record_store(settings)
        consumer = in_process_processor(settings, store)
        deliveries = [Delivery(str(i), json.dumps(s).encode(), "bench") for i, s in enumerate(kb_sessions(sessions))]
        asyncio.run(consumer.process(deliveries))
        store.close()
        raw = store.path.read_bytes()
    compressed = gzip.compress(raw, 6)
    table = Table(title=f"Stored bytes per 5x5 session (25 records), {sessions} sessions")
    for column in ("format", "bytes/session", "design target"):
        table.add_column(column, justify="right")
    table.add_row("JSONL (contract fields)", f"{len(raw) / sessions:,.0f}", "< 1,024")
    table.add_row("JSONL, gzip -6", f"{len(compressed) / sessions:,.0f}", "< 1,024")
    console.print(table)


TWO_COMMANDS = """
import typer
app = typer.Typer()

@app.command()
def hello(name: str) -> None:
    print(name)

@app.command()
def bye(name: str) -> None:
    print(name)

app()
"""


def bench_cli(runs: int = 15) -> None:
    """Whole processes, the median of `runs` each, interleaved; the venv's interpreter for both."""
    compile_package()  # as the installed wheel has it
    script = str(Path(sys.executable).parent / "bias-audit")
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "typer app of two commands, --help": [sys.executable, "-c", TWO_COMMANDS, "--help"],
        "bias-audit --help": [script, "--help"],
        "bias-audit report --format xml (usage error)": [script, "report", "--format", "xml"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            start = time.perf_counter()
            subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - start)
    table = Table(title=f"Command line start-up, median of {runs} runs")
    for column in ("command", "median ms", "best ms", "x bare python", "x typer app"):
        table.add_column(column, justify="right")
    bare = statistics.median(times["python -c pass"])
    typer_app = statistics.median(times["typer app of two commands, --help"])
    for name, values in times.items():
        table.add_row(
            name,
            f"{statistics.median(values) * 1e3:.0f}",
            f"{min(values) * 1e3:.0f}",
            f"{statistics.median(values) / bare:.1f}x",
            f"{statistics.median(values) / typer_app:.2f}x",
        )
    console.print(table)


def bench_pipeline(count: int = 6_000, rounds: int = 3) -> None:
    """CouncilSessionProcessor over batches of the worker's size, as the worker runs it (its GC
    settings, the collector paused per batch), best of `rounds` over the same sessions."""
    import asyncio

    from bias_audit.consumers.envelope import Delivery
    from bias_audit.gc_tuning import collector_paused
    from bias_audit.state.alert_state import MemoryAlertState
    from bias_audit.state.memory_window import MemoryWindow
    from bias_audit.storage.jsonl_store import JsonlRecordStore
    from bias_audit.worker.composition import council_processor
    from bias_audit.worker.logging_setup import configure_logging

    configure_logging("ERROR")  # the alerts' log lines are not the point here
    bodies = [json.dumps(s).encode() for s in kb_sessions(count)]
    batch = WORKER_BATCH

    async def one_round(directory: str) -> float:
        settings = Settings(data_dir=directory)
        processor = council_processor(
            settings,
            MemoryWindow(settings.window_policy),
            JsonlRecordStore(Path(directory), "records"),
            MemoryAlertState(),
        )
        deliveries = [Delivery(f"{i}-0", body, "council.sessions") for i, body in enumerate(bodies)]
        started = time.perf_counter()
        for start in range(0, count, batch):
            with collector_paused():
                outcomes = await processor.process(deliveries[start : start + batch])
                await processor.published(outcomes)
        return (time.perf_counter() - started) / count * 1e6

    tune_gc()
    timings = []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            timings.append(asyncio.run(one_round(tmp)))
    table = Table(title=f"Council pipeline in-process, {count} 5x5 sessions (~1 KB answers), batches of {batch}")
    for column in ("best us/session", "median us/session", "sessions/s (best)"):
        table.add_column(column, justify="right")
    best = min(timings)
    table.add_row(f"{best:.0f}", f"{statistics.median(timings):.0f}", f"{1e6 / best:,.0f}")
    console.print(table)


SECTIONS = {
    "pipeline": bench_pipeline,
    "audit": bench_audit,
    "cli": bench_cli,
    "throughput": bench_throughput,
    "verdicts": bench_verdicts,
    "latency": bench_latency,
    "storage": bench_storage,
}

if __name__ == "__main__":
    arguments = sys.argv[1:]
    if "--postgres" in arguments:
        arguments.remove("--postgres")
        POSTGRES["on"] = True
    chosen = arguments or list(SECTIONS)
    unknown = [name for name in chosen if name not in SECTIONS]
    if unknown:  # --help among them
        print(__doc__.strip(), f"\n\nsections: {', '.join(SECTIONS)} (default: all)", file=sys.stderr)
        sys.exit(0 if unknown in (["--help"], ["-h"]) else 2)
    for name in chosen:
        SECTIONS[name]()
