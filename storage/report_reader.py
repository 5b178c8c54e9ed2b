"""Stream stored records into per-tenant windows, with memory bounded by the window.

A session's records are contiguous in a file (a worker appends a session in one write), so
the reader finds where one session ends and the next begins, parses only the first line of
each session, and keeps where a session's lines are (file offsets, not the lines) only while it
can still be among the newest 2N of its tenant (the window, and the window before it for the
trend tests). The file is read in blocks; every other line costs a `startswith` and a `find` on
the block, and lines are read again and parsed in full only for the sessions reported, in file
order, a bounded batch at a time.
"""

from __future__ import annotations

import glob
import heapq
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from bias_audit.analysis.digest import BadRecord, SessionDigest, StoredCell, digest_from_records, timestamp_ms
from bias_audit.analysis.window import window_bounds
from bias_audit.analysis.window_cells import WindowCells, WindowCellsBuilder
from bias_audit.gc_tuning import collector_paused

from .jsonl_store import record_files


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


@dataclass(slots=True)
class _Run:
    ts_ms: int
    order: int
    session_id: str
    file: int  # index into the files read
    spans: list[tuple[int, int]]  # (start, end) byte offsets of the session's lines in its file
    lines: int = 1  # bounds its records, so the window's columns are allocated once

    def hold(self, start: int, end: int, lines: int) -> None:
        """The `lines` lines at start..end belong to the session too (adjacent ones join the last span)."""
        self.lines += lines
        last = self.spans[-1]
        if last[1] == start:
            self.spans[-1] = (last[0], end)
        else:
            self.spans.append((start, end))


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
    def current_ids(self) -> list[str]:
        """The window's sessions' ids, oldest first."""
        return list(self.cells.session_ids[self.previous_sessions :])


def _session_prefix(line: bytes) -> bytes | None:
    """The line up to the end of its session_id value: every record of the session starts so
    when session_id precedes the per-record fields (ours and llm-council-core's do)."""
    at = line.find(b'"session_id"')
    if at < 0:
        return None
    start = line.find(b'"', line.find(b":", at) + 1)
    end = line.find(b'"', start + 1)
    return line[: end + 1] if start > 0 and end > start else None


_ADVISE = hasattr(os, "posix_fadvise")


def _half_of_memory() -> int:
    """Half of the memory this process may use: the machine's, or its container's limit (cgroup v2)."""
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        memory = 1 << 63
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
    except OSError:
        limit = "max"
    if limit.isdigit():
        memory = min(memory, int(limit))
    return memory // 2


# A file larger than this is read once, front to back, and would only evict its own first pages
# from the page cache: its pages are dropped as they are read.
DROP_CACHE_ABOVE = _half_of_memory()
READ_BLOCK = 1 << 22  # 4 MB reads: few system calls, few carried-over lines


class _FileScan:
    """Where one file's scan is: the current session, its line prefix, its held lines."""

    def __init__(self, reader: WindowReader, path: Path, file: int) -> None:
        self.reader = reader
        self.path = path
        self.file = file
        self.prefix: bytes | None = None
        self.current_id: str | None = None
        self.held: _Run | None = None  # the current session while it is held
        self.lines = 0

    def scan(self, data: bytes, pos: int, end: int, base: int) -> None:
        """The lines data[pos:end] (end follows a newline), data[0] being at `base` in the file.
        The hot loop: each line of a run of the current session costs a `startswith` and a
        `find`, and the run one span."""
        lines = self.lines
        prefix = self.prefix
        find, startswith = data.find, data.startswith
        while pos < end:
            if prefix is not None and startswith(prefix, pos, end):
                run, first = pos, lines
                pos = find(b"\n", pos, end) + 1
                lines += 1
                while startswith(prefix, pos, end):
                    pos = find(b"\n", pos, end) + 1
                    lines += 1
                if self.held is not None:
                    self.held.hold(base + run, base + pos, lines - first)
                continue
            line_end = find(b"\n", pos, end) + 1
            lines += 1
            self.reader._offer(lines, data[pos:line_end], base + pos, self)
            prefix = self.prefix
            pos = line_end
        self.lines = lines


