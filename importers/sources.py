"""Which reader a file needs (`--source auto` looks at its first entry), and the verdict events
of many files and folders as one set: every row checked against the event contract (the same
limits and clock as the worker's), the same verdict read twice counted once."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from bias_audit.analysis.judge_games import stored_verdict
from bias_audit.schemas.judges import JudgeVerdictEvent
from bias_audit.schemas.limits import DEFAULT_LIMITS, EventLimits

from . import alpaca_eval, judgebench, lmc, mt_bench
from .common import Progress, SourceError, jsonl_rows, now_iso, opened

SOURCES = ("auto", "events", "judgebench", "alpaca_eval", "mt_bench", "lmc")
JSONL_SUFFIXES = (".jsonl", ".jsonl.gz")
ARRAY_NAMES = ("annotations.json", "annotations.json.gz")


def _listed(path: Path) -> bool:
    return path.name.endswith(JSONL_SUFFIXES) or path.name in ARRAY_NAMES


def expand(paths: list[str]) -> list[Path]:
    """Files as named; a folder gives its *.jsonl and annotations.json files (gzipped too), recursively."""
    out: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and _listed(p))
            if not found:
                raise SourceError(f"{path}: no *.jsonl or annotations.json files in this folder")
            out.extend(found)
        elif path.is_file():
            out.append(path)
        else:
            raise SourceError(f"{path}: no such file or folder")
    return out


def _first_entry(path: Path) -> dict[str, Any] | None:
    with opened(path) as (handle, _):
        head = handle.read(1)
        while head and head.isspace():
            head = handle.read(1)
        rest = handle.read(65536)
    if head == b"[":  # a JSON array: AlpacaEval's annotations (read once, by its reader)
        if b'"generator_1"' in rest or b'"output_1"' in rest:  # annotations, or people's cross-annotations
            return {"generator_1": None, "generator_2": None, "preference": None}
        return None
    for _, row in jsonl_rows(path):
        return row
    return None


def detect(path: Path) -> str:
    """The source format of a file, by the fields of its first entry."""
    try:
        row = _first_entry(path)
    except (orjson.JSONDecodeError, SourceError):
        raise SourceError(f"{path}: not JSON lines or a JSON array; name its --source") from None
    if row is None:
        return "empty"
    for name, module in (
        ("judgebench", judgebench),
        ("alpaca_eval", alpaca_eval),
        ("mt_bench", mt_bench),
        ("lmc", lmc),
    ):
        if module.looks_like(row):
            return name
    if "verdict_id" in row or "verdict" in row:
        return "events"
    raise SourceError(
        f"{path}: not a format bias-audit reads (JudgeBench, AlpacaEval, MT-Bench, the Language Model "
        "Council or verdict events); name it with --source"
    )


def read_events(
    path: Path, *, tenant: str | None = None, progress: Progress | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, event) per line of our own verdict events."""
    for number, row in jsonl_rows(path, progress):
        if tenant is not None and "tenant_id" not in row:
            row["tenant_id"] = tenant
        yield f"{path}:{number}", row


def _built(documents: Iterator[tuple[str, dict[str, Any]]]) -> Iterator[tuple[str, dict[str, Any], bool]]:
    return ((where, document, True) for where, document in documents)


class VerdictFiles:
    """The verdict events of files and folders, in file order, as a store keeps them (texts
    dropped); iterate once. A row that breaks the event contract, or files with no verdict at all,
    stop the reading with one line (`FILE:LINE: field: reason`). A verdict whose id and content were read already (the same file
    given twice, or byte-identical copies) is counted once, in `duplicates`; the same id with
    other content is a repetition and kept. Sources without times get one import time."""

    def __init__(
        self,
        paths: list[str],
        source: str = "auto",
        *,
        tenant: str = "default",
        answers: str | None = None,
        limits: EventLimits = DEFAULT_LIMITS,
    ) -> None:
        if source not in SOURCES:
            raise SourceError(f"--source must be one of {', '.join(SOURCES)}, not {source!r}")
        self.files = expand(paths)
        kinds = [(path, detect(path) if source == "auto" else source) for path in self.files]
        self.kinds = [(path, kind) for path, kind in kinds if kind != "empty"]
        if answers is not None and not any(kind == "mt_bench" for _, kind in self.kinds):
            raise SourceError("--answers is for MT-Bench judgment files; none was given")
        self.tenant, self.answers, self.limits = tenant, answers, limits
        self.total_bytes = sum(path.stat().st_size for path, _ in self.kinds)
        self.duplicates = 0  # dropped: the same id and content read before

    def documents(self, progress: Progress | None = None) -> Iterator[tuple[str, dict[str, Any], bool]]:
        """(where, document, built) of every verdict before the contract's check: built, the field's
        formats as our readers build them in the stored shape (with answers' texts); else our events as read."""
        stamp = now_iso()
        tenant = self.tenant
        fastchat = [path for path, kind in self.kinds if kind == "mt_bench"]
        alpaca = [path for path, kind in self.kinds if kind == "alpaca_eval"]
        for path, kind in self.kinds:
            if kind == "judgebench":
                yield from _built(judgebench.read(path, tenant=tenant, timestamp=stamp, progress=progress))
            elif kind == "lmc":
                yield from _built(lmc.read(path, tenant=tenant, timestamp=stamp, progress=progress))
            elif kind == "events":
                yield from ((where, row, False) for where, row in read_events(path, tenant=tenant, progress=progress))
        if alpaca:  # one pass over all of them: people's cross-annotations join the judged pairs across files
            yield from _built(alpaca_eval.read_all(alpaca, tenant=tenant, timestamp=stamp, progress=progress))
        if fastchat:  # one pass over all of them: human judgments join the pairs across files
            yield from _built(
                mt_bench.read(
                    fastchat,
                    tenant=tenant,
                    timestamp=stamp,
                    progress=progress,
                    answers=Path(self.answers) if self.answers is not None else None,
                )
            )

    def read(self, progress: Progress | None = None) -> Iterator[dict[str, Any]]:
        from bias_audit.consumers.envelope import InvalidEvent, validate_event

        seen: set[bytes] = set()
        for where, document, built in self.documents(progress):
            try:
                event = validate_event(JudgeVerdictEvent, document, self.limits)
            except InvalidEvent as error:
                raise SourceError(f"{where}: {error}") from None
            if built:  # already in the stored shape: checked, then its texts dropped
                stored = stored_verdict(
                    {
                        **document,
                        "candidates": [{k: v for k, v in c.items() if k != "response"} for c in document["candidates"]],
                    },
                    [c.get("response") for c in document["candidates"]],
                )
            else:  # as a producer wrote it: stored in the contract's own form
                stored = stored_verdict(event.model_dump(mode="json"), [c.response for c in event.candidates])
            digest = hashlib.blake2b(orjson.dumps(stored, option=orjson.OPT_SORT_KEYS), digest_size=16).digest()
            if digest in seen:
                self.duplicates += 1
                continue
            seen.add(digest)
            yield stored
        if not seen:
            raise SourceError(
                f"no judge verdicts in {', '.join(map(str, self.files))}: "
                f"{'the file is' if len(self.files) == 1 else 'the files are'} empty"
            )

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self.read()


def read_verdicts(
    paths: list[str],
    source: str = "auto",
    *,
    tenant: str = "default",
    answers: str | None = None,
    limits: EventLimits = DEFAULT_LIMITS,
) -> VerdictFiles:
    """The verdict events of the files (iterate the answer once)."""
    return VerdictFiles(paths, source, tenant=tenant, answers=answers, limits=limits)
