"""The Language Model Council's judging files (llm-council/llm-council, e.g.
tests/testdata/lmc_ei.jsonl): one line per judge and item, `llm_judge`, `emobench_id`,
`first_completion_by` (shown first), `second_completion_by` and `pairwise_choice` (A>>B .. B>>A).
The raw judging text is never read past the verdict. A model in every line of a file is the
council's reference (the baseline the win rates are against)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .common import SourceError, jsonl_rows, need, now_iso, safe_id

CHOICES = {"A>>B", "A>B", "A=B", "B>A", "B>>A"}


def looks_like(row: dict[str, Any]) -> bool:
    return "llm_judge" in row and "first_completion_by" in row


def read(path: Path, *, tenant: str = "default", timestamp: str | None = None) -> Iterator[dict[str, Any]]:
    stamp = timestamp or now_iso()
    rows = list(jsonl_rows(path))
    every: set[str] | None = None
    for number, row in rows:
        where = f"{path}:{number}"
        pair = {need(row, "first_completion_by", where), need(row, "second_completion_by", where)}
        every = pair if every is None else every & pair
    reference = next(iter(every)) if every is not None and len(every) == 1 else None
    seen: Counter[tuple[str, ...]] = Counter()
    for number, row in rows:
        where = f"{path}:{number}"
        judge = need(row, "llm_judge", where)
        item = row.get("emobench_id", row.get("item"))
        if item is None or isinstance(item, (dict, list, bool)):
            raise SourceError(f"{where}: missing field 'emobench_id' (or 'item')")
        first, second = row["first_completion_by"], row["second_completion_by"]
        choice = row.get("pairwise_choice")
        if choice is not None and choice not in CHOICES:
            raise SourceError(f"{where}: pairwise_choice {choice!r} is not one of {', '.join(sorted(CHOICES))}")
        key = (judge, str(item), first, second)
        repetition = seen[key]
        seen[key] += 1
        yield {
            "schema_version": "1.0", "verdict_id": safe_id("lmc", judge, item, first, second, repetition),
            "tenant_id": tenant, "timestamp": stamp, "judge": {"model": judge}, "item_id": safe_id(item),
            "repetition": repetition, "order_known": True,
            "candidates": [{"model": m, **({"baseline": True} if m == reference else {})} for m in (first, second)],
            "verdict": {"kind": "failed", "reason": "no verdict parsed"} if choice is None else
            {"kind": "pairwise", "preference": choice},
        }
