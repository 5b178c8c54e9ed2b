"""`bias-audit audit --store` then `bias-audit report`: the council-bias sections of the contract
("Report: council biases") in every format, from a directory store and from PostgreSQL; the
records carry style_similarity and response_fingerprint, never the answers' text."""

from __future__ import annotations

import csv
import io
import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bias_audit.worker.cli import app
from bias_audit.worker.samples import generate_sessions

runner = CliRunner()
SECTIONS = ("affinity", "anchoring", "style_similarity", "self_consistency")
ENTRY = {"reviewer", "effect", "ci_lower", "ci_upper", "p_value", "n", "flagged"}


def sessions_with_repeats_and_answers_known(path: Path) -> list[dict]:
    """60 sample sessions; a third of the answers repeat the same model's answer of an earlier
    session (a probe), and every answer says whether it was correct."""
    rng = random.Random(3)
    sessions = generate_sessions(60, seed=41)
    for index, session in enumerate(sessions):
        for position, response in enumerate(session["responses"]):
            if index >= 5 and rng.random() < 0.35:
                response["response"] = sessions[rng.randrange(index)]["responses"][position]["response"]
            response["correct"] = rng.random() < 0.6
    path.write_text("".join(json.dumps(s) + "\n" for s in sessions))
    return sessions


def report(*args: str) -> str:
    result = runner.invoke(app, ["report", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_report_carries_the_council_bias_sections_from_a_directory_store(tmp_path):
    events = tmp_path / "events.jsonl"
    sessions = sessions_with_repeats_and_answers_known(events)
    store = tmp_path / "store"
    audited = runner.invoke(app, ["audit", str(events), "--store", str(store)])
    assert audited.exit_code == 0, audited.output
    records = [json.loads(line) for f in (store / "records").glob("*.jsonl") for line in f.read_text().splitlines()]
    texts = {r["response"] for s in sessions for r in s["responses"]}
    assert all(record["response_fingerprint"] and len(record["response_fingerprint"]) == 16 for record in records)
    assert any(record["style_similarity"] is not None for record in records)
    stored = "\n".join(json.dumps(r) for r in records)
    assert not any(text in stored for text in texts)  # never the text
    # the same answer seen again has the same fingerprint
    first = sessions[0]["responses"][0]["response"]
    repeats = {
        r["response_fingerprint"]
        for r in records
        if r["model_id"] == sessions[0]["responses"][0]["model"]
        and any(s["session_id"] == r["session_id"] and s["responses"][0]["response"] == first for s in sessions)
    }
    assert len(repeats) == 1

    document = json.loads(report("--input", str(store / "records"), "--format", "json"))
    [tenant] = document["tenants"]
    for section in SECTIONS:
        assert tenant[section], section
        assert all(ENTRY <= set(entry) for entry in tenant[section])
    assert all("model" in entry and "mutual" in entry for entry in tenant["affinity"])
    assert all("council_sd" in entry for entry in tenant["self_consistency"])
    assert any(entry["effect"] is not None and entry["contents"] >= 2 for entry in tenant["self_consistency"])
    assert tenant["length_given_correctness"]["status"] == "ok"
    assert len(tenant["reviewer_posteriors"]) == 5 and len(tenant["calibrated_view"]) == 5

    rows = list(csv.DictReader(io.StringIO(report("--input", str(store / "records"), "--format", "csv"))))
    metrics = {row["metric"] for row in rows}
    assert set(SECTIONS) <= metrics and {"reviewer_posterior_offset", "calibrated_z"} <= metrics
    html = report("--input", str(store / "records"), "--format", "html")
    assert "Council biases" in html and "Reviewer-model affinity" in html and "Calibrated view" in html
    assert "partially pooled (95% credible)" in html
    text = report("--input", str(store / "records"), "--verbose")
    assert "Council biases" in text and "partially pooled" in text


@pytest.mark.postgres
def test_the_postgres_store_gives_the_same_council_sections_as_the_files(tmp_path, postgres_url):
    events = tmp_path / "events.jsonl"
    sessions_with_repeats_and_answers_known(events)
    assert runner.invoke(app, ["audit", str(events), "--store", str(tmp_path / "files")]).exit_code == 0
    assert runner.invoke(app, ["setup", "--store", postgres_url]).exit_code == 0
    assert runner.invoke(app, ["audit", str(events), "--store", postgres_url]).exit_code == 0
    from_files = json.loads(report("--input", str(tmp_path / "files" / "records"), "--format", "json"))["tenants"][0]
    from_store = json.loads(report("--store", postgres_url, "--format", "json"))["tenants"][0]
    for section in (*SECTIONS, "length_given_correctness", "reviewer_posteriors", "calibrated_view"):
        assert from_store[section] == from_files[section], section
