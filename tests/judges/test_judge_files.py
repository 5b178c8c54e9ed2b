"""Judge files as people have them, on format-faithful fixtures written here: MT-Bench's
single-answer grading (FastChat's show_result.py "Average" recomputed here from the raw rows),
gzipped files, the same verdicts in two files, rows that break the event contract (one line
`FILE:LINE: field: reason`, nothing stored), lines too long to read, empty inputs, and the
example lines docs/judges.md shows for each format."""

from __future__ import annotations

import copy
import gzip
import json
import re
import shutil
import tracemalloc
from collections import defaultdict
from pathlib import Path

import pytest

from bias_audit.analysis.judge_games import game_from_event
from bias_audit.analysis.judges import judge_report
from bias_audit.importers.common import MAX_LINE_BYTES, SourceError, bounded_lines, file_bytes
from bias_audit.importers.sources import read_verdicts
from bias_audit.reports.judges import judge_document
from tests.judges.test_sources import alpaca_row, judgebench_pair, write_jsonl
from tests.services import run_cli

ROOT = Path(__file__).resolve().parents[2]
PROMPTS = ("single-v1", "single-v1-multi-turn", "single-math-v1", "single-math-v1-multi-turn")


def mt_bench_single_rows() -> list[dict]:
    """A FastChat `gpt-4_single.jsonl` in the shape gen_judgment writes: per question and turn a
    prompt (math questions get the math prompts, turn 2 the multi-turn ones), integer and float
    scores, -1 where no rating was parsed, a 0 (out of scale, FastChat keeps it), and one answer
    judged again after a rerun appended to the file."""
    rows = []
    scores = {"vicuna-13b": [7, 8.5, 9, -1, 6, 10, 3, 0], "llama-13b": [2, 4, 5, 1, -1, 6, 2, 3]}
    for model, values in scores.items():
        for k, score in enumerate(values):
            question, turn = 81 + k // 2, 1 + k % 2
            math = question >= 83
            prompt = ("single-math-v1" if math else "single-v1") + ("-multi-turn" if turn == 2 else "")
            rows.append(
                {
                    "question_id": question,
                    "model": model,
                    "judge": ["gpt-4", prompt],
                    "user_prompt": "[Instruction] ...",
                    "judgment": f"Rating: [[{score}]]",
                    "score": score,
                    "turn": turn,
                    "tstamp": 1700000000.0 + len(rows),
                }
            )
    rows.append({**rows[0], "score": 9, "judgment": "Rating: [[9]]", "tstamp": 1700009999.0})  # the rerun: 7, then 9
    return rows


def fastchat_average(rows: list[dict]) -> dict[str, float]:
    """show_result.py --mode single's "Average": per model, the mean over every row whose score != -1."""
    kept: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        if row["score"] != -1:
            kept[row["model"]].append(row["score"])
    return {model: sum(v) / len(v) for model, v in kept.items()}


def answers_folder(path: Path) -> Path:
    # FastChat names a model by its answer file's name; the rows' model_id is something else here
    for model, words in (("vicuna-13b", [12, 30, 7, 45, 20, 60, 5, 80]), ("llama-13b", [3, 9, 14, 2, 40, 11, 6, 1])):
        rows = [
            {
                "question_id": 81 + q,
                "model_id": f"org/{model}-checkpoint",
                "choices": [{"index": 0, "turns": ["w " * words[2 * q], "w " * words[2 * q + 1]]}],
            }
            for q in range(4)
        ]
        write_jsonl(path / f"{model}.jsonl", rows)
    return path


