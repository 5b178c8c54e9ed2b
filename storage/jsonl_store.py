"""Append-only JSONL record store: one file per worker process, mode 0600.

One file per process means horizontally scaled workers never interleave lines; each batch is
written with a single os.write on an O_APPEND descriptor, so a crash leaves at most one torn
last line, which the reader skips.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from bias_audit.analysis.records import SessionRecords


class JsonlRecordStore:
    def __init__(self, directory: Path, file_stem: str) -> None:
        self.directory = Path(directory)
        self.path = self.directory / f"{file_stem}.jsonl"
        self._fd: int | None = None

    def _open(self) -> int:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(self.path, flags, 0o600)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise PermissionError(f"{self.path} is not a regular file")
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.fchmod(fd, 0o600)
        return fd

    def append(self, records: Iterable[dict[str, Any]]) -> int:
        """Append records; returns bytes written. Raises OSError (disk full...) to the caller."""
        payload = b"".join(orjson.dumps(r) + b"\n" for r in records)
        if not payload:
            return 0
        if self._fd is None:
            self._fd = self._open()
        view = memoryview(payload)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        return len(payload)

    def append_sessions(self, sessions: list[SessionRecords]) -> int:
        """The council consumer's write: each session's records, expanded."""
        return self.append(record for session in sessions for record in session.records())

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def record_files(paths: Iterable[Path]) -> list[Path]:
    """Expand directories to their *.jsonl files (every worker's file), sorted for stable order."""
    found: list[Path] = []
    for path in paths:
        path = Path(path)
        if path.is_dir():
            found.extend(sorted(path.rglob("*.jsonl")))
        else:
            found.append(path)
    return found


def read_records(paths: Iterable[Path], *, skipped: list[str] | None = None) -> Iterator[dict[str, Any]]:
    """Stream records from our files or llm-council-core's; torn or malformed lines are skipped
    (and named in `skipped` when given), never fatal."""
    for path in record_files(paths):
        with open(path, "rb") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    record = orjson.loads(line)
                except orjson.JSONDecodeError:
                    if skipped is not None:
                        skipped.append(f"{path}:{number}")
                    continue
                if isinstance(record, dict):
                    yield record
                elif skipped is not None:
                    skipped.append(f"{path}:{number}")


def unique_records(records: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Drop repeats of (session, reviewer, model): a worker that dies between appending and
    acknowledging leaves its batch to be appended again by the one that takes over."""
    seen: set[tuple[Any, Any, Any]] = set()
    for record in records:
        key = (record.get("session_id"), record.get("reviewer_id"), record.get("model_id"))
        if key not in seen:
            seen.add(key)
            yield record
