"""`bias-audit audit`: the worker's pipeline in-process over JSONL lines, one output line per input
line, in input order: the audit result, the dead letter (bad line) or a duplicate notice."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator
from typing import IO

import orjson

from .settings import Settings

CHUNK = 500  # lines audited together: memory follows the chunk, not the file


def _chunks(lines: Iterable[tuple[int, bytes]], size: int = CHUNK) -> Iterator[list[tuple[int, bytes]]]:
    chunk: list[tuple[int, bytes]] = []
    for item in lines:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def audit_lines(
    lines: Iterable[tuple[int, bytes]], settings: Settings, source: str, out: IO[str], note: Callable[[str], None]
) -> int:
    """Write one JSON line per input line to `out`; `note` gets a line for each alert, bad line and
    duplicate. Returns the number of bad lines."""
    from bias_audit.consumers.envelope import Delivery

    from .composition import in_process_processor, interaction_store, record_store, verdict_store

    # writes only when asked to: council records, interaction records and verdicts to the store given
    store = record_store(settings) if settings.store_url else None
    interactions = interaction_store(settings) if settings.store_url else None
    verdicts = verdict_store(settings) if settings.store_url else None
    consumer = in_process_processor(settings, store, interactions, verdicts=verdicts)
    bad = 0

    async def run() -> None:
        nonlocal bad
        for chunk in _chunks(lines):
            deliveries = [Delivery(delivery_id=f"line-{n}", body=line, source_topic=source) for n, line in chunk]
            for (number, _), outcome in zip(chunk, await consumer.process(deliveries)):
                if outcome.result is not None:
                    out.write(outcome.result.model_dump_json() + "\n")
                    for alert in outcome.alerts or ():
                        note(f"line {number}: alert {alert.status}: {alert.alert_type}: {alert.message}")
                elif outcome.dead_letter is not None:
                    bad += 1
                    out.write(outcome.dead_letter.model_dump_json() + "\n")
                    note(f"line {number}: {outcome.dead_letter.error}")
                else:
                    out.write(
                        orjson.dumps(
                            {"schema_version": "1.0", "event_type": "bias.audit.duplicate", "line": number}
                        ).decode()
                        + "\n"
                    )
                    note(f"line {number}: duplicate event, counted once")

    try:
        asyncio.run(run())
    finally:
        for sink in (store, interactions, verdicts):
            if sink is not None:
                sink.close()
    out.flush()
    return bad