def test_single_answer_grading_is_graded_not_failed_and_its_means_are_fastchats(tmp_path):
    rows = mt_bench_single_rows()
    path = write_jsonl(tmp_path / "model_judgment" / "gpt-4_single.jsonl", rows)
    events = list(read_verdicts([str(path)], answers=str(answers_folder(tmp_path / "model_answer"))))
    report = judge_report([game_from_event(e) for e in events])
    document = judge_document(report, sources=[str(path)])
    judges = {entry["judge_prompt"]: entry for entry in document["judges"]}
    assert set(judges) == set(PROMPTS)
    for prompt, entry in judges.items():
        mine = [r for r in rows if r["judge"][1] == prompt]
        assert entry["failed_rate"]["estimate"] == pytest.approx(sum(r["score"] == -1 for r in mine) / len(mine))
        assert entry["single_answer_verdicts"] == entry["n_verdicts"] == len(mine)
    # per model, the n-weighted mean of the judge model's mean_score entries is FastChat's Average
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for row in document["models"]:
        sums[row["model"]][0] += row["mean_score"]["estimate"] * row["mean_score"]["n"]
        sums[row["model"]][1] += row["mean_score"]["n"]
    ours = {model: total / n for model, (total, n) in sums.items()}
    assert ours == pytest.approx(fastchat_average(rows), abs=1e-4)
    # the rerun of question 81 turn 1 (7, then 9): a repetition that disagrees by two points; Wilson's
    # upper bound for 0 of 1 is z^2 / (1 + z^2) = 3.8415 / 4.8415 = 0.7935
    assert judges["single-v1"]["repeat_consistency"] == {
        "estimate": 0.0,
        "ci_lower": 0.0,
        "ci_upper": pytest.approx(0.7935, abs=1e-4),
        "n": 1,
    }
    distribution = judges["single-math-v1"]["score_distribution"]
    math_scores = [r["score"] for r in rows if r["judge"][1] == "single-math-v1" and r["score"] != -1]
    assert distribution["n"] == len(math_scores) and distribution["max"] == max(math_scores)
    assert distribution["ceiling_share"] == pytest.approx(sum(s >= 10 for s in math_scores) / len(math_scores))
    assert judges["single-math-v1"]["score_length_correlation"]["n"] == len(math_scores)  # lengths by file name


def test_single_answer_grading_renders_in_every_format(tmp_path):
    from bias_audit.reports.judges import render_judges

    path = write_jsonl(tmp_path / "gpt-4_single.jsonl", mt_bench_single_rows())
    document = judge_document(judge_report([game_from_event(e) for e in read_verdicts([str(path)])]), sources=["x"])
    for format in ("html", "csv", "json"):
        assert render_judges(document, format)
    done = run_cli("judges", str(path))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    text = done.stdout
    assert "Judges grading one answer alone" in text and "Mean score per model" in text
    assert "Judges comparing answers" not in text  # no pairwise column full of dashes
    assert text.count("mixes length with quality") == 1  # said once, in the legend, not under every judge


