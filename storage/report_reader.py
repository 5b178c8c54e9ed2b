"""Stream stored records into per-tenant windows, with memory bounded by the window.

A session's records are contiguous in a file (a worker appends a session in one write), so
the reader finds where one session ends and the next begins, parses only the first line of
each session, and keeps the raw lines of a session only while it can still be among the
newest 2N of its tenant (the window, and the window before it for the trend tests). Every
other line costs one `startswith`; lines are parsed in full only for the sessions reported.
"""

from __future__ import annotations

import gc
import glob
import heapq
from bisect import bisect_left
from contextlib import contextmanager
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from analysis.digest import BadRecord, SessionDigest, StoredCell, digest_from_records, timestamp_ms
from analysis.window_cells import WindowCells, window_cells

from .jsonl_store import record_files

DAY_MS = 86_400_000


class _SessionHead(msgspec.Struct, gc=False):
    """What the first line of a session says about where it belongs."""

    session_id: str
    timestamp: str
    tenant_id: str | None = None


# strict=False: numbers written as strings ("7") are read as numbers, as json.loads + float() did
_SESSION = msgspec.json.Decoder(list[StoredCell], strict=False)
_RECORD = msgspec.json.Decoder(StoredCell, strict=False)
_HEAD = msgspec.json.Decoder(_SessionHead, strict=False)


class InputError(ValueError):
    """An input path that cannot be read; the message names it."""


def expand_inputs(inputs: Iterable[str]) -> list[Path]:
    """Files, directories (every *.jsonl under them) and quoted glob patterns."""
    paths: list[Path] = []
    for raw in inputs:
        path = Path(raw)
        if path.exists():
            paths.append(path)
        elif any(ch in raw for ch in "*?["):
            matches = sorted(glob.glob(raw, recursive=True))
            if not matches:
                raise InputError(f"no file matches {raw!r}")
            paths.extend(Path(m) for m in matches)
        else:
            raise InputError(f"{raw}: no such file or directory")
    files = record_files(paths)
    if not files:
        raise InputError("no .jsonl files under " + ", ".join(inputs))
    return files


def window_bounds(times: list[int], newest_ms: int | None, sessions: int | None,
                  days: float | None) -> tuple[int, int]:
    """Over sessions sorted oldest first: (first of the window before, first of the window).
    The window is the newest `sessions` within `days` of the tenant's newest event (the worker's
    rule); the window before is the `sessions` preceding it (all of them when unlimited)."""
    first = bisect_left(times, newest_ms - int(days * DAY_MS)) if days is not None and newest_ms is not None else 0
    if sessions is not None:
        first = max(first, len(times) - sessions)
    return max(0, first - (sessions or first)), first


@dataclass
class _Run:
    ts_ms: int
    order: int
    session_id: str
    lines: list[bytes]


@dataclass
class _TenantWindow:
    keep: int | None  # sessions to hold; None = all
    # (ts, read order, run): tuples compare in C, oldest first, then read order
    heap: list[tuple[int, int, _Run]] = field(default_factory=list)
    held: dict[str, _Run] = field(default_factory=dict)
    newest_ms: int | None = None

    def offer(self, run: _Run) -> bool:
        """Hold the run if it is among the newest `keep`; False if it was not taken."""
        if self.newest_ms is None or run.ts_ms > self.newest_ms:
            self.newest_ms = run.ts_ms
        entry = (run.ts_ms, run.order, run)
        if self.keep is not None and len(self.heap) >= self.keep:
            if entry[:2] <= self.heap[0][:2]:
                return False
            evicted = heapq.heapreplace(self.heap, entry)[2]
            del self.held[evicted.session_id]
        else:
            heapq.heappush(self.heap, entry)
        self.held[run.session_id] = run
        return True


@dataclass
class ReadStats:
    files: int = 0
    lines: int = 0
    records: int = 0
    sessions: int = 0
    duplicate_sessions: int = 0
    skipped_lines: int = 0
    skipped_examples: list[str] = field(default_factory=list)

    def skip(self, where: str, limit: int = 5) -> None:
        self.skipped_lines += 1
        if len(self.skipped_examples) < limit:
            self.skipped_examples.append(where)


@dataclass
class TenantWindows:
    tenant_id: str
    cells: WindowCells  # the window before, then the window
    previous_sessions: int

    @property
    def current(self) -> list[SessionDigest]:
        """The window's sessions (metadata)."""
        return list(self.cells.digests[self.previous_sessions:])


