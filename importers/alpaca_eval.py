"""AlpacaEval's `results/<model>/<annotator>/annotations.json` (tatsu-lab/alpaca_eval): a JSON
array, one entry per instruction with `generator_1` (the baseline, output_1), `generator_2`,
`annotator` and `preference` in [1, 2] (2: generator_2 preferred; 0 or 1.5: a draw; sometimes
text; missing or NaN: not annotated).

The display order: AlpacaEval's pairwise annotators swap output_1 and output_2 when
random.Random("is_switched_outputs" + instruction + "0").choices([False, True])[0] is True (its
processors.RandomSwitchTwoColumnsProcessor, seeded with the annotator's default seed 0, order
randomized unless a config turns it off). For the annotators its package defines that way the
order is reconstructed; for any other it is unknown, and no position metric is reported.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

from .common import (
    Progress,
    SourceError,
    candidate,
    file_bytes,
    json_type,
    need,
    now_iso,
    opened,
    optional,
    safe_id,
    text_digest,
    text_of,
)

# AlpacaEval's evaluator configs (its package's evaluators_configs/) that keep the default random
# output order: all but aviary_gpt4 and lmsys_gpt4, which set is_randomize_output_order: false
RANDOMIZED_ORDER = frozenset(
    {
        "Self-taught-llama3.1-70B-dpo",
        "alpaca_eval_clf_cot_gpt4_turbo",
        "alpaca_eval_clf_gpt4_turbo",
        "alpaca_eval_cot_gpt4_turbo_fn",
        "alpaca_eval_gpt4",
        "alpaca_eval_gpt4_0314",
        "alpaca_eval_gpt4_0613",
        "alpaca_eval_gpt4_fn",
        "alpaca_eval_gpt4_turbo_fn",
        "alpaca_eval_llama3_70b_fn",
        "alpaca_eval_vllm_llama3_70b_fn",
        "alpaca_farm",
        "alpaca_farm_greedy_gpt4",
        "bedrock_claude",
        "bedrock_claude_2",
        "chatgpt",
        "chatgpt_fn",
        "claude",
        "claude_2",
        "claude_3_opus_ranking",
        "claude_ranking",
        "cohere",
        "gpt-3.5-turbo-1106_ranking",
        "gpt35_turbo_instruct",
        "gpt4",
        "gpt4_turbo",
        "gpt4_turbo_clf",
        "gpt4_turbo_cot_clf",
        "gpt4_turbo_cot_logprob",
        "gpt4_turbo_logprob",
        "guanaco_33b",
        "improved_aviary_gpt4",
        "improved_lmsys_gpt4",
        "mistral-large-2402_ranking",
        "oasst_pythia_12b",
        "text_davinci_003",
        "weighted_alpaca_eval_cot_gpt4_turbo",
        "weighted_alpaca_eval_gpt-4o-mini-2024-07-18",
        "weighted_alpaca_eval_gpt4.1",
        "weighted_alpaca_eval_gpt4_turbo",
        "weighted_alpaca_eval_gpt4_turbo_new",
        "weighted_alpaca_eval_vllm_llama3_70b",
    }
)


def looks_like(row: dict[str, Any]) -> bool:
    return "generator_1" in row and "generator_2" in row and "preference" in row


@lru_cache(maxsize=8192)  # a benchmark's few hundred instructions recur in every model's file
def shown_swapped(instruction: str) -> bool:
    """Whether AlpacaEval showed output_2 first for this instruction."""
    return random.Random("is_switched_outputs" + instruction + "0").choices([False, True], k=1)[0]


def preference_value(value: Any) -> float | None:
    """The preference as AlpacaEval reads it: a number or its text, 0 a draw (1.5); None when
    not a preference (missing, NaN, outside [1, 2])."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
        return None
    value = 1.5 if value == 0 else float(value)
    return value if 1.0 <= value <= 2.0 else None


def _rows(path: Path, progress: Progress | None) -> list[Any]:
    data = file_bytes(path, progress)
    try:
        rows = orjson.loads(data)
    except orjson.JSONDecodeError:
        try:  # Python's json module writes a missing preference as NaN, which strict JSON lacks
            rows = json.loads(data)
        except ValueError as error:
            raise SourceError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(rows, list):
        raise SourceError(f"{path}: expected AlpacaEval's JSON array of annotations, got {json_type(rows)}")
    return rows


