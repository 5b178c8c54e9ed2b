"""What every reader shares: verdict ids, one-line errors that name the file, line and field,
and the import's clock for sources that record no time."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from bias_audit.analysis.judge_games import word_count
from bias_audit.schemas.errors import CommandError

_UNSAFE = re.compile(r"[\s{}\x00-\x1f]+")
MAX_ID = 256


class SourceError(CommandError):
    """A file that is not the named format: the one-line reason says which field is missing or wrong."""


def safe_id(*parts: object) -> str:
    """A verdict or item id from a source's fields: printable, no spaces or braces (ids end up in
    Redis keys), at most 256 characters (longer ones keep a prefix and a digest)."""
    text = ":".join("" if p is None else _UNSAFE.sub("_", str(p)) for p in parts)
    if len(text) <= MAX_ID:
        return text
    return text[:MAX_ID - 17] + "~" + hashlib.sha256(text.encode()).hexdigest()[:16]


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


def jsonl_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) per non-blank line; a line that is not a JSON object is an error."""
    with path.open("rb") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError as error:
                raise SourceError(f"{path}:{number}: not valid JSON ({error})") from None
            if not isinstance(row, dict):
                raise SourceError(f"{path}:{number}: expected a JSON object, got {type(row).__name__}")
            yield number, row


def need(row: dict[str, Any], field: str, where: str, kinds: type | tuple[type, ...] = str) -> Any:
    """A required field of the right JSON type, else the one-line reason."""
    if field not in row:
        raise SourceError(f"{where}: missing field {field!r}")
    value = row[field]
    if not isinstance(value, kinds) or isinstance(value, bool) and bool not in (kinds if isinstance(kinds, tuple) else (kinds,)):
        expected = kinds.__name__ if isinstance(kinds, type) else " or ".join(k.__name__ for k in kinds)
        raise SourceError(f"{where}: field {field!r} must be {expected}, got {type(value).__name__}")
    return value


def words(text: object) -> int | None:
    return word_count(text) if isinstance(text, str) else None


def candidate(model: str, text: object = None, **extra: Any) -> dict[str, Any]:
    """A candidate with its length in words (never its text)."""
    out: dict[str, Any] = {"model": model, "length_words": words(text)}
    out.update({k: v for k, v in extra.items() if v is not None and v is not False})
    return out
