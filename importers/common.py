"""What every reader shares: files read as their contents (gzip too) in bounded lines, verdict
ids, one-line errors `FILE:LINE: field: reason`, typed reads of a source's fields, and the
import's clock for sources that record no time."""

from __future__ import annotations

import gzip
import hashlib
import io
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from bias_audit.schemas.errors import CommandError

_UNSAFE = re.compile(r"[\s{}\x00-\x1f]+")
MAX_ID = 256
MAX_NAME = 256  # a model or judge name, as the event contract allows
MAX_LINE_BYTES = 4 * 1024 * 1024  # an event's own limit: a line past it is refused unread
GZIP_MAGIC = b"\x1f\x8b"

Progress = Callable[[int], None]  # called with the bytes of the file read since the last call


class SourceError(CommandError):
    """A file that is not the named format: the one-line reason says which field is missing or wrong."""


def safe_id(*parts: object) -> str:
    """A verdict or item id from a source's fields: printable, no spaces or braces (ids end up in
    Redis keys), at most 256 characters (longer ones keep a prefix and a digest)."""
    text = _UNSAFE.sub("_", ":".join("" if p is None else str(p) for p in parts))  # ":" is safe
    if len(text) <= MAX_ID:
        return text
    return text[: MAX_ID - 17] + "~" + hashlib.sha256(text.encode()).hexdigest()[:16]


def text_digest(text: str) -> str:
    """A question named without its text (the query is never stored)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def iso(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def now_iso() -> str:
    return iso(datetime.now(timezone.utc))


def epoch_iso(seconds: object, fallback: str) -> str:
    if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and 0 < seconds < 1e11:
        return iso(datetime.fromtimestamp(float(seconds), timezone.utc))
    return fallback


@contextmanager
def opened(path: Path) -> Iterator[tuple[io.BufferedIOBase, io.BufferedIOBase]]:
    """(contents, raw file): a gzip file (told by its first bytes, whatever its name) is read as
    what it holds, and one that cannot be is one line; the raw file's position is how far the
    reading got."""
    with path.open("rb") as raw:
        if raw.read(2) != GZIP_MAGIC:
            raw.seek(0)
            yield raw, raw
            return
        raw.seek(0)
        try:
            with gzip.GzipFile(fileobj=raw, mode="rb") as contents:
                yield contents, raw
        except (gzip.BadGzipFile, EOFError) as error:
            raise SourceError(f"{path}: not a readable gzip file ({error or 'it ends early'})") from None


def bounded_lines(path: Path, progress: Progress | None = None) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of every line, none over MAX_LINE_BYTES: a longer one is refused after
    reading only that much of it."""
    with opened(path) as (handle, raw):
        done = 0
        number = 0
        while True:
            line = handle.readline(MAX_LINE_BYTES + 1)
            if not line:
                break
            number += 1
            if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                raise SourceError(
                    f"{path}:{number}: the line is longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB, an event's limit"
                )
            if progress is not None and number % 512 == 0:
                done = _advance(progress, raw, done)
            yield number, line
        if progress is not None:
            _advance(progress, raw, done)


def _advance(progress: Progress, raw: io.BufferedIOBase, done: int) -> int:
    position = raw.tell()
    if position > done:
        progress(position - done)
    return position


def file_bytes(path: Path, progress: Progress | None = None, block: int = 1 << 20) -> bytes:
    """A whole file's contents (a JSON document), read in blocks; a line over MAX_LINE_BYTES is
    refused as soon as the reading has passed that much of it."""
    assert block <= MAX_LINE_BYTES  # so a line within one block is never over the limit
    parts: list[bytes] = []
    run = 0  # the current line's bytes so far
    with opened(path) as (handle, raw):
        done = 0
        while chunk := handle.read(block):
            first = chunk.find(b"\n")
            if run + (len(chunk) if first < 0 else first) > MAX_LINE_BYTES:
                line = sum(part.count(b"\n") for part in parts) + 1
                raise SourceError(
                    f"{path}:{line}: the line is longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB, an event's limit"
                )
            run = run + len(chunk) if first < 0 else len(chunk) - chunk.rfind(b"\n") - 1
            parts.append(chunk)
            if progress is not None:
                done = _advance(progress, raw, done)
    return b"".join(parts)


