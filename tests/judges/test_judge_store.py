"""Judge verdicts in PostgreSQL: imported from the field's files once however often, audited
into the store without their texts, and the judge report over the store equal to the one over
the files."""

from __future__ import annotations

import json

import pytest

from tests.judges.test_sources import judgebench_pair, write_jsonl
from tests.services import run_cli

pytestmark = pytest.mark.postgres
CANARY = "CANARY-judge-raw-query"


def _report(*args: str) -> dict:
    done = run_cli("judges", *args, "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_import_is_idempotent_and_the_store_reports_as_the_files_do(postgres_url, tmp_path):
    path = write_jsonl(
        tmp_path / "outputs" / "jb.jsonl",
        [
            judgebench_pair("p1", "A>B", "A>B", "B>A"),
            judgebench_pair("p2", "B>A", "A>B", "A>B"),
            judgebench_pair("p3", "A>B", None, "B>A"),
        ],
    )
    assert run_cli("setup", "--store", postgres_url).returncode == 0
    first = run_cli("import", str(tmp_path / "outputs"), "--store", postgres_url, "--tenant", "evals")
    again = run_cli("import", str(path), "--store", postgres_url, "--tenant", "evals", "--source", "judgebench")
    assert first.returncode == 0 and first.stderr == "imported 6 new judge verdicts of 6 read\n", first.stderr
    assert again.returncode == 0 and again.stderr == "imported 0 new judge verdicts of 6 read\n", again.stderr
    from_files = _report(str(path))
    from_store = _report("--store", postgres_url, "--tenant", "evals")
    assert from_store["judges"] == from_files["judges"] and from_store["judges"][0]["n_verdicts"] == 6
    assert _report("--store", postgres_url, "--tenant", "other")["judges"] == []
    # the cross-session report has a judges section for each tenant with verdicts
    report = run_cli("report", "--store", postgres_url, "--format", "json")
    assert report.returncode == 0, report.stderr
    [section] = json.loads(report.stdout)["judges"]
    assert section["tenant_id"] == "evals" and section["report"]["judges"] == from_files["judges"]
    text = run_cli("report", "--store", postgres_url, "--format", "text")
    assert "Judges of tenant evals" in text.stdout and "o1-mini-2024-09-12" in text.stdout


def test_audited_verdicts_are_stored_once_without_query_or_answers(postgres_url, tmp_path):
    import psycopg

    from bias_audit.storage.postgres import every_row_as_text

    events = tmp_path / "verdicts.jsonl"
    event = {
        "verdict_id": "v1",
        "tenant_id": "acme",
        "timestamp": "2026-11-20T10:30:00Z",
        "query": CANARY,
        "judge": {"model": "j"},
        "item_id": "i",
        "candidates": [{"model": "a", "response": f"{CANARY} answer"}, {"model": "b", "length_words": 3}],
        "verdict": {"kind": "pairwise", "preference": "A>B"},
    }
    events.write_text(json.dumps(event) + "\n" + json.dumps(event) + "\n")
    assert run_cli("setup", "--store", postgres_url).returncode == 0
    done = run_cli("audit", str(events), "--store", postgres_url)
    assert done.returncode == 0, done.stderr
    with psycopg.connect(postgres_url) as connection:
        rows = list(every_row_as_text(connection))
    stored = [row for row in rows if "v1" in row]
    assert len(stored) == 1 and CANARY not in "\n".join(rows)
    assert '""length_words"": 2' in stored[0]  # the answer's length is what is kept of it


def test_a_file_that_is_not_the_named_format_is_one_line_and_nothing_is_written(postgres_url, tmp_path):
    path = write_jsonl(tmp_path / "x.jsonl", [{"pair_id": "p", "judgments": [None], "response_model": "m"}])
    assert run_cli("setup", "--store", postgres_url).returncode == 0
    done = run_cli("import", str(path), "--store", postgres_url, "--source", "judgebench")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "x.jsonl:1: judgments[].judgment.judge_model: missing" in done.stderr
