"""`bias-audit demo`: embedded Redis and PostgreSQL, a real worker, the shipped biased sessions,
answers and judges, a table of what was found for each."""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import redis
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from bias_audit.analysis.tenant_report import tenant_report
from bias_audit.producers.publish import entries_for, publish
from bias_audit.reports.run import store_windows
from bias_audit.schemas.report import Estimate, TenantReport
from bias_audit.storage import postgres
from bias_audit.storage.embedded_postgres import EmbeddedPostgres
from bias_audit.storage.postgres.verdicts import read_verdicts

from . import judge_samples, response_samples, samples
from .composition import redis_worker
from .embedded_redis import EmbeddedRedis
from .logging_setup import configure_logging
from .settings import Settings

RESPONSES = 40


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:+.{digits}f}"


def _p(value: float | None) -> str:
    return "-" if value is None else ("<1e-6" if value < 1e-6 else f"{value:.1e}")


async def _run_worker(settings: Settings, expected: int, console: Console) -> list[dict]:
    worker = redis_worker(settings)
    ready = asyncio.Event()
    task = asyncio.create_task(worker.run(install_signal_handlers=False, ready=ready))
    await ready.wait()
    assert settings.broker_url  # run_demo starts the embedded Redis first
    client = redis.Redis.from_url(settings.broker_url)
    deadline = time.monotonic() + 120
    with Progress(console=console, transient=True) as progress:
        bar = progress.add_task("auditing sessions and responses", total=expected)
        while (done := client.xlen(settings.result_topic)) < expected and time.monotonic() < deadline:
            progress.update(bar, completed=done)
            await asyncio.sleep(0.1)
    worker.stopping.set()
    await task
    entries: Any = client.xrange(settings.result_topic)
    results = [orjson.loads(fields[b"data"]) for _, fields in entries]
    client.close()
    return results


def _value_p(estimate: Estimate | None) -> tuple[float | None, float | None]:
    return (estimate.point_estimate, estimate.p_value) if estimate else (None, None)


def _reviewer_report(store_url: str) -> TenantReport | None:
    """What `bias-audit report --store` says of the demo's tenant: the checks read the report."""
    windows, _ = store_windows(store_url, tenant=None, sessions=None, days=None)
    window = next((w for w in windows if w.cells.sessions), None)
    return tenant_report(window.cells, window.previous_sessions) if window else None


