"""The HTTP API: known answers, problem+json reasons, idempotent repeats, and schemathesis
fuzzing every operation against the app's own OpenAPI document."""

from __future__ import annotations

import json
import tempfile

import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from bias_audit.worker.composition import api_app
from bias_audit.worker.settings import Settings
from tests.builders import council_event

# the REST contract, fuzzed by a client that names its own host: the loopback rule has tests of its own
DATA = tempfile.TemporaryDirectory(prefix="bias-audit-api-")  # built at import, removed when the process exits
APP = api_app(Settings(data_dir=DATA.name, consumer_name="api-test"), loopback_only=False)
client = TestClient(APP)
RESPONSE = {
    "audit_id": "r-1",
    "timestamp": "2026-11-20T10:30:00Z",
    "original_query": "q",
    "llm_response": "Every engineer should trust his instincts, the chairman said.",
}


def test_analyze_bias_answers_with_the_result_envelope():
    reply = client.post("/analyze-bias", json=RESPONSE)
    assert reply.status_code == 200
    body = reply.json()
    assert body["source"] == "llm.response" and body["audit_id"] == "r-1"
    assert body["bias_type"] == ["gendered_language"] and body["mitigation_action"] == "rewrite"
    assert {f["analyzer"] for f in body["bias_report_summary"]["findings"]} == {"gendered_language", "generic_he"}


def test_a_repeated_id_gets_the_first_answer_again():
    first = client.post("/analyze-bias", json={**RESPONSE, "audit_id": "r-2"}).json()
    again = client.post("/analyze-bias", json={**RESPONSE, "audit_id": "r-2"})
    assert again.status_code == 200 and again.headers["Idempotent-Replay"] == "true" and again.json() == first


def test_a_repeated_id_with_another_body_is_a_conflict_naming_both_digests():
    import hashlib

    first = json.dumps({**RESPONSE, "audit_id": "r-9"}).encode()
    other = json.dumps({**RESPONSE, "audit_id": "r-9", "llm_response": "Something else entirely."}).encode()
    assert client.post("/analyze-bias", content=first, headers={"content-type": "application/json"}).status_code == 200
    conflict = client.post("/analyze-bias", content=other, headers={"content-type": "application/json"})
    assert conflict.status_code == 409 and conflict.headers["content-type"] == "application/problem+json"
    detail = conflict.json()["detail"]
    assert hashlib.sha256(first).hexdigest()[:16] in detail and hashlib.sha256(other).hexdigest()[:16] in detail


def test_audit_session():
    session = council_event({"M1": {"M1": 9, "M2": 6}, "M2": {"M1": 7, "M2": 8}, "R3": {"M1": 6, "M2": 5}})
    reply = client.post("/audit-session", json=session)
    assert reply.status_code == 200 and reply.json()["source"] == "council.session"
    assert reply.json()["window"]["sessions"] == 1


BAD = [
    (b"nope", 400, "not valid JSON"),
    (b"\xff\xfe", 400, "not UTF-8"),
    (b"x" * (5 * 1024 * 1024), 413, "over the limit"),
    (
        json.dumps({**RESPONSE, "members": [{"member_id": str(i), "response": "a"} for i in range(10_000)]}).encode(),
        422,
        "10000 members exceed the limit of 64",
    ),
    (json.dumps({"audit_id": "r-3"}).encode(), 422, "required field is missing"),
]


def test_bad_bodies_are_problem_json_with_one_line_reasons():
    for body, status, reason in BAD:
        reply = client.post("/analyze-bias", content=body, headers={"content-type": "application/json"})
        assert reply.status_code == status and reply.headers["content-type"] == "application/problem+json"
        problem = reply.json()
        assert problem["status"] == status and reason in problem["detail"] and "\n" not in problem["detail"]


def test_counterfactual_prompts_with_the_shipped_and_a_given_swap_list():
    reply = client.post("/counterfactual-prompts", json={"prompt": "Should he ask his father?"})
    assert reply.json() == [
        {"swap": {"he": "she", "his": "her", "father": "mother"}, "prompt": "Should she ask her mother?"}
    ]
    reply = client.post(
        "/counterfactual-prompts", json={"prompt": "Is a Christian fit?", "swaps": {"christian": "muslim"}}
    )
    assert reply.json() == [{"swap": {"christian": "muslim"}, "prompt": "Is a Muslim fit?"}]
    bad = client.post("/counterfactual-prompts", json={"swaps": {}})
    assert bad.status_code == 422 and bad.headers["content-type"] == "application/problem+json"
    assert "prompt" in bad.json()["detail"]


def test_a_chunked_body_over_the_limit_is_refused_without_holding_it():
    def chunks():  # no content-length: the server counts as it reads
        for _ in range(6):
            yield b"x" * (1024 * 1024)

    reply = client.post("/analyze-bias", content=chunks(), headers={"content-type": "application/json"})
    assert reply.status_code == 413 and "over the limit of 4194304 bytes" in reply.json()["detail"]


def test_health_and_metrics():
    # a request of its own: pytest-xdist may run this test in a process that made none
    assert client.post("/analyze-bias", json={**RESPONSE, "audit_id": "r-metrics"}).status_code == 200
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").status_code == 200
    text = client.get("/metrics").text
    assert 'bias_audit_http_requests_total{endpoint="llm.response",status="200"}' in text


def test_the_openapi_document_describes_the_bodies():
    document = client.get("/openapi.json").json()
    body = document["paths"]["/analyze-bias"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/LLMResponseEvent"}
    assert "llm_response" in document["components"]["schemas"]["LLMResponseEvent"]["required"]
    assert "application/problem+json" in document["paths"]["/analyze-bias"]["post"]["responses"]["422"]["content"]


schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_fuzzed_requests_get_documented_answers(case):
    # Every check but one: no 5xx; status codes, content types and bodies as documented;
    # schema-violating bodies rejected. Not "every schema-valid body accepted": rules across
    # fields (labels resolve to responses, scores within score_scale, each response scored once)
    # and the operator's size limits are not expressible in JSON Schema; such a body gets a 422
    # with its reason, which the status-code check does verify.
    case.call_and_validate(excluded_checks=[positive_data_acceptance])
