"""Parquet files for warehouses: the stored records, interactions or judge verdicts as typed
columns (pyarrow), one Hive-style folder per UTC day (`day=2026-11-26/part-00000.parquet`),
written batch by batch so memory stays flat however many rows there are.

BigQuery loads the folder with hive partitioning, ClickHouse and DuckDB read `*/*.parquet` as
they are: timestamps are TIMESTAMP(MICROS, UTC), lists of strings are lists, and the nested parts
whose shape varies (query_metadata, bias_score, candidates, ...) are JSON text. docs/parquet.md
lists every column."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import date
from itertools import islice
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bias_audit.schemas.safe_text import row_name

TIMESTAMP = pa.timestamp("us", tz="UTC")
ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, orjson.JSONEncodeError)


class UnfitRow(ValueError):
    """A stored row with a value its Parquet column cannot hold: the message names the row, the
    column and the value."""


def _json(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: pa.DataType
    value: Callable[[dict[str, Any]], Any]
    doc: str


def field(name: str, kind: pa.DataType, doc: str) -> Column:
    return Column(name, kind, lambda row: row.get(name), doc)


def json_field(name: str, doc: str) -> Column:
    return Column(name, pa.string(), lambda row: _json(row.get(name)), doc + " (JSON text)")


def _candidate(index: int, key: str) -> Callable[[dict[str, Any]], Any]:
    def value(row: dict[str, Any]) -> Any:
        candidates = row.get("candidates") or []
        return candidates[index].get(key) if len(candidates) > index else None

    return value


def _verdict(key: str) -> Callable[[dict[str, Any]], Any]:
    return lambda row: (row.get("verdict") or {}).get(key)


def _judge(key: str) -> Callable[[dict[str, Any]], Any]:
    return lambda row: (row.get("judge") or {}).get(key)


COMMON = [
    field("schema_version", pa.string(), "the record's schema version"),
    Column(
        "timestamp", TIMESTAMP, lambda row: row.get("timestamp"), "when the session, answer or verdict happened (UTC)"
    ),
    field("tenant_id", pa.string(), "the tenant"),
    field("trace_id", pa.string(), "the trace it belongs to"),
    field("consent_level", pa.int8(), "0-4, as the contract defines"),
]

TABLES: dict[str, list[Column]] = {
    "records": [
        field("session_id", pa.string(), "the council session"),
        *COMMON,
        field("reviewer_id", pa.string(), "the member who scored"),
        field("model_id", pa.string(), "the member whose answer was scored"),
        field("position", pa.int32(), "display index the reviewer saw (null: unknown)"),
        field("response_length_chars", pa.int32(), "the scored answer's length in characters"),
        field("response_length_words", pa.int32(), "... in words"),
        field("score_value", pa.float64(), "the score given"),
        field("score_scale", pa.string(), "the scale, e.g. 1-10"),
        field("is_self_review", pa.bool_(), "the reviewer scored its own answer"),
        field("council_config_version", pa.string(), "the council's configuration version"),
        field("query_hash", pa.string(), "HMAC-SHA256 of the query (consent 4 only)"),
        json_field("query_metadata", "the caller's metadata"),
        field("style_similarity", pa.float64(), "similarity of the scored answer to the reviewer's own"),
        field("response_fingerprint", pa.string(), "a keyed hash of the answer's normalized text"),
        field("response_correct", pa.bool_(), "the answer's known correctness"),
    ],
    "interactions": [
        field("audit_id", pa.string(), "the audited answer's id"),
        *COMMON,
        field("user_id", pa.string(), "the application's user"),
        field("llm_provider", pa.string(), "provider"),
        field("llm_model", pa.string(), "model"),
        field("prompt_tokens", pa.int64(), "prompt tokens"),
        field("completion_tokens", pa.int64(), "completion tokens"),
        field("total_tokens", pa.int64(), "total tokens"),
        field("query_hash", pa.string(), "HMAC-SHA256 of the query (consent 4 only)"),
        field("bias_detected", pa.bool_(), "any bias flagged"),
        field("bias_type", pa.list_(pa.string()), "the flagged bias types"),
        json_field("bias_score", "evidence per bias type, 0-1"),
        field("bias_confidence_score", pa.float64(), "confidence, 0-1"),
        json_field("mitigation_action", "the suggested mitigation"),
        json_field("bias_report_summary", "the detectors' findings"),
        field("human_reviewed", pa.bool_(), "a reviewer has seen it"),
        field("llm_response", pa.string(), "the audited answer (never the query)"),
        field("decision_id", pa.string(), "the caller's decision id"),
        field("reasoning_node_id", pa.string(), "the caller's reasoning node id"),
    ],
    "verdicts": [
        field("verdict_id", pa.string(), "the verdict's id (source, judge, prompt, item, game, repetition)"),
        *COMMON,
        Column("judge_model", pa.string(), _judge("model"), "the judge"),
        Column("judge_prompt", pa.string(), _judge("prompt"), "the judge's prompt"),
        Column("judge_version", pa.string(), _judge("version"), "the judge's version"),
        field("item_id", pa.string(), "the judged item"),
        field("game", pa.int32(), "game number (2: swapped)"),
        field("repetition", pa.int32(), "repetition of the same game"),
        field("order_known", pa.bool_(), "the display order is known"),
        field("task", pa.string(), "task or category"),
        Column("verdict_kind", pa.string(), _verdict("kind"), "pairwise, probability, scores or failed"),
        Column("preference", pa.string(), _verdict("preference"), "A>>B ... B>>A (pairwise)"),
        Column("p_first", pa.float64(), _verdict("p_first"), "probability the first is better (probability)"),
        Column("scores", pa.list_(pa.float64()), _verdict("scores"), "one score per candidate (scores)"),
        Column("failed_reason", pa.string(), _verdict("reason"), "why the judge gave no verdict (failed)"),
        Column("first_model", pa.string(), _candidate(0, "model"), "the candidate shown first"),
        Column("second_model", pa.string(), _candidate(1, "model"), "the candidate shown second"),
        Column("first_length_words", pa.int32(), _candidate(0, "length_words"), "its answer's length in words"),
        Column("second_length_words", pa.int32(), _candidate(1, "length_words"), "... of the second"),
        field("label", pa.string(), "the known better answer, as a preference"),
        json_field("candidates", "every candidate: model, length_words, correct, baseline"),
        json_field("human", "people's verdicts on the same pair"),
    ],
}


def schema_of(kind: str) -> pa.Schema:
    columns = TABLES[kind]
    return pa.schema(
        [pa.field(c.name, c.type, metadata={"description": c.doc}) for c in columns],
        metadata={"bias_audit.table": kind},
    )


@dataclass(frozen=True, slots=True)
class ParquetExport:
    rows: int
    files: list[Path]

    @property
    def bytes(self) -> int:
        return sum(path.stat().st_size for path in self.files)


def _batches(rows: Iterable[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    iterator = iter(rows)
    while batch := list(islice(iterator, size)):
        yield batch


def _array(values: list[Any], kind: pa.DataType) -> pa.Array:
    if kind == TIMESTAMP:  # ISO 8601 text, any offset: Arrow parses it to UTC
        return pa.array(values, pa.string()).cast(TIMESTAMP)
    return pa.array(values, kind)


def _table(batch: list[dict[str, Any]], columns: list[Column], schema: pa.Schema, table: str) -> pa.Table:
    arrays = []
    for column in columns:
        try:
            arrays.append(_array([column.value(row) for row in batch], column.type))
        except ARROW_ERRORS:
            raise _unfit(batch, column, table) from None
    return pa.Table.from_arrays(arrays, schema=schema)


def _unfit(batch: list[dict[str, Any]], column: Column, table: str) -> UnfitRow:
    """The first row of `batch` whose value does not fit `column`, named."""
    for row in batch:
        try:
            _array([column.value(row)], column.type)
        except ARROW_ERRORS as error:
            try:
                shown = repr(column.value(row))
            except ARROW_ERRORS:  # a JSON column: the value before it became text
                shown = repr(row.get(column.name))
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            return UnfitRow(
                f"{row_name(table, row)} cannot be exported: its {column.name} {shown} does not fit "
                f"{column.type} ({str(error).splitlines()[0]}); fix or delete that row, then export again"
            )
    return UnfitRow(f"a {table} row's {column.name} does not fit {column.type}")


def _by_day(table: pa.Table) -> Iterator[tuple[date | None, pa.Table]]:
    days = pc.cast(table["timestamp"], pa.date32())
    unique = pc.unique(days).to_pylist()
    if len(unique) == 1:  # the common case: a batch of one day's rows, in time order
        yield unique[0], table
        return
    for day in unique:
        yield day, table.filter(pc.is_null(days) if day is None else pc.equal(days, pa.scalar(day, pa.date32())))


def write_parquet(
    rows: Iterable[dict[str, Any]],
    kind: str,
    directory: Path,
    *,
    batch_rows: int = 50_000,
    open_files: int = 32,
    advance: Callable[[int], object] = lambda n: None,
) -> ParquetExport:
    """Write `rows` (as the store's readers yield them) under `directory`, one folder per UTC day;
    each batch is a row group. At most `open_files` days are open at once: a day met again after
    its file was closed gets its next part. UnfitRow names a row a column cannot hold (what was
    written stays: the caller decides)."""
    columns, schema = TABLES[kind], schema_of(kind)
    writers: OrderedDict[date | None, pq.ParquetWriter] = OrderedDict()
    parts: dict[date | None, int] = {}
    files: list[Path] = []
    count = 0
    try:
        for batch in _batches(rows, batch_rows):
            for day, part in _by_day(_table(batch, columns, schema, kind)):
                if day in writers:
                    writers.move_to_end(day)
                else:
                    if len(writers) >= open_files:
                        writers.popitem(last=False)[1].close()
                    folder = directory / f"day={day.isoformat() if day else 'unknown'}"
                    folder.mkdir(parents=True, exist_ok=True)
                    parts[day] = parts.get(day, -1) + 1
                    files.append(folder / f"part-{parts[day]:05d}.parquet")
                    writers[day] = pq.ParquetWriter(files[-1], schema, compression="zstd")
                writers[day].write_table(part, row_group_size=batch_rows)
            count += len(batch)
            advance(len(batch))
    finally:
        for writer in writers.values():
            writer.close()
    return ParquetExport(count, files)
