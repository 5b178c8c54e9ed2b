"""`bias-audit export`: the stored records as the contract's JSONL."""

from __future__ import annotations

import os
import sys
from datetime import datetime
from pathlib import Path

import orjson

from bias_audit.schemas.errors import CommandError


def parse_since(since: str | None, flag: str = "--since") -> datetime | None:
    """A time option (--since, --until) as an aware datetime, or a CommandError saying what is
    wrong with it."""
    if since is None:
        return None
    try:
        start = datetime.fromisoformat(since)
    except ValueError:
        raise CommandError(f"{flag} {since!r} is not an ISO 8601 time, e.g. 2026-11-01T00:00:00Z") from None
    if start.tzinfo is None:
        raise CommandError(f"{flag} {since!r} has no timezone; add Z or an offset")
    return start


def export_records(url: str, *, tenant: str | None, start: datetime | None, output: Path | None,
                   interactions: bool = False) -> int:
    """Write every matching record (or interaction record), one JSON line each; returns how many."""
    import psycopg

    from bias_audit.schemas.safe_text import reason_of, redact
    from bias_audit.storage.postgres import connect, read_interactions, read_records

    # mode 0600, as the worker's own files: the records name tenants, models and trace ids
    handle = open(output, "wb", opener=lambda path, flags: os.open(path, flags, 0o600)) if output else sys.stdout.buffer
    if output:
        os.fchmod(handle.fileno(), 0o600)  # a file that was there keeps its old mode otherwise
    count = 0
    try:
        with connect(url) as connection:
            for record in (read_interactions if interactions else read_records)(connection, tenant=tenant, since=start):
                handle.write(orjson.dumps(record) + b"\n")
                count += 1
    except psycopg.Error as error:
        raise CommandError(f"cannot read the store at {redact(url)}: {reason_of(error)}", exit_code=1) from None
    finally:
        if output:
            handle.close()
        else:
            handle.flush()
    return count
