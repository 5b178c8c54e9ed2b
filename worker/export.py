"""`bias-audit export`: the stored records as the contract's JSONL."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import orjson

from bias_audit.schemas.errors import CommandError
from bias_audit.schemas.safe_text import row_name


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


@contextmanager
def stored_rows(url: str, kind: str, tenant: str | None, start: datetime | None) -> Iterator[Iterator[dict]]:
    """The store's records, interaction records or verdicts in time order (a server-side cursor);
    a store that cannot be read is a one-line CommandError."""
    import psycopg

    from bias_audit.schemas.safe_text import reason_of, redact
    from bias_audit.storage.postgres import connect, read_interactions, read_records
    from bias_audit.storage.postgres.verdicts import read_verdicts

    readers = {"records": read_records, "interactions": read_interactions, "verdicts": read_verdicts}
    try:
        with connect(url) as connection:
            yield readers[kind](connection, tenant=tenant, since=start)
    except psycopg.Error as error:
        raise CommandError(f"cannot read the store at {redact(url)}: {reason_of(error)}", exit_code=1) from None


def export_records(
    url: str,
    *,
    tenant: str | None,
    start: datetime | None,
    output: Path | None,
    kind: str = "records",
    advance: Callable[[int], object] = lambda n: None,
) -> int:
    """Write every matching record (interaction record, verdict), one JSON line each; returns how many."""
    # mode 0600, as the worker's own files: the records name tenants, models and trace ids
    handle = open(output, "wb", opener=lambda path, flags: os.open(path, flags, 0o600)) if output else sys.stdout.buffer
    if output:
        os.fchmod(handle.fileno(), 0o600)  # a file that was there keeps its old mode otherwise
    count = 0
    try:
        with stored_rows(url, kind, tenant, start) as rows:
            for record in rows:
                try:
                    line = orjson.dumps(record)
                except orjson.JSONEncodeError as error:  # a number past 64 bits, stored before intake bounded them
                    raise CommandError(
                        f"{row_name(kind, record)} cannot be exported: {error}; fix or delete that "
                        "row, then export again",
                        exit_code=1,
                    ) from None
                handle.write(line + b"\n")
                count += 1
                if count % 10_000 == 0:
                    advance(10_000)
    finally:
        if output:
            handle.close()
        else:
            handle.flush()
    return count


def parquet_folder(output: Path | None) -> Path:
    """The folder a Parquet export goes to: given, and new or empty (parts never mix with old ones)."""
    if output is None:
        raise CommandError("--format parquet writes a folder of files: give it with --output DIR")
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise CommandError(f"--output {output} must be a new or empty folder")
    return output


def export_parquet(
    url: str,
    *,
    tenant: str | None,
    start: datetime | None,
    output: Path,
    kind: str = "records",
    advance: Callable[[int], object] = lambda n: None,
):
    """Every matching row as Parquet under `output`, one folder per UTC day (storage.parquet_export).
    Written beside it and moved into place when whole: an export that stops (a row that cannot be
    exported, a store that fails) leaves no folder half written."""
    import shutil
    import tempfile

    from bias_audit.storage.parquet_export import ParquetExport, UnfitRow, write_parquet

    output.parent.mkdir(parents=True, exist_ok=True)
    # mode 0700 (mkdtemp's): the rows name tenants, models and trace ids
    partial = Path(tempfile.mkdtemp(prefix=f".{output.name}.", suffix=".partial", dir=output.parent))
    try:
        with stored_rows(url, kind, tenant, start) as rows:
            written = write_parquet(rows, kind, partial, advance=advance)
        if output.exists():
            output.rmdir()  # checked empty before the export began
        partial.rename(output)
    except UnfitRow as error:
        raise CommandError(str(error), exit_code=1) from None
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return ParquetExport(written.rows, [output / file.relative_to(partial) for file in written.files])
