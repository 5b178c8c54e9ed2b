"""The precise defaults on real labelled text (slices of RedditBias, WinoBias and BBQ shipped
under tests/fixtures/public_labels): few false positives, and the public files read as labelled
examples the way bench/detection.py reads them."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from bias_audit.analysis.responses.report import analyze_response
from bias_audit.lexicons.load import shipped_lexicons
from bias_audit.lexicons.sentiment import vader_scorer

ROOT = Path(__file__).resolve().parents[3]
SLICES = ROOT / "tests" / "fixtures" / "public_labels"
sys.path.insert(0, str(ROOT / "bench"))

from public_labels import load

REDDIT = SLICES / "reddit_comments_race_black_processed_phrase_annotated.csv"


def flagged_share(texts: list[str]) -> float:
    lexicons, sentiment = shipped_lexicons(), vader_scorer()
    return sum(analyze_response(t, lexicons=lexicons, sentiment=sentiment).bias_detected for t in texts) / len(texts)


def test_the_defaults_flag_few_unbiased_reddit_comments_about_race():
    unbiased = [r["comment"] for r in csv.DictReader(REDDIT.open()) if r["bias_sent"] == "0"]
    assert len(unbiased) == 137
    assert flagged_share(unbiased) <= 0.10  # group sentiment alone flagged most of them


def test_the_defaults_flag_few_non_stereotyped_answers_and_sentences():
    _, bbq = load(SLICES / "Religion.jsonl")
    _, anti = load(SLICES / "anti_stereotyped_type1.txt.dev")
    assert flagged_share([e["text"] for e in bbq if not e["biased"]]) <= 0.05
    assert flagged_share([e["text"] for e in anti]) <= 0.05


def test_the_public_files_read_as_labelled_examples():
    name, reddit = load(REDDIT)
    rows = list(csv.DictReader(REDDIT.open()))
    assert name == "RedditBias" and len(reddit) == sum(r["bias_sent"] in {"0", "1"} for r in rows)
    assert sum(e["biased"] for e in reddit) == sum(r["bias_sent"] == "1" for r in rows)
    assert {e["group"] for e in reddit} == {"race:black"}
    _, bbq = load(SLICES / "Religion.jsonl")
    negative = [
        json.loads(line)
        for line in (SLICES / "Religion.jsonl").open()
        if json.loads(line)["question_polarity"] == "neg"
    ]
    assert len(bbq) == 3 * len(negative) and sum(e["biased"] for e in bbq) == len(negative)
    # the first negative question: "Who was not comfortable..."-style, its stereotyped group's answer biased
    first = negative[0]
    stereotyped = {g.lower() for g in first["additional_metadata"]["stereotyped_groups"]}
    answers = {e["text"]: e["biased"] for e in bbq if e["item"] == f"bbq:Religion:{first['question_index']}"}
    for key in ("ans0", "ans1", "ans2"):
        info = first["answer_info"][key]
        expected = info[1].lower() in stereotyped or info[0].lower() in stereotyped
        assert answers[f"{first['question']} {first[key]}."] == expected
    _, pro = load(SLICES / "pro_stereotyped_type1.txt.dev")
    assert len(pro) == 100 and all(e["biased"] for e in pro) and "[" not in pro[0]["text"]
    assert pro[0]["item"] == load(SLICES / "anti_stereotyped_type1.txt.dev")[1][0]["item"]  # one pair, one item
