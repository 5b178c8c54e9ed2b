"""FastChat's MT-Bench judgments (lm-sys/FastChat, fastchat/llm_judge/gen_judgment.py):

- `model_judgment/<judge>_pair.jsonl`: per question, turn and two models, game 1 shows
  `model_1` first and game 2 swaps; `g1_winner` / `g2_winner` name models (`model_1`,
  `model_2`), or `tie`, or `error` (no verdict parsed); `judge` is [model, prompt name].
- `model_judgment/<judge>_single.jsonl`: one answer graded alone, `score` (-1: not parsed).
  gen_judgment appends, so a file run twice holds the same question, turn and model twice:
  each later one is a repetition (the same answer judged again).
- human judgments (MT-Bench's human_judgments): `model_a`, `model_b`, `winner` (`model_a`,
  `model_b`, `tie`, `tie (bothbad)`), `judge` a person's id: joined to the pairs by question,
  turn and models, they count toward human agreement.

Answers' lengths come from `model_answer/<model>.jsonl` (`--answers DIR`) when given.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bias_audit.analysis.judge_games import word_count

from .common import (
    MAX_NAME,
    Progress,
    SourceError,
    epoch_iso,
    jsonl_rows,
    need,
    now_iso,
    one_of,
    optional,
    safe_id,
    typed,
)

WINNERS = ("model_1", "model_2", "tie", "error")
HUMAN_WINNERS = ("model_a", "model_b", "tie", "tie (bothbad)")
FAILED_SCORE = -1  # FastChat's score when no rating was parsed
# the fields a judgment is read for; the prompts and the judge's text are not kept while the files are read
READ = (
    "question_id",
    "turn",
    "tstamp",
    "judge",
    "judge_model",
    "judge_prompt",
    "model",
    "score",
    "model_1",
    "model_2",
    "g1_winner",
    "g2_winner",
)


def looks_like(row: dict[str, Any]) -> bool:
    return (
        ("g1_winner" in row and "g2_winner" in row)
        or ("score" in row and "judge" in row and "model" in row)
        or is_human(row)
    )


def is_human(row: dict[str, Any]) -> bool:
    return "model_a" in row and "model_b" in row and "winner" in row and isinstance(row.get("judge"), str)


def answer_lengths(directory: Path) -> dict[tuple[str, str, int], int]:
    """(model, question id, turn) -> words, from FastChat's model_answer/*.jsonl. As FastChat's
    load_model_answers reads them: the file's name is the model (its rows' model_id is not), and a
    later row of a question replaces an earlier one."""
    lengths: dict[tuple[str, str, int], int] = {}
    files = sorted([*directory.glob("*.jsonl"), *directory.glob("*.jsonl.gz")])
    if not files:
        raise SourceError(f"--answers {directory}: no model_answer *.jsonl files there")
    for path in files:
        for number, row in jsonl_rows(path):
            where = f"{path}:{number}"
            model = path.name.split(".jsonl")[0]
            question = need(row, "question_id", where, (int, str))
            choices = need(row, "choices", where, list, max_length=None)
            first = typed(choices[0], "choices[0]", where, dict) if choices else {}
            turns = first.get("turns")
            if not isinstance(turns, list):
                raise SourceError(f"{where}: choices[0].turns: must be an array of answers")
            for turn, text in enumerate(turns, 1):
                if isinstance(text, str):
                    lengths[(model, str(question), turn)] = word_count(text)
    return lengths


def _judge(row: dict[str, Any], where: str) -> tuple[str, str | None]:
    judge = row.get("judge")
    if "judge" not in row and "judge_model" in row:
        return need(row, "judge_model", where), optional(row, "judge_prompt", where)
    if not isinstance(judge, list) or not 1 <= len(judge) <= 2:
        raise SourceError(f"{where}: judge: must be [model, prompt name]")
    model = typed(judge[0], "judge[0]", where, str, max_length=MAX_NAME)
    prompt = typed(judge[1], "judge[1]", where, str, max_length=MAX_NAME) if len(judge) == 2 else None
    return model, prompt


def _pair_verdict(winner: str, first: str) -> dict[str, Any]:
    """A winner named by its model slot, as a verdict in this game's display order (`first`:
    the slot shown first)."""
    if winner == "error":
        return {"kind": "failed", "reason": "no verdict parsed"}
    if winner == "tie":
        return {"kind": "pairwise", "preference": "A=B"}
    return {"kind": "pairwise", "preference": "A>B" if winner == first else "B>A"}


def _human_key(question: Any, turn: int, a: str, b: str) -> tuple[str, int, tuple[str, str]]:
    return (str(question), turn, (min(a, b), max(a, b)))


def _turn(row: dict[str, Any], where: str) -> int:
    turn = optional(row, "turn", where, int)
    return 1 if turn is None else turn


def _human_rows(
    paths: list[Path], progress: Progress | None
) -> tuple[dict[tuple[str, int, tuple[str, str]], list[dict[str, Any]]], list[tuple[int, Path, int, dict]]]:
    """People's verdicts by question, turn and models, and every judge's row with its file's
    place in `paths` (a file named twice is two files, each with its own repetitions)."""
    humans: dict[tuple[str, int, tuple[str, str]], list[dict[str, Any]]] = defaultdict(list)
    judged: list[tuple[int, Path, int, dict[str, Any]]] = []
    for index, path in enumerate(paths):
        for number, row in jsonl_rows(path, progress):
            if not is_human(row):
                judged.append((index, path, number, {k: row[k] for k in READ if k in row}))
                continue
            where = f"{path}:{number}"
            winner = one_of(row["winner"], "winner", where, HUMAN_WINNERS)
            a, b = need(row, "model_a", where), need(row, "model_b", where)
            person = need(row, "judge", where)
            key = _human_key(need(row, "question_id", where, (int, str)), _turn(row, where), a, b)
            humans[key].append(
                {"annotator": person, "preferred_model": a if winner == "model_a" else b}
                if winner in ("model_a", "model_b")
                else {"annotator": person, "tie": True}
            )
    return humans, judged


def read(
    paths: list[Path],
    *,
    tenant: str = "default",
    timestamp: str | None = None,
    answers: Path | None = None,
    progress: Progress | None = None,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, verdict event) per game of every pair judgment and per single grading."""
    stamp = timestamp or now_iso()
    lengths = answer_lengths(answers) if answers is not None else {}
    humans, judged = _human_rows(paths, progress)
    # a model in every pair of a judge's file is that file's baseline (MT-Bench's pairwise-baseline mode)
    in_every: dict[int, set[str]] = {}
    for index, _, _, row in judged:
        if "g1_winner" in row:
            models = {str(row.get("model_1")), str(row.get("model_2"))}
            in_every[index] = in_every[index] & models if index in in_every else models
    seen: Counter[tuple[Any, ...]] = Counter()  # a file judged the same thing again: its repetitions
    key: tuple[Any, ...]
    for index, path, number, row in judged:
        where = f"{path}:{number}"
        judge, prompt = _judge(row, where)
        question = need(row, "question_id", where, (int, str))
        turn = _turn(row, where)
        item = safe_id(question, turn)
        when = epoch_iso(row.get("tstamp"), stamp)
        if "g1_winner" in row:
            m1, m2 = need(row, "model_1", where), need(row, "model_2", where)
            winners = [one_of(row.get(f"g{game}_winner"), f"g{game}_winner", where, WINNERS) for game in (1, 2)]
            baseline = next(iter(in_every[index])) if len(in_every[index]) == 1 else None
            people = humans.get(_human_key(question, turn, m1, m2), [])
            key = (index, judge, prompt, item, m1, m2)
            repetition = seen[key]
            seen[key] += 1
            for game, slot_first, order in ((1, "model_1", (m1, m2)), (2, "model_2", (m2, m1))):
                yield (
                    where,
                    {
                        "schema_version": "1.0",
                        "verdict_id": safe_id(
                            "mt_bench", judge, prompt, item, m1, m2, game, *([repetition] if repetition else [])
                        ),
                        "tenant_id": tenant,
                        "timestamp": when,
                        "judge": {"model": judge, "prompt": prompt},
                        "item_id": item,
                        "game": game,
                        "repetition": repetition,
                        "order_known": True,
                        "candidates": [
                            {
                                "model": m,
                                "length_words": lengths.get((m, str(question), turn)),
                                **({"baseline": True} if m == baseline else {}),
                            }
                            for m in order
                        ],
                        "verdict": _pair_verdict(winners[game - 1], slot_first),
                        "human": people,
                    },
                )
        elif "score" in row:
            model = need(row, "model", where)
            score = need(row, "score", where, (int, float))
            key = (index, judge, prompt, item, model)
            repetition = seen[key]
            seen[key] += 1
            yield (
                where,
                {
                    "schema_version": "1.0",
                    "verdict_id": safe_id(
                        "mt_bench", judge, prompt, item, model, *([repetition] if repetition else [])
                    ),
                    "tenant_id": tenant,
                    "timestamp": when,
                    "judge": {"model": judge, "prompt": prompt},
                    "item_id": item,
                    "repetition": repetition,
                    "order_known": True,
                    "candidates": [{"model": model, "length_words": lengths.get((model, str(question), turn))}],
                    "verdict": {"kind": "failed", "reason": "no score parsed"}
                    if score == FAILED_SCORE
                    else {"kind": "scores", "scores": [float(score)], "scale": "1-10"},
                },
            )
        else:
            raise SourceError(f"{where}: neither a pair judgment (g1_winner) nor a single one (score)")
