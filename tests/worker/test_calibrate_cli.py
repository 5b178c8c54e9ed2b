"""`bias-audit calibrate` on a real PostgreSQL: reviews whose confirm probability is known give a
calibration that beats the rule on held-out reviews; `audit` with the file reports calibrated
confidence and the version; a broken file is one line."""

from __future__ import annotations

import json
import random

import psycopg
import pytest

from bias_audit.storage.postgres import PostgresInteractionStore, apply_migrations, interaction_row
from bias_audit.worker.response_samples import generate_responses
from tests.services import run_cli as cli

pytestmark = pytest.mark.postgres


def test_reviews_calibrate_the_confidence(postgres_url, tmp_path):
    apply_migrations(postgres_url)
    events = tmp_path / "events.jsonl"
    sample = [e for e in generate_responses(200, seed=61)]
    events.write_text("".join(json.dumps(e) + "\n" for e in sample))
    audited = [json.loads(line) for line in cli("audit", str(events)).stdout.splitlines()]
    template = next(r for r in audited if "gendered_language" in r["bias_type"])
    rng = random.Random(9)
    store, reviews = PostgresInteractionStore(postgres_url), []
    for index in range(400):  # reviewed items whose evidence spans 0.5-1 and whose truth is evidence^3
        evidence = round(0.5 + rng.random() / 2, 4)
        record = {
            **template,
            "record_type": "llm_interaction_audit",
            "audit_id": f"rev-{index}",
            "user_id": None,
            "query_hash": None,
            "prompt_tokens": None,
            "completion_tokens": None,
            "total_tokens": None,
            "schema_version": "1.0",
            "timestamp": "2026-11-01T00:00:00Z",
            "human_reviewed": True,
            "llm_response": "x",
            "bias_score": {"gendered_language": evidence},
        }
        store.write([interaction_row(record)])
        reviews.append(("demo", f"rev-{index}", "confirmed" if rng.random() < evidence**3 else "dismissed"))
    store.close()
    with psycopg.connect(postgres_url) as connection:
        connection.cursor().executemany(
            "INSERT INTO bias_review (tenant_id, audit_id, reviewer, verdicts) VALUES (%s, %s, 'rita', %s)",
            [(t, a, json.dumps({"gendered_language": v})) for t, a, v in reviews],
        )
    output = tmp_path / "calibration.json"
    done = cli("calibrate", "--store", postgres_url, "--output", str(output))
    assert done.returncode == 0, done.stderr
    written = json.loads(output.read_text())
    [entry] = written["report"]
    assert entry["bias_type"] == "gendered_language" and entry["reviews"] == 400
    assert entry["brier_after"] < entry["brier_before"]  # evidence read as a probability overstates confirms
    assert written["version"] in done.stdout and "gendered_language" in written["types"]

    calibrated = [
        json.loads(line)
        for line in cli("audit", str(events), env={"BIAS_AUDIT_CALIBRATION_FILE": str(output)}).stdout.splitlines()
    ]
    before = {r["audit_id"]: r for r in audited}
    changed = [r for r in calibrated if "gendered_language" in r["bias_type"]]
    assert changed and all(r["calibration_version"] == written["version"] for r in changed)
    assert all(
        r["bias_confidence_score"] < before[r["audit_id"]]["bias_confidence_score"]
        for r in changed
        if r["bias_type"] == ["gendered_language"]
    )  # evidence^3 < evidence: the calibrated value is lower
    assert all(r["calibration_version"] is None for r in calibrated if not r["bias_detected"])

    broken = tmp_path / "broken.json"
    broken.write_text('{"version": "v", "types": {"t": {"x": [0.9, 0.1], "y": [0, 1]}}}')
    refused = cli("audit", str(events), env={"BIAS_AUDIT_CALIBRATION_FILE": str(broken)})
    assert refused.returncode == 2 and refused.stderr.startswith(f"error: calibration file {broken}: ")
    assert len(refused.stderr.splitlines()) == 1
    nothing = cli("calibrate", "--store", postgres_url, "--tenant", "nobody", "--output", str(tmp_path / "n.json"))
    assert nothing.returncode == 2 and "no reviews with verdicts" in nothing.stderr
    too_few = cli("calibrate", "--store", postgres_url, "--min-reviews", "1000", "--output", str(output))
    assert too_few.returncode == 0 and "not written" in too_few.stderr
    assert json.loads(output.read_text())["version"] == written["version"]  # the useful file is still there
