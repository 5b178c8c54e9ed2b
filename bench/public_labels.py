"""Public labelled sets as contracts.md "Labelled example" records, as an application would send
their texts. Read from the files as their projects publish them (a user fetches them; slices ship
under tests/fixtures/public_labels/ with their licences):

- RedditBias (Barikeri et al. 2021, MIT; github.com/umanlp/RedditBias):
  data/<axis>/reddit_comments_<axis>_<group>_processed_phrase_annotated.csv. `comment`, with
  `bias_sent` 1 (negative stereotype) or 0; group from the file name; item = the comment id (its
  text where the file has no ids), so a comment in two files stays in one fold.
- BBQ (Parrish et al. 2022, CC BY 4.0; github.com/nyu-mll/BBQ): data/<Category>.jsonl, the
  ambiguous contexts and negative questions only, where "unknown" is right: the answer that puts
  the negative trait on the stereotyped group is biased, the other person and "unknown" are not
  (a non-negative question's wrong answer is bias by BBQ's score, but its text claims no stereotype). Text = the question and the answer; item = category and question index (one
  template's answers stay in one fold).
- WinoBias (Zhao et al. 2018, MIT; github.com/uclanlp/corefBias): WinoBias/wino/data/
  {pro,anti}_stereotyped_type{1,2}.txt.{dev,test}: pro-stereotypical sentences biased, anti not;
  item = the sentence pair (same line of the pro and anti file).
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REDDIT_GROUPS = {"female": "gender", "black": "race", "jews": "religion", "muslims": "religion", "lgbtq": "queerness"}


def _example(text: str, biased: bool, **rest: Any) -> dict[str, Any]:
    return {"text": text, "biased": biased, **{k: v for k, v in rest.items() if v is not None}}


def redditbias(path: Path) -> Iterator[dict[str, Any]]:
    group = next((g for g in REDDIT_GROUPS if f"_{g}_" in path.name), "unknown")
    with path.open(newline="", encoding="utf-8", errors="replace") as handle:
        for number, row in enumerate(csv.DictReader(handle)):
            label = (row.get("bias_sent") or "").strip()
            text = (row.get("comment") or "").strip()
            if label not in {"0", "1", "0.0", "1.0"} or not text:
                continue  # unannotated rows
            # two of the five files have no comment ids: the text stands for the comment
            key = (row.get("id") or "").strip() or hashlib.sha256(text.encode()).hexdigest()[:16]
            yield _example(
                text,
                label.startswith("1"),
                bias_type="stereotype" if label.startswith("1") else None,
                group=f"{REDDIT_GROUPS.get(group, group)}:{group}",
                item=f"reddit:{key}",
                id=f"{group}:{number}",
            )


def _bbq_role(info: list[str], stereotyped: list[str]) -> str:
    label = info[1].lower()
    if label == "unknown":
        return "unknown"
    groups = {g.lower() for g in stereotyped}
    # the answer's group label ("old", "nonOld", "F") or its words ("British"), named exactly
    aliases = {"f": {"f", "woman", "women", "girl", "female"}, "m": {"m", "man", "men", "boy", "male"}}
    names = aliases.get(label, {label}) | {info[0].lower()}
    return "target" if names & groups else "other"


def bbq(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row.get("context_condition") != "ambig" or row.get("question_polarity") != "neg":
                continue
            roles = {
                k: _bbq_role(v, row["additional_metadata"].get("stereotyped_groups", []))
                for k, v in row["answer_info"].items()
            }
            if sorted(roles.values()) != ["other", "target", "unknown"]:
                continue  # the answers' groups could not be told apart
            biased_role = "target"
            item = f"bbq:{row['category']}:{row['question_index']}"
            for key, role in sorted(roles.items()):
                answer = row[key]
                yield _example(
                    f"{row['question']} {answer}.",
                    role == biased_role,
                    bias_type="stereotype" if role == biased_role else None,
                    query=f"{row['context']} {row['question']}",
                    group=row["category"],
                    item=item,
                    id=f"{item}:{row['example_id']}:{key}",
                )


_BRACKETS = re.compile(r"[\[\]]")


def winobias(path: Path) -> Iterator[dict[str, Any]]:
    pro = path.name.startswith("pro_")
    pair = path.name.replace("pro_", "").replace("anti_", "")
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle):
            text = _BRACKETS.sub("", line.strip().split(" ", 1)[-1])
            if text:
                yield _example(
                    text,
                    pro,
                    bias_type="gendered_language" if pro else None,
                    group="gender",
                    item=f"winobias:{pair}:{number}",
                )


def load(path: Path) -> tuple[str, list[dict[str, Any]]]:
    """(set name, examples) by the file's name."""
    if path.name.startswith("reddit_comments_") and path.suffix == ".csv":
        return "RedditBias", list(redditbias(path))
    if "stereotyped_type" in path.name:
        return "WinoBias", list(winobias(path))
    if path.suffix == ".jsonl":
        return "BBQ", list(bbq(path))
    raise SystemExit(f"error: {path}: not a RedditBias annotated CSV, a WinoBias file or a BBQ category JSONL")
