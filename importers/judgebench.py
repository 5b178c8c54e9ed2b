"""JudgeBench's `outputs/*.jsonl` (ScalerLab/JudgeBench, run_judge.py): one line per pair of two
answers to one question, `label` in game 1's positions, `judgments` one per game (game 2 shows
response_B first), each with `decision` (A>B / A=B / B>A, None when unparsed) and, for reward
models, both answers' `scores` in the game's display order."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .common import SourceError, candidate, jsonl_rows, need, now_iso, safe_id

FLIP = {"A>B": "B>A", "B>A": "A>B", "A=B": "A=B", "A>>B": "B>>A", "B>>A": "A>>B"}


def looks_like(row: dict[str, Any]) -> bool:
    return "pair_id" in row and "judgments" in row


def _verdict(judgment: dict[str, Any] | None, where: str) -> dict[str, Any]:
    if judgment is None:
        return {"kind": "failed", "reason": "no judgment"}
    scores = (judgment.get("judgment") or {}).get("scores")
    if isinstance(scores, list) and len(scores) == 2 and all(isinstance(s, (int, float)) for s in scores):
        return {"kind": "scores", "scores": [float(s) for s in scores]}
    decision = judgment.get("decision")
    if decision is None:
        return {"kind": "failed", "reason": "no verdict parsed"}
    if decision not in FLIP:
        raise SourceError(f"{where}: decision {decision!r} is not one of A>B, A=B, B>A")
    return {"kind": "pairwise", "preference": decision}


def _judge_model(judgments: list[Any], where: str) -> str:
    for judgment in judgments:
        model = ((judgment or {}).get("judgment") or {}).get("judge_model")
        if isinstance(model, str) and model:
            return model
    raise SourceError(f"{where}: no judgments[].judgment.judge_model names the judge")


def read(path: Path, *, tenant: str = "default", timestamp: str | None = None) -> Iterator[dict[str, Any]]:
    stamp = timestamp or now_iso()
    for number, row in jsonl_rows(path):
        where = f"{path}:{number}"
        pair = need(row, "pair_id", where)
        judgments = need(row, "judgments", where, list)
        if not 1 <= len(judgments) <= 2:
            raise SourceError(f"{where}: judgments must hold 1 or 2 games, got {len(judgments)}")
        label = row.get("label")
        if label is not None and label not in FLIP:
            raise SourceError(f"{where}: label {label!r} is not one of A>B, A=B, B>A")
        model = need(row, "response_model", where)
        judge = _judge_model(judgments, where)
        prompt = row.get("judge_name") if isinstance(row.get("judge_name"), str) else None
        first = candidate(model, row.get("response_A"), correct=None if label is None else label == "A>B")
        second = candidate(model, row.get("response_B"), correct=None if label is None else label == "B>A")
        for game, judgment in enumerate(judgments, 1):
            if judgment is not None and not isinstance(judgment, dict):
                raise SourceError(f"{where}: judgments[{game - 1}] must be an object or null")
            swapped = game == 2
            yield {
                "schema_version": "1.0", "verdict_id": safe_id("judgebench", judge, prompt, pair, game),
                "tenant_id": tenant, "timestamp": stamp, "judge": {"model": judge, "prompt": prompt},
                "item_id": safe_id(pair), "game": game, "order_known": True,
                "task": row.get("source") if isinstance(row.get("source"), str) else None,
                "candidates": [second, first] if swapped else [first, second],
                "verdict": _verdict(judgment, f"{where}: judgments[{game - 1}]"),
                "label": None if label is None else FLIP[label] if swapped else label,
            }
