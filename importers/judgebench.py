"""JudgeBench's `outputs/*.jsonl` (ScalerLab/JudgeBench, run_judge.py): one line per pair of two
answers to one question, `label` in game 1's positions, `judgments` one per game (game 2 shows
response_B first, and its decision is in game 2's own display positions), each with `decision`
(A>B / A=B / B>A, None when unparsed) and, for reward models, both answers' `scores` in the
game's display order."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bias_audit.analysis.judge_games import PREFERENCE_LEVELS

from .common import (
    MAX_NAME,
    Progress,
    SourceError,
    candidate,
    jsonl_rows,
    need,
    now_iso,
    one_of,
    optional,
    safe_id,
    text_of,
    typed,
)

FLIP = {"A>B": "B>A", "B>A": "A>B", "A=B": "A=B", "A>>B": "B>>A", "B>>A": "A>>B"}
PREFERENCES = tuple(PREFERENCE_LEVELS)


def looks_like(row: dict[str, Any]) -> bool:
    return "pair_id" in row and "judgments" in row


def _inner(judgment: dict[str, Any], where: str) -> dict[str, Any]:
    return optional(judgment, "judgment", where, dict, max_length=None) or {}


def _verdict(judgment: dict[str, Any] | None, where: str) -> dict[str, Any]:
    if judgment is None:
        return {"kind": "failed", "reason": "no judgment"}
    scores = _inner(judgment, where).get("scores")
    if scores is not None:
        typed(scores, "judgment.scores", where, list, max_length=None)
        if len(scores) != 2:
            raise SourceError(f"{where}: judgment.scores: must hold the 2 answers' scores, got {len(scores)}")
        return {"kind": "scores", "scores": [float(typed(s, "judgment.scores", where, (int, float))) for s in scores]}
    decision = judgment.get("decision")
    if decision is None:
        return {"kind": "failed", "reason": "no verdict parsed"}
    return {"kind": "pairwise", "preference": one_of(decision, "decision", where, PREFERENCES)}


def _judge_model(judgments: list[dict[str, Any] | None], where: str) -> str:
    for game, judgment in enumerate(judgments):
        if judgment is not None:
            model = optional(
                _inner(judgment, f"{where}: judgments[{game}]"), "judge_model", f"{where}: judgments[{game}]"
            )
            if model is not None:
                return model
    raise SourceError(f"{where}: judgments[].judgment.judge_model: missing (it names the judge)")


def read(
    path: Path, *, tenant: str = "default", timestamp: str | None = None, progress: Progress | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, verdict event) per game of every pair."""
    stamp = timestamp or now_iso()
    for number, row in jsonl_rows(path, progress):
        where = f"{path}:{number}"
        pair = need(row, "pair_id", where, (str, int))
        judgments = need(row, "judgments", where, list, max_length=None)
        if not 1 <= len(judgments) <= 2:
            raise SourceError(f"{where}: judgments: must hold 1 or 2 games, got {len(judgments)}")
        for game, judgment in enumerate(judgments):
            if judgment is not None:
                typed(judgment, f"judgments[{game}]", where, dict, max_length=None)
        label = row.get("label")
        if label is not None:
            one_of(label, "label", where, PREFERENCES)
        model = need(row, "response_model", where, max_length=MAX_NAME)
        judge = _judge_model(judgments, where)
        prompt = optional(row, "judge_name", where)
        task = optional(row, "source", where, max_length=128)
        texts = [text_of(row, field, where) for field in ("response_A", "response_B")]
        first = candidate(model, texts[0], correct=None if label is None else label == "A>B")
        second = candidate(model, texts[1], correct=None if label is None else label == "B>A")
        item = safe_id(pair)
        for game, judgment in enumerate(judgments, 1):
            swapped = game == 2
            yield (
                where,
                {
                    "schema_version": "1.0",
                    "verdict_id": safe_id("judgebench", judge, prompt, pair, game),
                    "tenant_id": tenant,
                    "timestamp": stamp,
                    "judge": {"model": judge, "prompt": prompt},
                    "item_id": item,
                    "game": game,
                    "order_known": True,
                    "task": task,
                    "candidates": [second, first] if swapped else [first, second],
                    "verdict": _verdict(judgment, f"{where}: judgments[{game - 1}]"),
                    "label": None if label is None else FLIP[label] if swapped else label,
                },
            )
