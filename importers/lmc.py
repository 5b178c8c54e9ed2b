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

from bias_audit.analysis.judge_games import PREFERENCE_LEVELS

from .common import Progress, jsonl_rows, need, now_iso, one_of, safe_id

CHOICES = tuple(PREFERENCE_LEVELS)
READ = ("emobench_id", "item", "llm_judge", "first_completion_by", "second_completion_by", "pairwise_choice")


def looks_like(row: dict[str, Any]) -> bool:
    return "llm_judge" in row and "first_completion_by" in row


def _item(row: dict[str, Any], where: str) -> str | int:
    field = "emobench_id" if "emobench_id" in row else "item"
    return need(row, field, where, (int, str))


def read(
    path: Path, *, tenant: str = "default", timestamp: str | None = None, progress: Progress | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, verdict event) per line; the same judge, item and order again is a repetition."""
    stamp = timestamp or now_iso()
    rows = []
    every: set[str] | None = None
    for number, row in jsonl_rows(path, progress):
        where = f"{path}:{number}"
        pair = {need(row, "first_completion_by", where), need(row, "second_completion_by", where)}
        every = pair if every is None else every & pair
        rows.append((number, {k: row[k] for k in READ if k in row}))
    reference = next(iter(every)) if every is not None and len(every) == 1 else None
    seen: Counter[tuple[str, ...]] = Counter()
    for number, row in rows:
        where = f"{path}:{number}"
        judge = need(row, "llm_judge", where)
        item = _item(row, where)
        first, second = row["first_completion_by"], row["second_completion_by"]
        choice = row.get("pairwise_choice")
        if choice is not None:
            one_of(choice, "pairwise_choice", where, CHOICES)
        key = (judge, str(item), first, second)
        repetition = seen[key]
        seen[key] += 1
        yield (
            where,
            {
                "schema_version": "1.0",
                "verdict_id": safe_id("lmc", judge, item, first, second, repetition),
                "tenant_id": tenant,
                "timestamp": stamp,
                "judge": {"model": judge},
                "item_id": safe_id(item),
                "repetition": repetition,
                "order_known": True,
                "candidates": [{"model": m, **({"baseline": True} if m == reference else {})} for m in (first, second)],
                "verdict": {"kind": "failed", "reason": "no verdict parsed"}
                if choice is None
                else {"kind": "pairwise", "preference": choice},
            },
        )