@contextmanager
def _collector_paused():
    """The window's lines and digests are hundreds of thousands of live objects and none is
    garbage: the cyclic collector would rescan them again and again (it tripled parse time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _advance(progress: Callable[[int], None], handle, offset: int) -> int:
    """Report the bytes read since `offset` (position asked only now and then, not per line)."""
    position = handle.tell()
    progress(position - offset)
    return position


def _session_prefix(line: bytes) -> bytes | None:
    """The line up to the end of its session_id value: every record of the session starts so
    when session_id precedes the per-record fields (ours and llm-council-core's do)."""
    at = line.find(b'"session_id"')
    if at < 0:
        return None
    start = line.find(b'"', line.find(b":", at) + 1)
    end = line.find(b'"', start + 1)
    return line[: end + 1] if start > 0 and end > start else None


class WindowReader:
    def __init__(self, *, sessions: int | None, days: float | None, tenant: str | None = None) -> None:
        self.sessions = sessions
        self.days = days
        self.tenant = tenant
        self.stats = ReadStats()
        self._tenants: dict[str, _TenantWindow] = {}
        self._order = 0

    def _window(self, tenant: str) -> _TenantWindow:
        window = self._tenants.get(tenant)
        if window is None:
            window = self._tenants[tenant] = _TenantWindow(None if self.sessions is None else 2 * self.sessions)
        return window

    def read(self, files: list[Path], progress: Callable[[int], None] | None = None) -> None:
        self.stats.files = len(files)
        with _collector_paused():
            for path in files:
                self._read_file(path, progress)

    def _read_file(self, path: Path, progress: Callable[[int], None] | None) -> None:
        stats = self.stats
        prefix: bytes | None = None
        current_id: str | None = None
        lines: list[bytes] | None = None  # the current session's lines while it is held
        reported = number = offset = 0
        try:
            handle = open(path, "rb")
        except OSError as error:
            raise InputError(f"{path}: {error.strerror}") from None
        with handle:
            for number, line in enumerate(handle, 1):
                if prefix is not None and line.startswith(prefix):  # the hot loop: most lines end here
                    if lines is not None:
                        lines.append(line)
                    continue
                if number > reported + 65536 and progress is not None:
                    reported, offset = number, _advance(progress, handle, offset)
                if not line.strip():
                    continue
                try:
                    head = _HEAD.decode(line)
                    session_id, tenant = head.session_id, head.tenant_id or "default"
                    ts = timestamp_ms(head.timestamp)
                except (msgspec.DecodeError, ValueError) as error:
                    stats.skip(f"{path}:{number}: {error}")
                    continue
                if session_id == current_id:  # same session, fields in another order
                    if lines is not None:
                        lines.append(line)
                    continue
                current_id, prefix = session_id, _session_prefix(line)
                stats.sessions += 1
                lines = None
                if self.tenant is not None and tenant != self.tenant:
                    continue
                window = self._window(tenant)
                if session_id in window.held:
                    stats.duplicate_sessions += 1  # a redelivered batch appended again
                    continue
                self._order += 1
                run = _Run(ts, self._order, session_id, [line])
                if window.offer(run):
                    lines = run.lines
            stats.lines += number
            if progress is not None:
                _advance(progress, handle, offset)

    def _rows(self, run: _Run) -> list[StoredCell]:
        try:  # a session's lines as one JSON array: one parser call instead of one per line
            return _SESSION.decode(b"[" + b",".join(run.lines) + b"]")
        except msgspec.DecodeError:
            pass
        rows = []
        for line in run.lines:  # find the bad lines, keep the rest
            try:
                rows.append(_RECORD.decode(line))
            except msgspec.DecodeError as error:
                self.stats.skip(f"session {run.session_id}: {error}")
        return rows

    def _cells(self, runs: list[_Run]) -> tuple[WindowCells, set[str]]:
        """The runs' cells, and the ids of the sessions read (an unreadable one is left out).
        Session by session: a session's records are parsed, reduced to its digest and dropped,
        which stays in the CPU cache (holding every record first was 2x slower)."""
        digests = []
        for run in runs:
            rows = self._rows(run)
            if not rows:
                continue
            try:
                digests.append(digest_from_records(rows))
            except BadRecord as error:
                self.stats.skip(str(error))
                continue
            self.stats.records += len(rows)
        return window_cells(digests), {d.session_id for d in digests}

    def windows(self) -> list[TenantWindows]:
        """Per tenant, oldest first: the window (newest N sessions within D days of the newest)
        and the N sessions before it."""
        with _collector_paused():
            return self._windows()

    def _windows(self) -> list[TenantWindows]:
        out = []
        for tenant in sorted(self._tenants):
            window = self._tenants[tenant]
            runs = [run for _, _, run in sorted(window.heap, key=lambda entry: entry[:2])]
            first_previous, first_current = window_bounds([run.ts_ms for run in runs], window.newest_ms,
                                                          self.sessions, self.days)
            previous = runs[first_previous:first_current]
            cells, kept = self._cells(runs[first_previous:])
            # a session dropped as unreadable shifts the split: count the previous ones kept
            before = sum(1 for run in previous if run.session_id in kept)
            out.append(TenantWindows(tenant, cells, before))
        return out