def run_demo(sessions_file: Path | None = None) -> int:
    # the tables are the output: the worker's alerts (WARNING lines on stderr) would land between
    # them on a terminal; the demo shows what it found itself
    configure_logging("ERROR")
    console = Console()
    path = sessions_file or samples.SAMPLE_FILE
    lines = [line for line in path.read_bytes().splitlines() if line.strip()]
    with (
        tempfile.TemporaryDirectory(prefix="bias-audit-demo-") as tmp,
        EmbeddedRedis(Path(tmp) / "redis", persist=False) as server,
        EmbeddedPostgres(Path(tmp) / "postgres") as store,
    ):
        postgres.apply_migrations(store.url)
        settings = Settings(
            broker_url=server.url, data_dir=Path(tmp), consumer_name="demo", claim_idle_ms=60_000, store_url=store.url
        )
        responses = response_samples.generate_responses(RESPONSES, seed=21)
        verdicts = [orjson.loads(line) for line in judge_samples.SAMPLE_FILE.read_bytes().splitlines() if line.strip()]
        numbered = enumerate([*lines, *(orjson.dumps(event) for event in [*responses, *verdicts])], 1)
        topics = {"llm.response": settings.llm_topic, "judge.verdict": settings.verdicts_topic}
        publish(server.url, entries_for(numbered, lambda kind: topics.get(kind, settings.council_topic)))
        console.print(
            f"published {len(lines)} council sessions to [bold]{settings.council_topic}[/bold], "
            f"{len(responses)} LLM responses to [bold]{settings.llm_topic}[/bold] and {len(verdicts)} "
            f"judge verdicts to [bold]{settings.verdicts_topic}[/bold] on {server.url}"
        )
        started = time.perf_counter()
        everything = asyncio.run(_run_worker(settings, len(lines) + len(responses) + len(verdicts), console))
        elapsed = time.perf_counter() - started
        with postgres.connect(store.url) as connection:
            records = list(postgres.read_records(connection))
            interactions = list(postgres.read_interactions(connection))
            stored_verdicts = list(read_verdicts(connection))
            stored = "\n".join(postgres.every_row_as_text(connection))  # every table: the raw queries are in none
        report = _reviewer_report(store.url)

    results = [r for r in everything if r["source"] == "council.session"]
    queries = {e["original_query"] for e in responses} | {orjson.loads(line).get("query") for line in lines}
    query_leaked = any(query in stored for query in queries if query)
    console.print(
        f"{len(everything)} results on [bold]{settings.result_topic}[/bold] in {elapsed:.1f} s; "
        f"{len(records)} council records, {len(interactions)} interaction records and "
        f"{len(stored_verdicts)} judge verdicts stored in PostgreSQL "
        f"(raw queries: {'[red]found[/red]' if query_leaked else 'none'})"
    )
    responses_ok = _response_table(console, responses, [r for r in everything if r["source"] == "llm.response"])
    judges_ok = _judge_table(console, stored_verdicts)
    profiles = {p.reviewer: p for p in report.reviewers} if report else {}
    drivers = report.finding_drivers if report else {}

    def estimate(reviewer: str, field: str) -> Estimate | None:
        return getattr(profiles[reviewer], field) if reviewer in profiles else None

    def flagged_as(reviewer: str, flag: str) -> bool:
        return reviewer in profiles and flag in profiles[reviewer].flags

    position = report.position if report else None
    # (reviewer, measure, value, p, found: what the report says of that reviewer, per-session audit list or None)
    checks: list[tuple[str, str, float | None, float | None, bool, str | None]] = [
        (
            samples.HARSH,
            "offset",
            *_value_p(estimate(samples.HARSH, "offset")),
            flagged_as(samples.HARSH, "HARSH"),
            "harsh_reviewers",
        ),
        (
            samples.LENGTH_LOVING,
            "length r",
            *_value_p(report.length_correlation if report else None),
            samples.LENGTH_LOVING in (drivers.get("LENGTH_BIAS"), drivers.get("LENGTH_PREFERENCE_IN_SCORES")),
            None,
        ),
        (
            samples.PRIMACY,
            "position",
            None,
            position.p_value if position else None,
            any(flag.startswith("POSITION_BIAS_") and name == samples.PRIMACY for flag, name in drivers.items()),
            None,
        ),
        (
            samples.SELF_PREFERRING,
            "own-peers",
            *_value_p(estimate(samples.SELF_PREFERRING, "self_preference")),
            flagged_as(samples.SELF_PREFERRING, "SELF_PREFERENCE"),
            "self_preferring_reviewers",
        ),
    ]
    table = Table(title="Injected biases, and what the report found", show_lines=False)
    table.add_column("reviewer", no_wrap=True)  # names whole: the other columns wrap instead
    table.add_column("injected")
    table.add_column("measure", no_wrap=True)
    for column in ("value", "p", "flagged", "found"):
        table.add_column(column)
    all_found = True
    for reviewer, measure, value, p_value, found, audit_list in checks:
        all_found &= found
        flagged = (
            "-" if audit_list is None else f"{sum(reviewer in r['audit'][audit_list] for r in results)}/{len(results)}"
        )
        table.add_row(
            reviewer,
            samples.INJECTED[reviewer],
            measure,
            _fmt(value),
            _p(p_value),
            flagged,
            "[green]yes[/green]" if found else "[red]no[/red]",
        )
    console.print(table)

    bystanders = [r for r in samples.MODELS if r not in samples.INJECTED]
    false_alarms = [r for r in bystanders if r in profiles and profiles[r].flags]
    window = results[-1]["window"] if results else None
    if window:
        lc = window["length_correlation"]
        console.print(
            f"window ({window['tenant_id']}): {window['sessions']} sessions, confidence {window['confidence']}, "
            f"pooled length r {lc['point_estimate']:.3f} (95% CI {lc['ci_lower']:.3f}..{lc['ci_upper']:.3f}, n={lc['sample_size']})"
        )
        offsets = Table(title="Window reviewer offsets (points on a 1-10 scale, self-reviews excluded)")
        offsets.add_column("reviewer", no_wrap=True)
        offsets.add_column("offset", justify="right")
        for reviewer, offset in sorted(window["reviewer_offsets"].items(), key=lambda kv: kv[1]):
            offsets.add_row(reviewer, f"{offset:+.2f}")
        console.print(offsets)
    if false_alarms:
        console.print(f"[yellow]unbiased reviewers flagged: {', '.join(false_alarms)}[/yellow]")
    if all_found and not false_alarms and responses_ok and judges_ok and not query_leaked:
        console.print(
            "[bold green]every injected bias was found, and no unbiased reviewer, answer or judge was "
            "flagged[/bold green]"
        )
        return 0
    console.print(
        "[bold red]the audit missed an injected bias or flagged an unbiased reviewer, answer or judge[/bold red]"
    )
    return 1


