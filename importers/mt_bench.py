"""FastChat's MT-Bench judgments (lm-sys/FastChat, fastchat/llm_judge/gen_judgment.py):

- `model_judgment/<judge>_pair.jsonl`: per question, turn and two models, game 1 shows
  `model_1` first and game 2 swaps; `g1_winner` / `g2_winner` name models (`model_1`,
  `model_2`), or `tie`, or `error` (no verdict parsed); `judge` is [model, prompt name].
- `model_judgment/<judge>_single.jsonl`: one answer graded alone, `score` (-1: not parsed).
- human judgments (MT-Bench's human_judgments): `model_a`, `model_b`, `winner` (`model_a`,
  `model_b`, `tie`, `tie (bothbad)`), `judge` a person's id: joined to the pairs by question,
  turn and models, they count toward human agreement.

Answers' lengths come from `model_answer/<model>.jsonl` (`--answers DIR`) when given.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .common import SourceError, candidate, epoch_iso, jsonl_rows, need, now_iso, safe_id, words

WINNER = {"model_1", "model_2", "tie", "error"}


def looks_like(row: dict[str, Any]) -> bool:
    return ("g1_winner" in row and "g2_winner" in row) or ("score" in row and "judge" in row and "model" in row) \
        or is_human(row)


def is_human(row: dict[str, Any]) -> bool:
    return "model_a" in row and "model_b" in row and "winner" in row and isinstance(row.get("judge"), str)


def answer_lengths(directory: Path) -> dict[tuple[str, str, int], int]:
    """(model, question id, turn) -> words, from FastChat's model_answer/*.jsonl."""
    lengths: dict[tuple[str, str, int], int] = {}
    files = sorted(directory.glob("*.jsonl"))
    if not files:
        raise SourceError(f"--answers {directory}: no model_answer *.jsonl files there")
    for path in files:
        for number, row in jsonl_rows(path):
            where = f"{path}:{number}"
            model: str = row["model_id"] if isinstance(row.get("model_id"), str) else path.stem
            question = need(row, "question_id", where, (int, str))
            choices = need(row, "choices", where, list)
            turns = choices[0].get("turns") if choices and isinstance(choices[0], dict) else None
            if not isinstance(turns, list):
                raise SourceError(f"{where}: choices[0].turns must be a list of answers")
            for turn, text in enumerate(turns, 1):
                count = words(text)
                if count is not None:
                    lengths[(model, str(question), turn)] = count
    return lengths


def _judge(row: dict[str, Any], where: str) -> tuple[str, str | None]:
    judge = row.get("judge")
    if isinstance(judge, list) and judge and isinstance(judge[0], str):
        return judge[0], judge[1] if len(judge) > 1 and isinstance(judge[1], str) else None
    if "judge_model" in row and isinstance(row["judge_model"], str):
        return row["judge_model"], row.get("judge_prompt") if isinstance(row.get("judge_prompt"), str) else None
    raise SourceError(f"{where}: field 'judge' must be [model, prompt name]")


def _pair_verdict(winner: str, first: str) -> dict[str, Any]:
    """A winner named by its model slot, as a verdict in this game's display order (`first`:
    the slot shown first)."""
    if winner == "error":
        return {"kind": "failed", "reason": "no verdict parsed"}
    if winner == "tie":
        return {"kind": "pairwise", "preference": "A=B"}
    return {"kind": "pairwise", "preference": "A>B" if winner == first else "B>A"}


def _human_key(question: Any, turn: Any, a: str, b: str) -> tuple[str, int, tuple[str, str]]:
    return (str(question), int(turn) if isinstance(turn, int) else 1, (min(a, b), max(a, b)))


def read(paths: list[Path], *, tenant: str = "default", timestamp: str | None = None,
         answers: Path | None = None) -> Iterator[dict[str, Any]]:
    stamp = timestamp or now_iso()
    lengths = answer_lengths(answers) if answers is not None else {}
    humans: dict[tuple[str, int, tuple[str, str]], list[dict[str, Any]]] = defaultdict(list)
    judged: list[tuple[Path, int, dict[str, Any]]] = []
    for path in paths:
        for number, row in jsonl_rows(path):
            if is_human(row):
                where = f"{path}:{number}"
                winner = need(row, "winner", where)
                a, b = need(row, "model_a", where), need(row, "model_b", where)
                key = _human_key(need(row, "question_id", where, (int, str)), row.get("turn", 1), a, b)
                if winner in ("model_a", "model_b"):
                    humans[key].append({"annotator": row["judge"], "preferred_model": a if winner == "model_a" else b})
                elif winner.startswith("tie"):
                    humans[key].append({"annotator": row["judge"], "tie": True})
                else:
                    raise SourceError(f"{where}: winner {winner!r} is not model_a, model_b or tie")
            else:
                judged.append((path, number, row))
    pair_rows = [r for r in judged if "g1_winner" in r[2]]
    # a model in every pair of a judge's file is that file's baseline (MT-Bench's pairwise-baseline mode)
    in_every: dict[Path, set[str]] = {}
    for path, _, row in pair_rows:
        models = {str(row.get("model_1")), str(row.get("model_2"))}
        in_every[path] = in_every[path] & models if path in in_every else set(models)
    for path, number, row in judged:
        where = f"{path}:{number}"
        judge, prompt = _judge(row, where)
        question = need(row, "question_id", where, (int, str))
        turn = row.get("turn", 1)
        if not isinstance(turn, int) or isinstance(turn, bool):
            raise SourceError(f"{where}: field 'turn' must be int")
        item = safe_id(question, turn)
        when = epoch_iso(row.get("tstamp"), stamp)
        if "g1_winner" in row:
            m1, m2 = need(row, "model_1", where), need(row, "model_2", where)
            baseline = next(iter(in_every[path])) if len(in_every[path]) == 1 else None
            people = humans.get(_human_key(question, turn, m1, m2), [])
            for game, slot_first, order in ((1, "model_1", (m1, m2)), (2, "model_2", (m2, m1))):
                winner = need(row, f"g{game}_winner", where)
                if winner not in WINNER:
                    raise SourceError(f"{where}: g{game}_winner {winner!r} is not model_1, model_2, tie or error")
                yield {
                    "schema_version": "1.0", "verdict_id": safe_id("mt_bench", judge, prompt, item, m1, m2, game),
                    "tenant_id": tenant, "timestamp": when, "judge": {"model": judge, "prompt": prompt},
                    "item_id": item, "game": game, "order_known": True,
                    "candidates": [{"model": m, "length_words": lengths.get((m, str(question), turn)),
                                    **({"baseline": True} if m == baseline else {})} for m in order],
                    "verdict": _pair_verdict(winner, slot_first), "human": people,
                }
        elif "score" in row:
            model = need(row, "model", where)
            score = need(row, "score", where, (int, float))
            verdict = {"kind": "failed", "reason": "no score parsed"} if score == -1 else \
                {"kind": "scores", "scores": [float(score)], "scale": "1-10"}
            yield {
                "schema_version": "1.0", "verdict_id": safe_id("mt_bench", judge, prompt, item, model),
                "tenant_id": tenant, "timestamp": when, "judge": {"model": judge, "prompt": prompt},
                "item_id": item, "order_known": True,
                "candidates": [candidate(model) | {"length_words": lengths.get((model, str(question), turn))}],
                "verdict": verdict,
            }
        else:
            raise SourceError(f"{where}: neither a pair judgment (g1_winner) nor a single one (score)")


