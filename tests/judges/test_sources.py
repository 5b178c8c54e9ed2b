"""The readers of the field's judge files, on format-faithful fixtures written here by hand in
each project's shape (their data cannot be shipped): what each line becomes, and that a file
that is not the named format is one line naming the field."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from bias_audit.analysis.judge_games import game_from_event
from bias_audit.analysis.judges import judge_report
from bias_audit.importers.common import SourceError
from bias_audit.importers.sources import detect, read_verdicts
from bias_audit.schemas.judges import JudgeVerdictEvent


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def judgebench_pair(pair_id, label, d1, d2, *, judge="o1-mini-2024-09-12", scores=None):
    def judgment(decision, s):
        inner = {"judge_model": judge, "prompt": "...", "response": "[[A>B]]"}
        if s is not None:
            inner["scores"] = s
        return {"judgment": inner, "decision": decision}

    return {
        "pair_id": pair_id,
        "original_id": 1,
        "source": "mmlu-pro-law",
        "question": "Q?",
        "response_model": "gpt-4o-2024-05-13",
        "response_A": "short answer",
        "response_B": "a much longer answer here",
        "label": label,
        "judge_name": "arena_hard",
        "judgments": [judgment(d1, scores and scores[0]), judgment(d2, scores and scores[1])],
    }


def test_judgebench_games_swap_and_label(tmp_path):
    path = write_jsonl(
        tmp_path / "outputs" / "dataset=judgebench,judge_model=o1.jsonl",
        [
            judgebench_pair("p1", "A>B", "A>B", "B>A"),
            judgebench_pair("p2", "B>A", None, "A=B"),
        ],
    )
    assert detect(path) == "judgebench"
    events = list(read_verdicts([str(path)]))
    assert [e["verdict_id"] for e in events] == [
        "judgebench:o1-mini-2024-09-12:arena_hard:p1:1",
        "judgebench:o1-mini-2024-09-12:arena_hard:p1:2",
        "judgebench:o1-mini-2024-09-12:arena_hard:p2:1",
        "judgebench:o1-mini-2024-09-12:arena_hard:p2:2",
    ]
    g1, g2 = events[0], events[1]
    assert [c["length_words"] for c in g1["candidates"]] == [2, 5] and [
        c["length_words"] for c in g2["candidates"]
    ] == [5, 2]
    assert (g1["label"], g2["label"]) == ("A>B", "B>A")
    assert events[2]["verdict"] == {"kind": "failed", "reason": "no verdict parsed"}
    for event in events:  # every event is a valid contract event, with no text in it
        JudgeVerdictEvent.model_validate(event)
        assert "response" not in json.dumps(event) and "Q?" not in json.dumps(event)
    [judge] = judge_report([game_from_event(e) for e in events]).judges
    assert judge.metrics["accuracy"].estimate == 50.0  # p1: +2; p2: failed + (A=B) = 0
    assert judge.metrics["position_consistency"].estimate == 0.5


def test_judgebench_reward_model_scores_are_pointwise_verdicts(tmp_path):
    path = write_jsonl(
        tmp_path / "rm.jsonl",
        [judgebench_pair("p1", "A>B", "A>B", "B>A", judge="internlm/x-reward", scores=([1.9, 1.2], [1.2, 1.9]))],
    )
    events = list(read_verdicts([str(path)]))
    assert [e["verdict"] for e in events] == [
        {"kind": "scores", "scores": [1.9, 1.2]},
        {"kind": "scores", "scores": [1.2, 1.9]},
    ]
    assert events[0]["judge"] == {"model": "internlm/x-reward", "prompt": "arena_hard"}


def alpaca_row(instruction, preference, model="model-x", annotator="weighted_alpaca_eval_gpt4_turbo"):
    return {
        "instruction": instruction,
        "output_1": "base answer",
        "generator_1": "gpt4_1106_preview",
        "dataset": "helpful_base",
        "output_2": "the model's longer answer",
        "generator_2": model,
        "annotator": annotator,
        "preference": preference,
        "price_per_example": 0.01,
        "time_per_example": 0.4,
    }


def test_alpaca_eval_order_and_preferences(tmp_path):
    rows = [alpaca_row(f"instruction {i}", p) for i, p in enumerate([1.0000002, 2, "1.9", 0, None, float("nan")])]
    path = tmp_path / "results" / "model-x" / "weighted_alpaca_eval_gpt4_turbo" / "annotations.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(rows))  # Python writes the missing one as NaN
    assert detect(path) == "alpaca_eval"
    events = list(read_verdicts([str(tmp_path / "results")]))
    for row, event in zip(rows, events):
        # AlpacaEval's processors: output_2 shown first when this seeded choice is True (seed 0)
        swapped = random.Random("is_switched_outputs" + row["instruction"] + "0").choices([False, True], k=1)[0]
        assert [c["model"] for c in event["candidates"]] == (
            ["model-x", "gpt4_1106_preview"] if swapped else ["gpt4_1106_preview", "model-x"]
        )
        assert event["order_known"] and event["candidates"][int(swapped)]["baseline"]
        assert "instruction" not in json.dumps(event)
    p_model = [0.0000002, 1.0, 0.9, 0.5]
    for event, p in zip(events, p_model):
        first_is_model = event["candidates"][0]["model"] == "model-x"
        assert event["verdict"]["p_first"] == pytest.approx(p if first_is_model else 1 - p)
    assert [e["verdict"]["kind"] for e in events[4:]] == ["failed", "failed"]
    [rate] = judge_report([game_from_event(e) for e in events]).models
    assert rate.win_rate == pytest.approx(100 * sum(p_model) / 4) and rate.n == 4  # AlpacaEval: mean(preference - 1)


def test_alpaca_eval_unknown_annotator_has_no_order(tmp_path):
    path = tmp_path / "annotations.json"
    path.write_text(json.dumps([alpaca_row("x", 2, annotator="my_own_annotator")]))
    [event] = read_verdicts([str(path)])
    assert event["order_known"] is False
    [judge] = judge_report([game_from_event(event)]).judges
    assert judge.metrics["first_position_rate"].n == 0 and "order unknown" in judge.notes[0]


def test_mt_bench_pairs_single_humans_and_answer_lengths(tmp_path):
    judgment = tmp_path / "model_judgment"
    write_jsonl(
        judgment / "gpt-4_pair.jsonl",
        [
            {
                "question_id": 81,
                "model_1": "vicuna-13b",
                "model_2": "gpt-3.5-turbo",
                "g1_winner": "model_2",
                "g2_winner": "model_2",
                "judge": ["gpt-4", "pair-v2"],
                "g1_user_prompt": "...",
                "g1_judgment": "[[B]]",
                "g2_user_prompt": "...",
                "g2_judgment": "[[A]]",
                "turn": 1,
                "tstamp": 1687221890.5,
            },
            {
                "question_id": 82,
                "model_1": "llama-13b",
                "model_2": "gpt-3.5-turbo",
                "g1_winner": "tie",
                "g2_winner": "error",
                "judge": ["gpt-4", "pair-v2"],
                "turn": 1,
                "tstamp": 1687221891.0,
            },
        ],
    )
    write_jsonl(
        judgment / "gpt-4_single.jsonl",
        [
            {
                "question_id": 81,
                "model": "vicuna-13b",
                "judge": ["gpt-4", "single-v1"],
                "user_prompt": "...",
                "judgment": "Rating: [[7]]",
                "score": 7,
                "turn": 1,
                "tstamp": 1687221000.0,
            },
            {
                "question_id": 82,
                "model": "vicuna-13b",
                "judge": ["gpt-4", "single-v1"],
                "score": -1,
                "turn": 1,
                "tstamp": 1.0,
            },
        ],
    )
    write_jsonl(
        tmp_path / "human" / "human_judgments.jsonl",
        [
            {
                "question_id": 81,
                "model_a": "gpt-3.5-turbo",
                "model_b": "vicuna-13b",
                "winner": "model_a",
                "judge": "expert_1",
                "turn": 1,
            }
        ],
    )
    answers = tmp_path / "model_answer"
    write_jsonl(
        answers / "vicuna-13b.jsonl",
        [{"question_id": 81, "model_id": "vicuna-13b", "choices": [{"index": 0, "turns": ["one two three", "x"]}]}],
    )
    events = list(read_verdicts([str(judgment), str(tmp_path / "human")], answers=str(answers)))
    pairs = [e for e in events if e.get("game")]
    assert [(e["item_id"], e["game"], [c["model"] for c in e["candidates"]], e["verdict"]) for e in pairs] == [
        ("81:1", 1, ["vicuna-13b", "gpt-3.5-turbo"], {"kind": "pairwise", "preference": "B>A"}),
        ("81:1", 2, ["gpt-3.5-turbo", "vicuna-13b"], {"kind": "pairwise", "preference": "A>B"}),
        ("82:1", 1, ["llama-13b", "gpt-3.5-turbo"], {"kind": "pairwise", "preference": "A=B"}),
        ("82:1", 2, ["gpt-3.5-turbo", "llama-13b"], {"kind": "failed", "reason": "no verdict parsed"}),
    ]
    assert pairs[0]["timestamp"] == "2023-06-20T00:44:50.500000Z"
    assert pairs[0]["candidates"][0] == {"model": "vicuna-13b", "length_words": 3}
    assert pairs[0]["candidates"][1]["baseline"] is True  # in every pair of the file: the baseline mode's reference
    assert pairs[0]["human"] == [{"annotator": "expert_1", "preferred_model": "gpt-3.5-turbo"}]
    singles = [e for e in events if not e.get("game")]
    assert [e["verdict"] for e in singles] == [
        {"kind": "scores", "scores": [7.0], "scale": "1-10"},
        {"kind": "failed", "reason": "no score parsed"},
    ]
    report = judge_report([game_from_event(e) for e in events])
    pair_judge = next(j for j in report.judges if j.prompt == "pair-v2")
    assert pair_judge.metrics["position_consistency"].estimate == 0.5  # 81 consistent; 82 tie vs failed
    assert pair_judge.metrics["human_agreement"].n == 2  # both games of question 81


def test_lmc_reference_model_and_repeats(tmp_path):
    rows = [
        {
            "emobench_id": 194,
            "llm_judge": "gpt-4-0613",
            "judging_response_string": "[[A>B]] ...",
            "first_completion_by": "qwen1.5-32B-Chat",
            "second_completion_by": "llama-3-70b",
            "pairwise_choice": "A>B",
        },
        {
            "emobench_id": 194,
            "llm_judge": "gpt-4-0613",
            "judging_response_string": "...",
            "first_completion_by": "llama-3-70b",
            "second_completion_by": "qwen1.5-32B-Chat",
            "pairwise_choice": "A>>B",
        },
        {
            "emobench_id": 119,
            "llm_judge": "llama-3-70b",
            "judging_response_string": "...",
            "first_completion_by": "mistral-large",
            "second_completion_by": "qwen1.5-32B-Chat",
            "pairwise_choice": "B>A",
        },
    ]
    path = write_jsonl(tmp_path / "lmc.jsonl", rows)
    assert detect(path) == "lmc"
    events = list(read_verdicts([str(path)]))
    assert [e["candidates"] for e in events][0] == [
        {"model": "qwen1.5-32B-Chat", "baseline": True},
        {"model": "llama-3-70b"},
    ]
    assert [e["verdict"]["preference"] for e in events] == ["A>B", "A>>B", "B>A"]
    assert "judging_response_string" not in json.dumps(events)
    rates = {(r.judge, r.model): r.win_rate for r in judge_report([game_from_event(e) for e in events]).models}
    assert rates == {("gpt-4-0613", "llama-3-70b"): 50.0, ("llama-3-70b", "mistral-large"): 0.0}


@pytest.mark.parametrize(
    "source,rows,reason",
    [
        ("judgebench", [{"pair_id": "p", "judgments": []}], "judgments: must hold 1 or 2 games"),
        (
            "judgebench",
            [{"pair_id": "p", "judgments": [None], "response_model": "m"}],
            "judgments[].judgment.judge_model: missing",
        ),
        ("lmc", [{"llm_judge": "j", "first_completion_by": "a"}], "second_completion_by: missing"),
        (
            "lmc",
            [
                {
                    "llm_judge": "j",
                    "first_completion_by": "a",
                    "second_completion_by": "b",
                    "emobench_id": 1,
                    "pairwise_choice": "A>C",
                }
            ],
            "pairwise_choice: 'A>C' is not one of A>>B, A>B, A=B, B>A, B>>A",
        ),
        (
            "mt_bench",
            [
                {
                    "question_id": 1,
                    "model_1": "a",
                    "model_2": "b",
                    "g1_winner": "model_3",
                    "g2_winner": "tie",
                    "judge": ["gpt-4", "pair-v2"],
                    "turn": 1,
                }
            ],
            "g1_winner: 'model_3' is not one of",
        ),
        (
            "events",
            [
                {
                    "verdict_id": "v",
                    "judge": {"model": "j"},
                    "item_id": "i",
                    "timestamp": "2026-11-20T10:00:00Z",
                    "candidates": [{"model": "a"}],
                    "verdict": {"kind": "pairwise", "preference": "A>B"},
                }
            ],
            "a pairwise verdict needs exactly 2 candidates",
        ),
    ],
)
def test_a_file_not_in_the_named_format_is_one_line(tmp_path, source, rows, reason):
    path = write_jsonl(tmp_path / "in.jsonl", rows)
    with pytest.raises(SourceError) as caught:
        list(read_verdicts([str(path)], source))
    assert reason in caught.value.message and "\n" not in caught.value.message
    assert str(path) in caught.value.message


def test_auto_refuses_an_unknown_format(tmp_path):
    path = write_jsonl(tmp_path / "x.jsonl", [{"something": 1}])
    with pytest.raises(SourceError, match="not a format bias-audit reads"):
        list(read_verdicts([str(path)]))


def test_alpaca_eval_cross_annotations_are_the_human_verdicts_of_the_same_pairs(tmp_path):
    from sklearn.metrics import cohen_kappa_score

    judged = [alpaca_row(f"instruction {i}", p) for i, p in enumerate([1.0, 2.0, 2.0, 1.0])]
    people = [
        {
            "instruction": row["instruction"],
            "output_1": row["output_1"],
            "output_2": row["output_2"],
            "preference": p,
            "annotator_index": k,
            "datasplit": "eval",
        }
        for row, prefs in zip(judged, [(1, 1), (2, 1), (1, 1), (1.5, 1.5)])
        for k, p in enumerate(prefs)
    ]
    (tmp_path / "annotations.json").write_text(json.dumps(judged))
    (tmp_path / "alpaca_farm_human_crossannotations.json").write_text(json.dumps(people))
    events = list(
        read_verdicts([str(tmp_path / "annotations.json"), str(tmp_path / "alpaca_farm_human_crossannotations.json")])
    )
    assert len(events) == 4  # the people's rows are verdicts of the judged pairs, not judges of their own
    assert events[0]["human"] == [
        {"annotator": "0", "preferred_model": "gpt4_1106_preview"},
        {"annotator": "1", "preferred_model": "gpt4_1106_preview"},
    ]
    assert events[3]["human"] == [{"annotator": "0", "tie": True}, {"annotator": "1", "tie": True}]
    [judge] = judge_report([game_from_event(e) for e in events]).judges
    # per pair the side preferred, by display position (A, tie, B): the judge's against the people's
    # majority (pair 1: one each way, a tie of modes: their median, a tie)
    judge_side = ["base", "model", "model", "base"]
    people_side = ["base", "tie", "base", "tie"]

    def shown(event, side):
        return (
            "tie"
            if side == "tie"
            else "A"
            if (event["candidates"][0]["model"] == "model-x") == (side == "model")
            else "B"
        )

    assert judge.metrics["human_agreement"].n == 4
    expected = cohen_kappa_score(
        [shown(e, s) for e, s in zip(events, judge_side)], [shown(e, s) for e, s in zip(events, people_side)]
    )
    assert judge.metrics["human_agreement"].estimate == pytest.approx(expected)