def is_human(row: Any) -> bool:
    """A row of people's cross-annotations (alpaca_farm's human_crossannotations): the pair's
    outputs and one person's preference, no generators named."""
    return isinstance(row, dict) and "output_1" in row and "preference" in row and "generator_1" not in row


@lru_cache(maxsize=8192)
def _item_id(dataset: str | None, instruction: str) -> str:
    return safe_id(dataset, text_digest(instruction))


def _pair_key(row: dict[str, Any]) -> str:
    """AlpacaEval joins annotations by instruction, output_1 and output_2 (analyze.Analyzer's keys)."""
    return text_digest("\x1f".join(str(row.get(k, "")) for k in ("instruction", "output_1", "output_2")))


def _may_hold_people(path: Path) -> bool:
    """Whether a file's start looks like people's cross-annotations (outputs, no generators)."""
    with opened(path) as (handle, _):
        head = handle.read(65536)
    return b'"output_1"' in head and b'"generator_1"' not in head


def read_all(
    paths: list[Path], *, tenant: str = "default", timestamp: str | None = None, progress: Progress | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every file's annotations; people's cross-annotations among them count as the human
    verdicts of the judged pairs with the same instruction and outputs. The people's files are
    read first; then one judged file at a time."""
    humans: dict[str, list[dict[str, Any]]] = {}
    judged = []
    for path in paths:
        if not _may_hold_people(path):
            judged.append(path)
            continue
        rows = _rows(path, progress)
        if not (rows and is_human(rows[0])):
            judged.append(path)
            continue
        for index, row in enumerate(rows):
            if not is_human(row):
                raise SourceError(f"{path}: entry {index}: a cross-annotation needs output_1, output_2 and preference")
            for field in ("instruction", "output_1", "output_2"):
                text_of(row, field, f"{path}: entry {index}")
            preference = preference_value(row["preference"])
            if preference is not None:
                humans.setdefault(_pair_key(row), []).append(
                    {"annotator": str(row.get("annotator_index", index)), "p": preference}
                )
    for path in judged:
        yield from read(path, _rows(path, progress), tenant=tenant, timestamp=timestamp, humans=humans)


def read(
    path: Path,
    rows: list[Any],
    *,
    tenant: str = "default",
    timestamp: str | None = None,
    humans: dict[str, list[dict[str, Any]]] | None = None,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, verdict event) per annotation."""
    stamp = timestamp or now_iso()
    for index, row in enumerate(rows):
        where = f"{path}: entry {index}"
        if not isinstance(row, dict):
            raise SourceError(f"{where}: expected an object, got {json_type(row)}")
        instruction = text_of(row, "instruction", where)
        if instruction is None:
            raise SourceError(f"{where}: instruction: missing")
        baseline, model = need(row, "generator_1", where), need(row, "generator_2", where)
        annotator = need(row, "annotator", where)
        if "preference" not in row:
            raise SourceError(f"{where}: preference: missing")
        if isinstance(row["preference"], (list, dict, bool)):
            raise SourceError(f"{where}: preference: must be a number or its text, got {json_type(row['preference'])}")
        dataset = optional(row, "dataset", where, max_length=128)
        outputs = [text_of(row, field, where) for field in ("output_1", "output_2")]
        item = _item_id(dataset, instruction)
        known = annotator in RANDOMIZED_ORDER
        swapped = known and shown_swapped(instruction)
        base = candidate(baseline, outputs[0], baseline=True)
        other = candidate(model, outputs[1])
        preference = preference_value(row["preference"])
        if preference is None:
            verdict: dict[str, Any] = {"kind": "failed", "reason": "no preference"}
        else:
            p_model = preference - 1.0
            verdict = {"kind": "probability", "p_first": p_model if swapped else 1.0 - p_model}
        people = []
        for human in humans.get(_pair_key(row), ()) if humans else ():
            p = human["p"]  # 1: output_1 (the baseline) preferred, 2: output_2, 1.5: a tie
            people.append(
                {"annotator": human["annotator"], "tie": True}
                if p == 1.5
                else {"annotator": human["annotator"], "preferred_model": baseline if p < 1.5 else model}
            )
        event = {
            "schema_version": "1.0",
            "verdict_id": safe_id("alpaca_eval", annotator, model, item),
            "tenant_id": tenant,
            "timestamp": stamp,
            "judge": {"model": annotator},
            "item_id": item,
            "order_known": known,
            "order_randomized": known,
            "task": dataset,
            "candidates": [other, base] if swapped else [base, other],
            "verdict": verdict,
        }
        if people:
            event["human"] = people
        yield where, event
