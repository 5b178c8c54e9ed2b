"""Which reader a file needs (`--source auto` looks at its first entry), and the verdict events
of many files and folders in one stream."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from bias_audit.analysis.judge_games import stored_verdict
from bias_audit.schemas.judges import JudgeVerdictEvent

from . import alpaca_eval, judgebench, lmc, mt_bench
from .common import SourceError, jsonl_rows, now_iso

SOURCES = ("auto", "events", "judgebench", "alpaca_eval", "mt_bench", "lmc")


def expand(paths: list[str]) -> list[Path]:
    """Files as named; a folder gives its *.jsonl and annotations.json files, recursively."""
    out: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and (p.suffix == ".jsonl" or p.name == "annotations.json"))
            if not found:
                raise SourceError(f"{path}: no *.jsonl or annotations.json files in this folder")
            out.extend(found)
        elif path.is_file():
            out.append(path)
        else:
            raise SourceError(f"{path}: no such file or folder")
    return out


def _first_entry(path: Path) -> dict[str, Any] | None:
    with path.open("rb") as handle:
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
    for name, module in (("judgebench", judgebench), ("alpaca_eval", alpaca_eval), ("mt_bench", mt_bench),
                         ("lmc", lmc)):
        if module.looks_like(row):
            return name
    if "verdict_id" in row or "verdict" in row:
        return "events"
    raise SourceError(f"{path}: not a format bias-audit reads (JudgeBench, AlpacaEval, MT-Bench, the Language Model "
                      "Council or verdict events); name it with --source")


def read_events(path: Path, *, tenant: str | None = None, stored: bool = True) -> Iterator[dict[str, Any]]:
    """Our own verdict events, validated like the worker validates them. stored: as they are
    stored (texts dropped); else each line as read, once valid (a report reads it and keeps nothing)."""
    from bias_audit.consumers.envelope import describe_validation_error

    for number, row in jsonl_rows(path):
        if tenant is not None and "tenant_id" not in row:
            row["tenant_id"] = tenant
        try:
            event = JudgeVerdictEvent.model_validate(row)
        except ValidationError as error:
            raise SourceError(f"{path}:{number}: {describe_validation_error(error)}") from None
        yield stored_verdict(event.model_dump(mode="json"), [c.response for c in event.candidates]) if stored else row


def read_verdicts(paths: list[str], source: str = "auto", *, tenant: str = "default",
                  answers: str | None = None, stored: bool = True) -> Iterator[dict[str, Any]]:
    """Every verdict event of the files, in file order. One import time for sources without times.
    stored: events as a store keeps them; False for a report (our events' lines as read)."""
    if source not in SOURCES:
        raise SourceError(f"--source must be one of {', '.join(SOURCES)}, not {source!r}")
    files = expand(paths)
    stamp = now_iso()
    kinds = [(path, detect(path) if source == "auto" else source) for path in files]
    fastchat = [path for path, kind in kinds if kind == "mt_bench"]
    alpaca = [path for path, kind in kinds if kind == "alpaca_eval"]
    if answers is not None and not fastchat:
        raise SourceError("--answers is for MT-Bench judgment files; none was given")
    for path, kind in kinds:
        if kind == "judgebench":
            yield from judgebench.read(path, tenant=tenant, timestamp=stamp)
        elif kind == "lmc":
            yield from lmc.read(path, tenant=tenant, timestamp=stamp)
        elif kind == "events":
            yield from read_events(path, tenant=tenant, stored=stored)
    if alpaca:  # one pass over all of them: people's cross-annotations join the judged pairs across files
        yield from alpaca_eval.read_all(alpaca, tenant=tenant, timestamp=stamp)
    if fastchat:  # one pass over all of them: human judgments join the pairs across files
        yield from mt_bench.read(fastchat, tenant=tenant, timestamp=stamp,
                                 answers=Path(answers) if answers is not None else None)
