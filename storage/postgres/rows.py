"""Row codecs: a council session's row (its scored cells packed) and an interaction's, from the
consumer's records and back to the contract's bias metric records, exactly."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from itertools import chain
from typing import TYPE_CHECKING, Any

from psycopg.types.json import Jsonb

if TYPE_CHECKING:
    from pydantic import BaseModel

    from bias_audit.analysis.digest import SessionDigest
    from bias_audit.analysis.records import SessionRecords


CELL_WIDTH = 5  # numbers per cell in SessionScores.cells (analysis.observations, not imported: it loads numpy)


# reviewer, model (indexes into members), position (-1: unknown), score, 1 for a self-review
_CELL = struct.Struct("<BBhdB")


# (column, type for binary COPY) of what we write: one list, so names and types cannot drift apart
_SESSION_WRITTEN = (
    ("tenant_id", "text"),
    ("session_id", "text"),
    ("session_ts", "timestamptz"),
    ("ts_text", "text"),
    ("trace_id", "text"),
    ("consent_level", "int2"),
    ("record_schema", "text"),
    ("score_scale", "text"),
    ("council_config_version", "text"),
    ("query_hash", "text"),
    ("query_metadata", "jsonb"),
    ("members", "text[]"),
    ("response_chars", "int4[]"),
    ("response_words", "int4[]"),
    ("cells", "bytea"),
    ("response_fingerprints", "bytea"),
    ("response_correct", "bool[]"),
    ("cell_similarity", "bytea"),
)


_NO_FINGERPRINT = bytes(8)


_NO_OFFSET = timedelta(0)


_NO_SIMILARITY = 0xFFFF


_INTERACTION_WRITTEN = (
    ("audit_id", "text"),
    ("tenant_id", "text"),
    ("user_id", "text"),
    ("trace_id", "text"),
    ("query_hash", "text"),
    ("llm_provider", "text"),
    ("llm_model", "text"),
    ("llm_response", "text"),
    ("prompt_tokens", "int8"),
    ("response_tokens", "int8"),
    ("total_tokens", "int8"),
    ("consent_level", "int2"),
    ("record_schema", "text"),
    ("log_timestamp", "timestamptz"),
    ("ts_text", "text"),
    ("bias_detected", "bool"),
    ("bias_type", "jsonb"),
    ("bias_score", "jsonb"),
    ("bias_confidence_score", "numeric"),
    ("mitigation_action", "jsonb"),
    ("bias_report_summary", "jsonb"),
    ("human_reviewed", "bool"),
    ("decision_id", "text"),
    ("reasoning_node_id", "text"),
)


SESSION_COLUMNS = ", ".join(name for name, _ in _SESSION_WRITTEN)


INTERACTION_COLUMNS = ", ".join(name for name, _ in _INTERACTION_WRITTEN)


def session_rows(records: Iterable[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Records (SessionRecords.records()' dicts, in their order) grouped into one row per session."""
    sessions: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for record in records:
        sessions.setdefault((record["tenant_id"], record["session_id"]), []).append(record)
    return [_row(rows) for rows in sessions.values()]


def utc_text(moment: datetime) -> str:
    """A timestamp as SessionRecords writes a UTC one."""
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def _timestamp(text: str) -> tuple[datetime, str | None]:
    """A record's timestamp as (the time to index, its text when it is not utc_text's form); a
    naive one (llm-council-core writes them) is UTC, as the report reads it."""
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment, None if utc_text(moment) == text else text


