"""Judge verdicts through the API: POST /audit-verdict audits and stores one, GraphQL judgeReport
answers what `bias-audit judges` prints over the same store, scoped to the caller's tenant."""

from __future__ import annotations

import json

from tests.service.audit_api_client import codes, gql, token
from tests.services import run_cli


def verdict(n: int, tenant: str = "acme", **changes) -> dict:
    return {
        "verdict_id": f"v{n}",
        "tenant_id": tenant,
        "timestamp": "2026-11-20T10:30:00Z",
        "judge": {"model": "gpt-judge", "prompt": "p1"},
        "item_id": f"i{n // 2}",
        "game": n % 2 + 1,
        "candidates": [{"model": "a", "length_words": 10 + n % 5}, {"model": "b", "length_words": 30}],
        "verdict": {"kind": "pairwise", "preference": "A>B" if n % 3 else "B>A"},
        **changes,
    }


def test_a_verdict_is_audited_stored_and_reported(api):
    client, _, url = api
    service = token("app", ["service"], "acme")
    for n in range(24):
        reply = client.post("/audit-verdict", json=verdict(n), headers=service)
        assert reply.status_code == 200, reply.text
    result = reply.json()
    assert result["source"] == "judge.verdict" and result["audit_id"] == "v23"
    assert result["judge"]["window"]["verdicts"] == 24
    again = client.post("/audit-verdict", json=verdict(23), headers=service)
    assert again.status_code == 200 and again.headers.get("Idempotent-Replay") == "true"
    other_judge = client.post("/audit-verdict", json=verdict(23, judge={"model": "other-judge"}), headers=service)
    assert other_judge.status_code == 409 and other_judge.headers["content-type"] == "application/problem+json"
    assert "verdict_id 'v23' was audited already with other content" in other_judge.json()["detail"]
    bad = client.post("/audit-verdict", json=verdict(99, candidates=[{"model": "a"}]), headers=service)
    assert bad.status_code == 422 and "exactly 2 candidates" in bad.json()["detail"]
    other = client.post("/audit-verdict", json=verdict(1, tenant="globex"), headers=service)
    assert other.status_code == 403

    reader = token("rita", ["reviewer"], "acme")
    query = """{ judgeReport(tenantId: "acme") { judges { judge judgePrompt nVerdicts flagged
                 firstPositionRate { estimate ciLower ciUpper n pValue flagged }
                 positionConsistency { estimate n } lengthPreference { estimate n } } } }"""
    served = gql(client, query, reader)["data"]["judgeReport"]
    printed = run_cli("judges", "--store", url, "--tenant", "acme", "--format", "json")
    [entry] = json.loads(printed.stdout)["judges"]
    [judge] = served["judges"]
    assert (
        (judge["judge"], judge["judgePrompt"], judge["nVerdicts"])
        == ("gpt-judge", "p1", 24)
        == (entry["judge"], entry["judge_prompt"], entry["n_verdicts"])
    )
    first = entry["first_position_rate"]
    assert judge["firstPositionRate"] == {
        "estimate": first["estimate"],
        "ciLower": first["ci_lower"],
        "ciUpper": first["ci_upper"],
        "n": first["n"],
        "pValue": first["p_value"],
        "flagged": first["flagged"],
    }
    assert judge["positionConsistency"]["n"] == 12 and judge["lengthPreference"]["n"] == 24
    assert codes(gql(client, '{ judgeReport(tenantId: "globex") { judges { judge } } }', reader)) == ["NOT_FOUND"]
