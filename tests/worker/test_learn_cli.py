"""`bias-audit learn` on a real PostgreSQL: reviewers whose notion of a stereotype is in the
text, not in the lexicons' evidence, give an adopted model; `audit` with its file reports the
model's version on flagged answers; the tenant it was trained on is the one it applies to."""

from __future__ import annotations

import json
import random

import psycopg
import pytest

from bias_audit.storage.postgres import PostgresInteractionStore, apply_migrations, interaction_row
from tests.analysis.test_learned_detector import BIASED, FINE
from tests.services import run_cli as cli

pytest.importorskip("sklearn")
pytestmark = pytest.mark.postgres
STEREOTYPE = "Most women never ask for a raise, the manager said."


def test_a_tenants_reviews_train_a_detector_the_audit_then_uses(postgres_url, tmp_path):
    apply_migrations(postgres_url)
    events = tmp_path / "events.jsonl"
    events.write_text("".join(json.dumps({"audit_id": f"e-{i}", "tenant_id": tenant, "timestamp": "2026-11-20T10:00:00Z",
                                          "llm_response": STEREOTYPE}) + "\n"
                              for i, tenant in enumerate(["acme", "acme", "globex"])))
    audited = [json.loads(line) for line in cli("audit", str(events)).stdout.splitlines()]
    assert all("stereotype" in r["bias_type"] for r in audited)  # the shipped rule flags it
    rng = random.Random(4)
    store, reviews = PostgresInteractionStore(postgres_url), []
    template = {"record_type": "llm_interaction_audit", "schema_version": "1.0", "tenant_id": "acme", "user_id": None,
                "trace_id": "t", "consent_level": 1, "llm_provider": None, "llm_model": None, "prompt_tokens": None,
                "completion_tokens": None, "total_tokens": None, "query_hash": None, "bias_detected": True,
                "bias_type": ["stereotype"], "bias_confidence_score": 0.8, "mitigation_action": "rewrite",
                "bias_report_summary": {}, "human_reviewed": True, "timestamp": "2026-11-01T00:00:00Z"}
    for index in range(160):
        biased = rng.random() < 0.5
        text = rng.choice(BIASED if biased else FINE) + " " + rng.choice(FINE)
        store.write([interaction_row({**template, "audit_id": f"r-{index}", "llm_response": text,
                                      "bias_score": {"stereotype": round(rng.random(), 3)}})])
        reviews.append((f"r-{index}", "confirmed" if biased else "dismissed"))
    store.close()
    with psycopg.connect(postgres_url) as connection:
        connection.cursor().executemany(
            "INSERT INTO bias_review (tenant_id, audit_id, reviewer, verdicts) VALUES ('acme', %s, 'rita', %s)",
            [(a, json.dumps({"stereotype": v})) for a, v in reviews])
    output = tmp_path / "learned.json"
    done = cli("learn", "--store", postgres_url, "--tenant", "acme", "--output", str(output))
    assert done.returncode == 0, done.stderr
    written = json.loads(output.read_text())
    [entry] = written["report"]
    assert entry["adopted"] and entry["auc"] > entry["auc_lexicon"] and written["tenant_id"] == "acme"
    used = [json.loads(line) for line in cli("audit", str(events), env={
        "BIAS_AUDIT_LEARNED_DETECTOR_FILE": str(output)}).stdout.splitlines()]
    by_tenant = {r["tenant_id"]: r["calibration_version"] for r in used}
    assert by_tenant == {"acme": written["version"], "globex": None}  # trained on acme: applied to acme only
    broken = tmp_path / "broken.json"
    broken.write_text('{"version": "v", "types": {"t": {"vocabulary": {"ab": 0}, "idf": [], "coef": [], "intercept": 0}}}')
    refused = cli("audit", str(events), env={"BIAS_AUDIT_LEARNED_DETECTOR_FILE": str(broken)})
    assert refused.returncode == 2 and refused.stderr.startswith(f"error: learned detector file {broken}: ")