def test_gzipped_files_are_read_as_their_contents(tmp_path):
    plain = tmp_path / "plain"
    write_jsonl(
        plain / "jb.jsonl", [judgebench_pair("p1", "A>B", "A>B", "B>A"), judgebench_pair("p2", "B>A", "A>B", "A>B")]
    )
    annotations = plain / "results" / "model-x" / "weighted_alpaca_eval_gpt4_turbo" / "annotations.json"
    annotations.parent.mkdir(parents=True)
    annotations.write_text(json.dumps([alpaca_row(f"instruction {i}", 1 + i / 10) for i in range(8)], indent=2))
    zipped = tmp_path / "zipped"
    for source in plain.rglob("*"):
        if source.is_file():
            target = zipped / source.relative_to(plain)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.with_name(target.name + ".gz").write_bytes(gzip.compress(source.read_bytes()))
    assert sorted(p.name for p in zipped.rglob("*") if p.is_file()) == ["annotations.json.gz", "jb.jsonl.gz"]

    def report(folder: Path) -> dict:
        done = run_cli("judges", str(folder), "--format", "json")
        assert done.returncode == 0, done.stderr
        document = json.loads(done.stdout)
        return {"judges": document["judges"], "models": document["models"]}

    assert report(zipped) == report(plain) and len(report(zipped)["judges"]) == 2
    broken = tmp_path / "broken.jsonl.gz"
    whole = gzip.compress((plain / "jb.jsonl").read_bytes() * 50)
    broken.write_bytes(whole[: len(whole) // 2])  # a download cut off half way
    done = run_cli("judges", str(broken), "--source", "judgebench")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "not a readable gzip file" in done.stderr


def test_the_same_verdicts_in_two_files_count_once_and_a_new_verdict_is_a_repetition(tmp_path):
    pairs = [judgebench_pair(f"p{i}", "A>B", "A>B", "B>A" if i % 2 else "A>B") for i in range(3)]
    one = write_jsonl(tmp_path / "a" / "jb.jsonl", pairs)
    copy_of_it = tmp_path / "b" / "jb.jsonl"
    copy_of_it.parent.mkdir()
    shutil.copy(one, copy_of_it)
    for paths in ([str(one), str(one)], [str(tmp_path)]):
        files = read_verdicts(paths)
        [judge] = judge_report([game_from_event(e) for e in files]).judges
        assert judge.n_verdicts == 6 and files.duplicates == 6
    done = run_cli("judges", str(one), str(copy_of_it), "--format", "json")
    assert json.loads(done.stdout)["duplicates_dropped"] == 6
    assert "6 verdicts read twice" in run_cli("judges", str(one), str(one)).stdout
    # our events: the same id with another verdict is the same thing judged again
    event = {
        "verdict_id": "v1",
        "timestamp": "2026-11-20T10:30:00Z",
        "judge": {"model": "j"},
        "item_id": "i",
        "candidates": [{"model": "a"}, {"model": "b"}],
        "verdict": {"kind": "pairwise", "preference": "A>B"},
    }
    again = copy.deepcopy(event)
    again["verdict"]["preference"] = "B>A"
    events = write_jsonl(tmp_path / "events.jsonl", [event, event, again])
    files = read_verdicts([str(events)])
    [judge] = judge_report([game_from_event(e) for e in files]).judges
    assert (judge.n_verdicts, files.duplicates) == (2, 1)
    assert (judge.metrics["repeat_consistency"].estimate, judge.metrics["repeat_consistency"].n) == (0.0, 1)


VALID_ROWS = {
    "judgebench": judgebench_pair("p1", "A>B", "A>B", "B>A"),
    "lmc": {
        "emobench_id": 194,
        "llm_judge": "gpt-4-0613",
        "judging_response_string": "[[A>B]]",
        "first_completion_by": "qwen",
        "second_completion_by": "llama",
        "pairwise_choice": "A>B",
    },
    "mt_bench": {
        "question_id": 81,
        "model": "vicuna",
        "judge": ["gpt-4", "single-v1"],
        "score": 7,
        "turn": 1,
        "tstamp": 1687221890.5,
    },
    "events": {
        "verdict_id": "v1",
        "timestamp": "2026-11-20T10:30:00Z",
        "judge": {"model": "j", "prompt": "p"},
        "item_id": "i",
        "game": 1,
        "label": "A>B",
        "candidates": [{"model": "a", "response": "x y"}, {"model": "b", "length_words": 3}],
        "verdict": {"kind": "pairwise", "preference": "A>B"},
        "human": [{"preference": "B>A"}],
    },
}
WRONG = ([1], {}, "x", 3, 2.5, True, None, "", "A>C")


def _mutations():
    for source, row in VALID_ROWS.items():
        for field in row:
            for value in WRONG:
                yield pytest.param(source, field, value, id=f"{source}-{field}-{json.dumps(value)}")
    pair = VALID_ROWS["judgebench"]
    for value in WRONG:  # inside the games too
        yield pytest.param("judgebench", "judgments", [value, pair["judgments"][1]], id=f"judgebench-game-{value}")
        yield pytest.param(
            "judgebench", "judgments", [{"judgment": value, "decision": "A>B"}, None], id=f"judgebench-judgment-{value}"
        )
        yield pytest.param("mt_bench", "judge", ["gpt-4", value], id=f"mt_bench-judge-prompt-{value}")


@pytest.mark.parametrize("source,field,value", list(_mutations()))
def test_a_row_of_the_wrong_shape_is_read_or_refused_in_one_line(tmp_path, source, field, value):
    row = {**VALID_ROWS[source], field: value}
    path = write_jsonl(tmp_path / "in.jsonl", [VALID_ROWS[source], row])
    try:
        events = list(read_verdicts([str(path)], source))
    except SourceError as error:  # never a TypeError or an AttributeError
        assert error.message.startswith(f"{path}:2: ") and "\n" not in error.message, error.message
    else:
        assert len(events) >= 2


@pytest.mark.parametrize(
    "source,row,reason",
    [
        (
            "judgebench",
            {**VALID_ROWS["judgebench"], "label": [1]},
            ":1: label: an array is not one of A>>B, A>B, A=B, B>A, B>>A",
        ),
        (
            "judgebench",
            {**VALID_ROWS["judgebench"], "judgments": ["x", 1]},
            ":1: judgments[0]: must be an object, got a string",
        ),
        (
            "judgebench",
            judgebench_pair("p", "A>B", "A>C", "B>A"),
            ":1: judgments[0]: decision: 'A>C' is not one of A>>B, A>B, A=B, B>A, B>>A",
        ),
        (
            "judgebench",
            {**VALID_ROWS["judgebench"], "response_model": "m" * 2_000_000},
            ":1: response_model: 2000000 characters, over the limit of 256",
        ),
        ("lmc", {**VALID_ROWS["lmc"], "pairwise_choice": {}}, ":1: pairwise_choice: an object is not one of"),
        ("mt_bench", {**VALID_ROWS["mt_bench"], "score": "7"}, ":1: score: must be a number, got a string"),
        (
            "events",
            {**VALID_ROWS["events"], "timestamp": "9999-12-31T00:00:00Z"},
            ":1: timestamp: 9999-12-31T00:00:00+00:00 is",
        ),
        (
            "events",
            {**VALID_ROWS["events"], "candidates": [{"model": "a", "response": "w " * 200_000}, {"model": "b"}]},
            ":1: candidates.0.response: the text is 400000 bytes, larger than the limit of 262144 bytes",
        ),
    ],
)
def test_the_event_contract_holds_for_every_imported_row(tmp_path, source, row, reason):
    path = write_jsonl(tmp_path / "in.jsonl", [row])
    with pytest.raises(SourceError) as caught:
        list(read_verdicts([str(path)], source))
    assert f"in.jsonl{reason}" in caught.value.message and "\n" not in caught.value.message, caught.value.message


def test_a_bad_row_is_one_line_on_stderr_and_exit_2(tmp_path):
    path = write_jsonl(tmp_path / "in.jsonl", [{**VALID_ROWS["events"], "timestamp": "9999-12-31T00:00:00Z"}])
    done = run_cli("judges", str(path))
    assert done.returncode == 2 and done.stdout == ""
    assert re.fullmatch(
        rf"error: {re.escape(str(path))}:1: timestamp: 9999-12-31T00:00:00\+00:00 is [^\n]+ ahead of "
        r"this worker's clock [^\n]+\n",
        done.stderr,
    ), done.stderr


@pytest.mark.postgres
def test_import_of_a_file_with_a_bad_row_stores_none_of_it(postgres_url, tmp_path):
    import psycopg

    good = [judgebench_pair(f"p{i}", "A>B", "A>B", "B>A") for i in range(2500)]  # more than one batch
    path = write_jsonl(tmp_path / "jb.jsonl", good + [{**good[0], "pair_id": "late", "label": "A>C"}])
    assert run_cli("setup", "--store", postgres_url).returncode == 0
    done = run_cli("import", str(path), "--store", postgres_url)
    assert (
        done.returncode == 2
        and done.stderr == f"error: {path}:2501: label: 'A>C' is not one of A>>B, A>B, A=B, B>A, B>>A\n"
    ), done.stderr
    with psycopg.connect(postgres_url) as connection:
        assert connection.execute("SELECT count(*) FROM judge_verdicts").fetchone() == (0,)
    write_jsonl(path, good)
    done = run_cli("import", str(path), "--store", postgres_url)
    assert done.returncode == 0 and done.stderr == "imported 5000 new judge verdicts of 5000 read\n", done.stderr


@pytest.mark.parametrize("shape", ["jsonl", "array"])
def test_a_line_over_the_limit_is_refused_without_reading_it_whole(tmp_path, shape):
    path = tmp_path / "long"
    line = b"[" + b"[]," * (6 * MAX_LINE_BYTES // 3) + b"[]]"  # 24 MiB on one line
    path.write_bytes(b'{"pair_id": "p"}\n' + line + b"\n" if shape == "jsonl" else b"[\n" + line + b"\n]")
    tracemalloc.start()
    with pytest.raises(SourceError, match=r":2: the line is longer than 4 MiB"):
        list(bounded_lines(path)) if shape == "jsonl" else file_bytes(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 3 * MAX_LINE_BYTES  # a few MiB read, never the 24 MiB line


def test_an_empty_file_is_an_error_and_an_empty_tenant_an_empty_report(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    done = run_cli("judges", str(empty))
    assert done.returncode == 2 and done.stderr == f"error: no judge verdicts in {empty}: the file is empty\n"
    path = write_jsonl(tmp_path / "jb.jsonl", [judgebench_pair("p1", "A>B", "A>B", "B>A")])
    done = run_cli("judges", str(path), "--tenant", "someone-else", "--format", "json")
    assert done.returncode == 0 and json.loads(done.stdout)["judges"] == []


def test_judge_prompt_is_present_where_the_source_names_one_and_nowhere_null(tmp_path):
    rows = [
        {**VALID_ROWS["lmc"], "emobench_id": i, "llm_judge": judge, "pairwise_choice": choice}
        for i in range(6)
        for judge, choice in (("j1", "A>B"), ("j2", "B>A" if i % 2 else "A>B"), ("j3", "A>>B"))
    ]
    document = json.loads(run_cli("judges", str(write_jsonl(tmp_path / "lmc.jsonl", rows)), "--format", "json").stdout)
    assert document["agreement"]["alpha_without"] and '"judge_prompt": null' not in json.dumps(document)
    named = json.loads(
        run_cli(
            "judges", str(write_jsonl(tmp_path / "jb.jsonl", [VALID_ROWS["judgebench"]])), "--format", "json"
        ).stdout
    )
    assert named["judges"][0]["judge_prompt"] == "arena_hard"


def test_progress_counts_every_byte_of_the_input(tmp_path):
    plain = write_jsonl(tmp_path / "jb.jsonl", [judgebench_pair(f"p{i}", "A>B", "A>B", "B>A") for i in range(3000)])
    zipped = tmp_path / "jb2.jsonl.gz"
    zipped.write_bytes(gzip.compress(plain.read_bytes().replace(b'"pair_id": "p', b'"pair_id": "q')))
    files = read_verdicts([str(plain), str(zipped)])
    advanced: list[int] = []
    events = list(files.read(advanced.append))
    on_disk = plain.stat().st_size + zipped.stat().st_size  # the gzip file counts as stored, not as unpacked
    assert len(events) == 12000 and len(advanced) > 2 and sum(advanced) == on_disk


def _doc_examples() -> list[tuple[str, str]]:
    text = (ROOT / "docs" / "judges.md").read_text()
    return re.findall(r"```jsonl? (\w+)\n(.*?)```", text, re.S)


@pytest.mark.parametrize("source,body", _doc_examples(), ids=[s for s, _ in _doc_examples()])
def test_every_example_line_in_the_judges_docs_reads(tmp_path, source, body):
    path = tmp_path / ("annotations.json" if source == "alpaca_eval" else "example.jsonl")
    path.write_text(body)
    events = list(read_verdicts([str(path)], source))
    assert events and all(e["verdict"]["kind"] != "failed" for e in events)


def test_the_docs_show_an_example_of_every_source_format():
    from bias_audit.importers.sources import SOURCES

    assert {source for source, _ in _doc_examples()} == set(SOURCES) - {"auto", "events"}