def _row(records: list[dict[str, Any]]) -> tuple[Any, ...]:
    first = records[0]
    members: dict[str, int] = {}  # reviewers and models share one list: in a council they are the same
    for record in records:
        members.setdefault(record["reviewer_id"], len(members))
        members.setdefault(record["model_id"], len(members))
    chars, words = [-1] * len(members), [-1] * len(members)
    fingerprints: list[str | None] = [None] * len(members)
    correct: list[bool | None] = [None] * len(members)
    similarity: list[float | None] = []
    flat: list[Any] = []
    for record in records:
        model = members[record["model_id"]]
        chars[model], words[model] = record["response_length_chars"], record["response_length_words"]
        fingerprints[model] = fingerprints[model] or record.get("response_fingerprint")
        correct[model] = record.get("response_correct") if correct[model] is None else correct[model]
        similarity.append(record.get("style_similarity"))
        position = record["position"]
        flat += (
            members[record["reviewer_id"]],
            model,
            -1 if position is None else position,
            record["score_value"],
            1 if record["is_self_review"] else 0,
        )
    cells = struct.pack("<" + _CELL.format[1:] * len(records), *flat)
    metadata = first["query_metadata"]
    return (
        first["tenant_id"],
        first["session_id"],
        *_timestamp(first["timestamp"]),
        first["trace_id"],
        first["consent_level"],
        first["schema_version"],
        first["score_scale"],
        first["council_config_version"],
        first["query_hash"],
        None if metadata is None else Jsonb(metadata),
        *_member_columns(members, chars, words, cells, fingerprints, correct, similarity),
    )