class WindowReader:
    def __init__(self, *, sessions: int | None, days: float | None, tenant: str | None = None) -> None:
        self.sessions = sessions
        self.days = days
        self.tenant = tenant
        self.stats = ReadStats()
        self._tenants: dict[str, _TenantWindow] = {}
        self._order = 0
        self._files: list[Path] = []

    def _window(self, tenant: str) -> _TenantWindow:
        window = self._tenants.get(tenant)
        if window is None:
            window = self._tenants[tenant] = _TenantWindow(None if self.sessions is None else 2 * self.sessions)
        return window

    def read(self, files: list[Path], progress: Callable[[int], None] | None = None) -> None:
        """progress(bytes) is called after each block read."""
        self.stats.files = len(files)
        with collector_paused():
            for path in files:
                self._files.append(path)
                self._read_file(path, progress)

    def _read_file(self, path: Path, progress: Callable[[int], None] | None) -> None:
        """The file in large blocks: a session's lines are found with `startswith`/`find` on the
        block and kept as one span per block, never as one object per line."""
        scan = _FileScan(self, path, len(self._files) - 1)
        try:
            handle = open(path, "rb", buffering=0)
        except OSError as error:
            raise InputError(f"{path}: {error.strerror}") from None
        with handle:
            carry = b""  # a line cut by the end of the previous block
            fd, done, offset = handle.fileno(), 0, 0
            drop = _ADVISE and os.fstat(fd).st_size > DROP_CACHE_ABOVE
            if _ADVISE:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)  # a larger read-ahead
            while block := handle.read(READ_BLOCK):
                if drop:
                    os.posix_fadvise(fd, done, len(block), os.POSIX_FADV_DONTNEED)
                    done += len(block)
                at = offset  # the block's place in the file
                offset += len(block)
                first = block.find(b"\n") + 1
                if not first:  # no line ends in this block (a very long line)
                    carry += block
                    continue
                if carry:
                    scan.scan(carry + block[:first], 0, len(carry) + first, at - len(carry))
                    start = first
                else:
                    start = 0
                last = block.rfind(b"\n") + 1
                scan.scan(block, start, last, at)
                carry = block[last:]
                if progress is not None:
                    progress(len(block))
            if carry:  # a last line without its newline: the span ends at the file's end
                scan.scan(carry + b"\n", 0, len(carry) + 1, offset - len(carry))
        self.stats.lines += scan.lines

    def _offer(self, number: int, line: bytes, at: int, scan: _FileScan) -> None:
        """A line that does not continue the current session: a new session, the current one
        with its fields in another order, a blank line, or an unreadable one."""
        stats = self.stats
        if not line.strip():
            return
        try:
            head = _HEAD.decode(line)
            session_id, tenant = head.session_id, head.tenant_id or "default"
            ts = timestamp_ms(head.timestamp)
        except (msgspec.DecodeError, ValueError) as error:
            stats.skip(f"{scan.path}:{number}: {error}")
            return
        if session_id == scan.current_id:  # same session, fields in another order
            if scan.held is not None:
                scan.held.hold(at, at + len(line), 1)
            return
        scan.current_id, scan.prefix = session_id, _session_prefix(line)
        stats.sessions += 1
        scan.held = None
        if self.tenant is not None and tenant != self.tenant:
            return
        window = self._window(tenant)
        if session_id in window.held:
            stats.duplicate_sessions += 1  # a redelivered batch appended again
            return
        self._order += 1
        run = _Run(ts, self._order, session_id, scan.file, [(at, at + len(line))])
        if window.offer(run):
            scan.held = run

    def _cells(self, runs: list[_Run]) -> tuple[WindowCells, set[str]]:
        """The runs' cells, and the ids of the sessions read (an unreadable one is left out)."""
        cells, records, skipped = _digested(runs, self._files)
        self.stats.records += records
        for where in skipped:
            self.stats.skip(where)
        return cells, set(cells.session_ids)

    def windows(self) -> list[TenantWindows]:
        """Per tenant, oldest first: the window (newest N sessions within D days of the newest)
        and the N sessions before it."""
        with collector_paused():
            return self._windows()

    def _windows(self) -> list[TenantWindows]:
        out = []
        for tenant in sorted(self._tenants):
            window = self._tenants[tenant]
            runs = [run for _, _, run in sorted(window.heap, key=lambda entry: entry[:2])]
            first_previous, first_current = window_bounds(
                [run.ts_ms for run in runs], window.newest_ms, self.sessions, self.days
            )
            previous = runs[first_previous:first_current]
            cells, kept = self._cells(runs[first_previous:])
            # a session dropped as unreadable shifts the split: count the previous ones kept
            before = sum(1 for run in previous if run.session_id in kept)
            out.append(TenantWindows(tenant, cells, before))
        return out


DIGEST_BATCH = 4096  # sessions digested before their columns are added: bounds the digests held


def _digested(runs: list[_Run], files: list[Path]) -> tuple[WindowCells, int, list[str]]:
    """The runs' cells (oldest first), their records' count and the reasons of what was skipped.
    A session's lines are read back, parsed and reduced to its digest; a batch of digests becomes
    columns and is dropped, so memory holds the window's columns, not its sessions' objects."""
    builder = WindowCellsBuilder(len(runs), sum(run.lines for run in runs))
    batch: list[SessionDigest] = []
    skipped: list[str] = []
    records = 0
    handles: dict[int, int] = {}
    try:
        for run in runs:
            fd = handles.get(run.file)
            if fd is None:
                try:
                    fd = handles[run.file] = os.open(files[run.file], os.O_RDONLY)
                except OSError as error:
                    raise InputError(f"{files[run.file]}: {error.strerror}") from None
            rows = _rows(run, b"".join(os.pread(fd, end - start, start) for start, end in run.spans), skipped)
            if not rows:
                continue
            try:
                batch.append(digest_from_records(rows))
            except BadRecord as error:
                skipped.append(str(error))
                continue
            records += len(rows)
            if len(batch) == DIGEST_BATCH:
                builder.add(batch)
                batch = []
    finally:
        for fd in handles.values():
            os.close(fd)
    builder.add(batch)
    return builder.build(), records, skipped


def _rows(run: _Run, raw: bytes, skipped: list[str]) -> list[StoredCell]:
    """The session's records from its lines (whole records; the last may lack its newline)."""
    try:  # the session as one JSON array: one parser call instead of one per line
        return _SESSION.decode(b"[" + raw.rstrip().replace(b"\n", b",") + b"]")
    except msgspec.DecodeError:
        pass
    rows = []
    for line in raw.splitlines():  # find the bad lines, keep the rest
        if not line.strip():
            continue
        try:
            rows.append(_RECORD.decode(line))
        except msgspec.DecodeError as error:
            skipped.append(f"session {run.session_id}: {error}")
    return rows
