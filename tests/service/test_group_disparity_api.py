"""Group disparity over live traffic, on a real PostgreSQL: answers to queries naming a group
(consent 2) keep the groups, never the query; `report --store` and GraphQL `groupDisparity` show
each group against the axis' other groups, tenant-scoped."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from bias_audit.storage.postgres import apply_migrations
from bias_audit.worker.composition import api_app
from bias_audit.worker.settings import Settings
from tests.service.audit_api_client import SECRET, gql, token
from tests.services import run_cli as cli

pytestmark = pytest.mark.postgres
QUERY = (
    "query($t: String!) { groupDisparity(tenantId: $t) { note groups { llmModel axis group answers others "
    "refusalRateGap { value others estimate ciLower ciUpper pValue flagged } "
    "lengthRatio { estimate flagged } } } }"
)
CANARY = "CANARY-7f1e-query"


def events() -> list[dict]:
    out = []
    for i in range(80):
        group = "woman" if i % 2 else "man"
        refuses = group == "woman" and i % 4 == 1  # half of the women's answers refuse
        out.append(
            {
                "audit_id": f"a{i}",
                "tenant_id": "acme",
                "timestamp": "2026-11-20T10:30:00Z",
                "llm_model": "m1",
                "consent_level": 2,
                "original_query": f"Should I hire a {group} as a pilot? {CANARY} {i}",
                "llm_response": "I'm sorry, but I can't help with that."
                if refuses
                else f"Yes: look at the experience, the training and the references of candidate {i}.",
            }
        )
    return out


@pytest.fixture
def served(postgres_url, tmp_path):
    apply_migrations(postgres_url)
    settings = Settings(data_dir=tmp_path, consumer_name="api", store_url=postgres_url, jwt_secret=SECRET)
    with TestClient(api_app(settings)) as client:
        for event in events():
            reply = client.post("/analyze-bias", json=event, headers=token("app", ["service"], "acme"))
            assert reply.status_code == 200, reply.text
        yield client, postgres_url


def test_graphql_and_the_report_show_the_group_refused_more(served):
    client, url = served
    answer = gql(client, QUERY, token("ana", ["auditor"], "acme"), t="acme")
    assert "errors" not in answer, answer
    report = answer["data"]["groupDisparity"]
    assert "unpaired" in report["note"] and "replay" in report["note"]
    groups = {g["group"]: g for g in report["groups"]}
    assert set(groups) == {"female", "male"} and groups["female"]["answers"] == 40
    female = groups["female"]["refusalRateGap"]
    assert (female["value"], female["others"], female["estimate"]) == (0.5, 0.0, 0.5)
    assert female["flagged"] and female["pValue"] < 0.05
    assert groups["male"]["refusalRateGap"]["flagged"]  # the other side of the same gap
    done = cli("report", "--store", url, "--format", "json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert {(e["group"], e["refusal_rate_gap"]["flagged"]) for e in document["group_disparity"]} == {
        ("female", True),
        ("male", True),
    }
    assert "unpaired" in document["group_disparity_note"]
    text = cli("report", "--store", url)
    assert "Group disparity over live traffic" in text.stdout and "+50.0%" in text.stdout
    with __import__("psycopg").connect(url) as connection:
        stored = connection.execute("SELECT string_agg(t::text, '') FROM llm_interaction_audit t").fetchone()[0]
    assert CANARY not in stored


def test_another_tenant_sees_nothing(served):
    client, _ = served
    answer = gql(client, QUERY, token("eve", ["auditor"], "other"), t="acme")
    assert answer["errors"][0]["extensions"]["code"] == "NOT_FOUND"