def session_row(session: SessionRecords) -> tuple[Any, ...]:
    """_row(session.records()), read from the session directly: no dict per reviewer x model;
    C-level maps over the cells' columns instead of a Python loop per cell."""
    event, scores, traits = session.event, session.scores, session.traits
    cells = scores.cells
    width = CELL_WIDTH
    names: list[str] = [""] * (2 * (len(cells) // width))
    names[0::2] = map(scores.reviewers.__getitem__, map(int, cells[0::width]))
    names[1::2] = map(scores.models.__getitem__, map(int, cells[1::width]))
    # _row's order: each cell's reviewer, then its model, first appearance first
    members = {name: index for index, name in enumerate(dict.fromkeys(names))}
    chars, words = [-1] * len(members), [-1] * len(members)
    fingerprints: list[str | None] = [None] * len(members)
    correct: list[bool | None] = [None] * len(members)
    for index, name in enumerate(scores.models):
        member = members.get(name)
        if member is not None:
            candidate = scores.candidates[name]
            chars[member], words[member] = candidate.chars, candidate.words
            if traits and traits.fingerprints:
                fingerprints[member] = traits.fingerprints[index]
            if traits and traits.correct:
                correct[member] = traits.correct[index]
    positions = [int(p) if p >= 0 else -1 for p in cells[3::width]]
    own = [1 if flag == 1.0 else 0 for flag in cells[4::width]]
    packed = struct.pack(
        "<" + _CELL.format[1:] * len(own),
        *chain.from_iterable(
            zip(
                map(members.__getitem__, names[0::2]),
                map(members.__getitem__, names[1::2]),
                positions,
                cells[2::width],
                own,
            )
        ),
    )
    metadata = session.query_metadata
    similarity = traits.similarity if traits and traits.similarity else ()
    moment = event.timestamp
    # a UTC time is written as utc_text writes it: the text is only kept for another offset
    when = (moment, None) if moment.utcoffset() == _NO_OFFSET else _timestamp(session.timestamp)
    return (
        event.tenant_id,
        event.session_id,
        *when,
        session.trace_id,
        session.consent,
        session.schema_version,
        event.score_scale,
        event.council_config_version,
        session.query_hash,
        None if metadata is None else Jsonb(metadata),
        *_member_columns(members, chars, words, packed, fingerprints, correct, list(similarity)),
    )


def _member_columns(
    members: dict[str, int],
    chars: list[int],
    words: list[int],
    cells: bytes,
    fingerprints: list[str | None],
    correct: list[bool | None],
    similarity: list[float | None],
) -> tuple[Any, ...]:
    """The row's columns after the session's own: members, their lengths, the packed cells, and
    the fingerprints, correctness and similarities when any is known."""
    return (
        list(members),
        chars,
        words,
        cells,
        b"".join(_NO_FINGERPRINT if f is None else bytes.fromhex(f) for f in fingerprints)
        if any(fingerprints)
        else None,
        correct if any(c is not None for c in correct) else None,
        _packed_similarity(similarity) if any(v is not None for v in similarity) else None,
    )


def _packed_similarity(values: list[float | None]) -> bytes:
    return struct.pack(f"<{len(values)}H", *(_NO_SIMILARITY if v is None else round(v * 10_000) for v in values))


def _unpacked_traits(
    fingerprints: bytes | None, similarity: bytes | None
) -> tuple[list[str | None] | None, list[float | None] | None]:
    """The stored fingerprints (per member) and similarities (per cell) as the records carry them."""
    prints = (
        None
        if fingerprints is None
        else [
            None if chunk == _NO_FINGERPRINT else chunk.hex()
            for chunk in (bytes(fingerprints[i : i + 8]) for i in range(0, len(fingerprints), 8))
        ]
    )
    # v / 10_000 is already the double nearest the 4-digit decimal: round(v / 10_000, 4) gives the
    # same float for every uint16 (tested), at ~5x the cost over a report's 250,000 cells
    values = (
        None
        if similarity is None
        else [
            None if v == _NO_SIMILARITY else v / 10_000 for v in struct.unpack(f"<{len(similarity) // 2}H", similarity)
        ]
    )
    return prints, values


def records_of(row: tuple[Any, ...]) -> Iterator[dict[str, Any]]:
    """The bias metric records of one stored session, exactly as SessionRecords.records() made them."""
    (
        tenant_id,
        session_id,
        moment,
        ts_text,
        trace_id,
        consent,
        schema,
        scale,
        config_version,
        query_hash,
        metadata,
        members,
        chars,
        words,
        cells,
        packed_prints,
        correct,
        packed_similarity,
    ) = row
    fingerprints, similarity = _unpacked_traits(packed_prints, packed_similarity)
    common = {
        "schema_version": schema,
        "session_id": session_id,
        "timestamp": ts_text or utc_text(moment),
        "tenant_id": tenant_id,
        "trace_id": trace_id,
        "consent_level": consent,
    }
    for index, (reviewer, model, position, score, own) in enumerate(_CELL.iter_unpack(cells)):
        yield {
            **common,
            "reviewer_id": members[reviewer],
            "model_id": members[model],
            "position": None if position < 0 else position,
            "response_length_chars": chars[model],
            "response_length_words": words[model],
            "score_value": score,
            "score_scale": scale,
            "is_self_review": own == 1,
            "council_config_version": config_version,
            "query_hash": query_hash,
            "query_metadata": metadata,
            "style_similarity": similarity[index] if similarity else None,
            "response_fingerprint": fingerprints[model] if fingerprints else None,
            "response_correct": correct[model] if correct else None,
        }


def interaction_row(record: dict[str, Any]) -> tuple[Any, ...]:
    """An interaction record (consumers.responses) as its llm_interaction_audit row."""
    return (
        record["audit_id"],
        record["tenant_id"],
        record["user_id"],
        record["trace_id"],
        record["query_hash"],
        record["llm_provider"],
        record["llm_model"],
        record["llm_response"],
        record["prompt_tokens"],
        record["completion_tokens"],
        record["total_tokens"],
        record["consent_level"],
        record["schema_version"],
        *_timestamp(record["timestamp"]),
        record["bias_detected"],
        Jsonb(record["bias_type"]),
        Jsonb(record["bias_score"]),
        Decimal(str(record["bias_confidence_score"])) * 100,
        Jsonb(record["mitigation_action"]),
        Jsonb(record["bias_report_summary"]),
        record["human_reviewed"],
        # records written before the decision links carry none
        record.get("decision_id"),
        record.get("reasoning_node_id"),
    )


def interaction_record(row: tuple[Any, ...]) -> dict[str, Any]:
    """A stored interaction as the record the consumer wrote (the JSONL interchange form)."""
    (
        audit_id,
        tenant_id,
        user_id,
        trace_id,
        query_hash_,
        provider,
        model,
        response,
        prompt_tokens,
        completion_tokens,
        total_tokens,
        consent,
        schema,
        moment,
        ts_text,
        detected,
        bias_type,
        bias_score,
        confidence,
        mitigation,
        summary,
        reviewed,
        decision_id,
        reasoning_node_id,
    ) = row
    return {
        "record_type": "llm_interaction_audit",
        "schema_version": schema,
        "audit_id": audit_id,
        "timestamp": ts_text or utc_text(moment),
        "tenant_id": tenant_id,
        "user_id": user_id,
        "trace_id": trace_id,
        "consent_level": consent,
        "llm_provider": provider,
        "llm_model": model,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": total_tokens,
        "query_hash": query_hash_,
        "bias_detected": detected,
        "bias_type": bias_type,
        "bias_score": bias_score,
        "bias_confidence_score": float(confidence / 100),
        "mitigation_action": mitigation,
        "bias_report_summary": summary,
        "human_reviewed": reviewed,
        "llm_response": response,
        "decision_id": decision_id,
        "reasoning_node_id": reasoning_node_id,
    }


def digest_of_row(row: tuple[Any, ...]) -> SessionDigest | None:
    """A stored session's digest straight from its packed cells: what digest_from_records gives
    for its records (tested), without building them. None when a (reviewer, model) repeats.
    Column by column (zip, map): this runs for every session a report reads."""
    from bias_audit.analysis.digest import SessionDigest
    from bias_audit.analysis.observations import score_bounds
    from bias_audit.analysis.record_cells import DEFAULT_SCALE, position_is_display_order

    (
        tenant_id,
        session_id,
        moment,
        _,
        trace_id,
        _,
        schema,
        scale,
        config_version,
        _,
        _,
        members,
        chars,
        words,
        cells,
        packed_prints,
        correct,
        packed_similarity,
    ) = row
    fingerprints, similarity = _unpacked_traits(packed_prints, packed_similarity)
    if not cells:
        return None  # no cell: the records' rule decides (it refuses such a session)
    reviewer_column, model_column, position_column, score_column, own_column = zip(*_CELL.iter_unpack(cells))
    if len(set(zip(reviewer_column, model_column))) < len(reviewer_column):
        return None
    reviewers = {member: index for index, member in enumerate(dict.fromkeys(reviewer_column))}
    models = {member: index for index, member in enumerate(dict.fromkeys(model_column))}
    # words where the records carry them, else characters (llm-council-core's), as digest_from_records
    in_words = words[model_column[0]] is not None
    lengths = words if in_words else chars
    low, high = score_bounds(scale or DEFAULT_SCALE)  # both cached: a store holds a few scales and versions
    span = high - low
    return SessionDigest(
        session_id=session_id,
        tenant_id=tenant_id or "default",
        ts_ms=int(moment.timestamp() * 1000),  # the instant its text names (a naive one was stored as UTC)
        trace_id=trace_id,
        config_version=config_version,
        reviewers=tuple(members[r] for r in reviewers),
        models=tuple(members[m] for m in models),
        lengths=tuple(float(lengths[m] or 0) for m in models),
        length_unit="words" if in_words else "chars",
        cell_reviewer=tuple(map(reviewers.__getitem__, reviewer_column)),
        cell_model=tuple(map(models.__getitem__, model_column)),
        cell_position=position_column
        if position_is_display_order(schema)
        else (-1,) * len(position_column),  # -1 stored for none
        cell_score=tuple([(score - low) / span for score in score_column]),
        cell_own=tuple(map(bool, own_column)),
        fingerprints=tuple(fingerprints[m] for m in models) if fingerprints else (),
        correct=tuple(correct[m] for m in models) if correct else (),
        cell_similarity=tuple(similarity) if similarity else (),
    )


# llm-council-core's records lack these; what its files mean by their absence (as the report reads them)
_REFERENCE_DEFAULTS = {"tenant_id": "default", "trace_id": None, "response_length_words": None}


def as_our_record(record: dict[str, Any], contract: type[BaseModel]) -> dict[str, Any]:
    """A bias metric record with every field of ours: llm-council-core's gain the tenant
    "default", no trace id, no word counts (the report then uses characters), the self flag it
    never stored (reviewer = model) and our defaults for anything else optional. A record
    lacking a required field or holding a value of the wrong type is refused (ValueError, one line)."""
    from pydantic import ValidationError

    complete = all(name in record for name in contract.model_fields)
    if not complete:
        record = {
            **_REFERENCE_DEFAULTS,
            "is_self_review": record.get("reviewer_id") == record.get("model_id"),
            **record,
        }
    try:
        validated = contract.model_validate(record)
    except ValidationError as error:
        problem = error.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise ValueError(f"session {record.get('session_id')!r}: {where}: {problem['msg'].lower()}") from None
    return record if complete else validated.model_dump()