def jsonl_rows(path: Path, progress: Progress | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) per non-blank line; a line that is not a JSON object is an error."""
    for number, line in bounded_lines(path, progress):
        if not line.strip():
            continue
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            raise SourceError(f"{path}:{number}: not valid JSON ({error})") from None
        if not isinstance(row, dict):
            raise SourceError(f"{path}:{number}: expected a JSON object, got {json_type(row)}")
        yield number, row


def json_type(value: object) -> str:
    """A value's type as JSON names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, dict) else type(value).__name__


_KIND_NAMES = {
    str: "a string",
    int: "an integer",
    float: "a number",
    list: "an array",
    dict: "an object",
    bool: "a boolean",
}


def _kind_name(kinds: type | tuple[type, ...]) -> str:
    if kinds == (int, float) or kinds == (float, int):
        return "a number"
    return " or ".join(_KIND_NAMES.get(k, k.__name__) for k in (kinds if isinstance(kinds, tuple) else (kinds,)))


def typed(
    value: Any, field: str, where: str, kinds: type | tuple[type, ...] = str, *, max_length: int | None = None
) -> Any:
    """A value of the right JSON type (a boolean is never a number), else the one-line reason. A
    string with a max_length is a name or an id: it must not be blank."""
    if type(value) is str and kinds is str:  # the common case, without the general checks
        if max_length is not None and (len(value) > max_length or not value.strip()):
            return typed(value, field, where, (str,), max_length=max_length)
        return value
    allowed = kinds if isinstance(kinds, tuple) else (kinds,)
    if not isinstance(value, allowed) or isinstance(value, bool) and bool not in allowed:
        raise SourceError(f"{where}: {field}: must be {_kind_name(kinds)}, got {json_type(value)}")
    if isinstance(value, float) and value != value:
        raise SourceError(f"{where}: {field}: must be a number, got NaN")
    if isinstance(value, str):
        if max_length is not None and len(value) > max_length:
            raise SourceError(f"{where}: {field}: {len(value)} characters, over the limit of {max_length}")
        if max_length is not None and not value.strip():
            raise SourceError(f"{where}: {field}: must not be empty")
    return value


def need(
    row: dict[str, Any],
    field: str,
    where: str,
    kinds: type | tuple[type, ...] = str,
    *,
    max_length: int | None = MAX_NAME,
) -> Any:
    """A required field of the right JSON type, else the one-line reason."""
    if field not in row or row[field] is None:
        raise SourceError(f"{where}: {field}: missing")
    return typed(row[field], field, where, kinds, max_length=max_length)


def optional(
    row: dict[str, Any],
    field: str,
    where: str,
    kinds: type | tuple[type, ...] = str,
    *,
    max_length: int | None = MAX_NAME,
) -> Any:
    """An optional field: None when absent or null, else of the right JSON type."""
    value = row.get(field)
    return None if value is None else typed(value, field, where, kinds, max_length=max_length)


def text_of(row: dict[str, Any], field: str, where: str) -> str | None:
    """An optional text (an answer, an instruction): any length here (the event's limits apply), empty too."""
    return optional(row, field, where, str, max_length=None)


def one_of(value: Any, field: str, where: str, accepted: tuple[str, ...]) -> str:
    """A value from a fixed list; the reason lists every accepted value."""
    if not isinstance(value, str) or value not in accepted:
        shown = repr(value) if isinstance(value, str) and len(value) <= 40 else json_type(value)
        raise SourceError(f"{where}: {field}: {shown} is not one of {', '.join(accepted)}")
    return value


def candidate(model: str, text: object = None, **extra: Any) -> dict[str, Any]:
    """A candidate; its answer's text (when the source has it) is read for its length by the
    event's validation, then dropped."""
    out: dict[str, Any] = {"model": model}
    if isinstance(text, str):
        out["response"] = text
    out.update({k: v for k, v in extra.items() if v is not None and v is not False})
    return out