SHORT = {"first_position_rate": "position", "preference_fairness": "PF", "length_preference": "length"}


def _judge_table(console: Console, verdicts: list[dict]) -> bool:
    """The judge report over the stored verdicts: the two biased judges flagged for their bias,
    the fair one for nothing."""
    from bias_audit.analysis.judge_games import game_from_event
    from bias_audit.analysis.judges import judge_report

    report = judge_report([game_from_event(v) for v in verdicts])
    expected = {
        judge_samples.FAIR: [],
        judge_samples.FIRST: ["first_position_rate", "preference_fairness"],
        judge_samples.VERBOSE: ["length_preference"],
    }
    table = Table(
        title=f"LLM judges ({len(verdicts)} verdicts, each item in both orders): injected bias, and "
        "what the judge report found (rates with their 95% CI)"
    )
    table.add_column("judge", no_wrap=True)
    for column in ("injected", "1st shown", "longer", "consistent", "flagged: as injected?"):
        table.add_column(column, overflow="fold")  # a narrow terminal folds, never cuts with an ellipsis
    ok = len(report.judges) == len(expected)

    def shown(metric) -> str:
        return "-" if metric.estimate is None else f"{metric.estimate:.2f}\n{metric.ci_lower:.2f}-{metric.ci_upper:.2f}"

    for judge in sorted(report.judges, key=lambda j: j.judge):
        right = sorted(judge.flagged) == sorted(expected.get(judge.judge, ["?"]))
        ok &= right
        table.add_row(
            judge.judge,
            judge_samples.INJECTED.get(judge.judge, "none"),
            shown(judge.metrics["first_position_rate"]),
            shown(judge.metrics["length_preference"]),
            shown(judge.metrics["position_consistency"]),
            (", ".join(SHORT.get(name, name) for name in judge.flagged) or "none")
            + (": [green]yes[/green]" if right else ": [red]no[/red]"),
        )
    console.print(table)
    return ok


def _response_table(console: Console, events: list[dict], results: list[dict]) -> bool:
    """Per injected kind (or none): how many answers, how many found as they should be: flagged
    with that bias type, or for a weak signal scored and not flagged."""
    from .response_samples import WEAK

    by_id = {r["audit_id"]: r for r in results}
    rows: dict[str, list[int]] = {}
    for event in events:
        injected = event["query_context"]["injected"] or "none"
        result = by_id.get(event["audit_id"])
        if result is None:
            found = False
        elif injected == "none":
            found = not result["bias_detected"]
        elif injected in WEAK:
            found = result["bias_score"].get(injected, 0) > 0 and injected not in result["bias_type"]
        else:
            found = injected in result["bias_type"]
        counts = rows.setdefault(injected, [0, 0])
        counts[0] += 1
        counts[1] += int(found)
    table = Table(
        title=f"Single LLM responses ({len(results)} of {len(events)} audited): injected bias, "
        "and answers where it was found"
    )
    table.add_column("injected", no_wrap=True)
    for column in ("answers", "found (none: nothing flagged; weak signal: scored, not flagged)", "ok"):
        table.add_column(column)
    for injected, (count, found_count) in sorted(rows.items()):
        table.add_row(
            injected, str(count), str(found_count), "[green]yes[/green]" if found_count == count else "[red]no[/red]"
        )
    console.print(table)
    example = next((r for r in results if r["bias_detected"]), None)
    if example:
        console.print(
            f"e.g. {example['audit_id']}: {', '.join(example['bias_type'])}, confidence "
            f"{example['bias_confidence_score']:.2f}, action {example['mitigation_action']}: "
            f"{'; '.join(example['bias_report_summary']['mitigations'])}",
            soft_wrap=True,
        )
    return len(results) == len(events) and all(found == count for count, found in rows.values())
