"""What an attacker tried against `serve`, each reproduction now refused: a service token reading
reviewers' notes, oversized and deeply nested GraphQL input, report floods, claims of the wrong
shape, reviews that say nothing or land on another reviewer's item, and a row two reviews race on."""

from __future__ import annotations

import json
import threading
import time

import jwt
import psycopg
import pytest
from fastapi.testclient import TestClient

from bias_audit.service.auth import TokenVerifier, Unauthenticated
from bias_audit.worker.composition import api_app
from bias_audit.worker.settings import Settings
from tests.service.audit_api_client import SECRET, codes, gql, token

pytestmark = pytest.mark.postgres
UPDATE = (
    "mutation($id: ID!, $input: UpdateLlmInteractionAuditBiasInput!) { updateLlmInteractionAuditBias(id: $id, "
    "input: $input) { id biasScore mitigationAction } }"
)
REVIEW = "mutation($id: ID!, $input: RecordBiasReviewInput!) { recordBiasReview(id: $id, input: $input) { id } }"


def flagged_items(client: TestClient, count: int = 1) -> list[dict]:
    reviewer = token("rita", ["reviewer"], "acme")
    return gql(client, f"{{ reviewQueue(limit: {count}) {{ id biasType }} }}", reviewer)["data"]["reviewQueue"]


def test_a_service_token_changes_nothing_with_an_empty_update_and_never_reads_what_reviewers_wrote(api):
    client, _, _ = api
    [item] = flagged_items(client)
    service = token("app", ["service"], "acme")
    empty = gql(client, UPDATE, service, id=item["id"], input={})
    assert codes(empty) == ["BAD_USER_INPUT"] and "at least one field" in empty["errors"][0]["message"]
    assert empty["data"] is None  # nothing of the row comes back
    for texts in ("llmResponse", "reviewNotes", "reviews { notes }", "biasReportSummary", "queryContext", "userId"):
        asked = gql(
            client,
            "mutation($id: ID!) { updateLlmInteractionAuditBias(id: $id, input: {biasDetected: true}) "
            f"{{ id {texts} }} }}",
            service,
            id=item["id"],
        )
        assert asked.get("data") is None and "Cannot query field" in asked["errors"][0]["message"], texts
    # a no-op update (biasDetected set to what it is) answers ids and the bias and status columns, nothing more
    flagged = gql(
        client, "{ reviewQueue(limit: 20) { id llmResponse biasReportSummary } }", token("rita", ["reviewer"], "acme")
    )["data"]["reviewQueue"]
    [reviewer_reads, *_] = [row for row in flagged if '"sentence"' in json.dumps(row["biasReportSummary"])]
    item = reviewer_reads
    every_field = (
        "id auditId tenantId traceId status logTimestamp biasDetected biasType biasScore "
        "biasConfidenceScore mitigationAction humanReviewed"
    )
    answer = gql(
        client,
        "mutation($id: ID!) { updateLlmInteractionAuditBias(id: $id, input: {biasDetected: true}) "
        f"{{ {every_field} }} }}",
        service,
        id=item["id"],
    )
    assert answer["data"]["updateLlmInteractionAuditBias"]["biasDetected"] is True
    evidence = [
        e["sentence"]
        for f in reviewer_reads["biasReportSummary"].get("findings", [])
        for e in f.get("evidence", [])
        if e.get("sentence")
    ]
    assert evidence and not any(sentence in json.dumps(answer) for sentence in evidence)
    assert reviewer_reads["llmResponse"] not in json.dumps(answer)


def test_bias_score_and_mitigation_action_take_typed_values_only(api):
    client, _, _ = api
    [item] = flagged_items(client)
    service = token("app", ["service"], "acme")
    nested: object = 1.0
    for _ in range(900):
        nested = {"x": nested}
    for bad in ({"length": nested}, {"length": "high"}, [1, 2], {f"k{i}": 1 for i in range(65)}, {"x" * 65: 1}):
        refused = gql(client, UPDATE, service, id=item["id"], input={"biasScore": bad})
        assert codes(refused) == ["BAD_USER_INPUT"], bad if not isinstance(bad, dict) or len(bad) < 3 else len(bad)
    wrong_action = client.post(
        "/graphql",
        headers=service,
        json={"query": UPDATE, "variables": {"id": item["id"], "input": {"mitigationAction": "x" * 1000}}},
    )
    assert "errors" in wrong_action.json() and wrong_action.json()["data"] is None
    done = gql(
        client,
        UPDATE,
        service,
        id=item["id"],
        input={"biasScore": {"gendered_language": 0.5, "toxicity": None}, "mitigationAction": "HUMAN_REVIEW"},
    )
    assert done["data"]["updateLlmInteractionAuditBias"]["biasScore"] == {"gendered_language": 0.5, "toxicity": None}
    assert done["data"]["updateLlmInteractionAuditBias"]["mitigationAction"] == "human_review"


def test_a_graphql_body_over_the_limit_is_refused_before_it_is_parsed(api):
    client, _, _ = api
    service = token("app", ["service"], "acme")
    huge = json.dumps({"query": "{ biasTaxonomy { biasKey } }", "variables": {"pad": "x" * (5 * 1024 * 1024)}})
    refused = client.post("/graphql", content=huge, headers={**service, "content-type": "application/json"})
    assert refused.status_code == 413 and refused.headers["content-type"] == "application/problem+json"
    assert "4194304 bytes" in refused.json()["detail"]


def test_an_event_nested_too_deep_is_a_422_naming_the_field(api):
    client, events, _ = api
    context: object = "leaf"
    for _ in range(900):
        context = {"x": context}
    event = {**events[0], "audit_id": "deep-1", "query_context": context}
    refused = client.post("/analyze-bias", json=event, headers=token("app", ["service"], "acme"))
    assert refused.status_code == 422 and "query_context" in refused.json()["detail"]
    assert "32 levels" in refused.json()["detail"]


def test_a_score_past_1e15_is_a_422_naming_it(api):
    client, _, _ = api
    event = {
        "verdict_id": "huge",
        "tenant_id": "acme",
        "timestamp": "2026-11-20T10:30:00Z",
        "judge": {"model": "j"},
        "item_id": "i",
        "candidates": [{"model": "a"}, {"model": "b"}],
        "verdict": {"kind": "scores", "scores": [1e19, 0]},
    }
    refused = client.post("/audit-verdict", json=event, headers=token("app", ["service"], "acme"))
    assert refused.status_code == 422 and refused.headers["content-type"] == "application/problem+json"
    assert "verdict.scores.scores.0" in refused.json()["detail"] and "1000000000000000" in refused.json()["detail"]


def test_reports_per_document_and_per_caller_are_bounded(api):
    client, _, _ = api
    auditor = token("audrey", ["auditor"], "acme")
    state = client.app.state.api
    started = []
    report = state.report
    state.report = lambda *args: started.append(args) or report(*args)
    for two in (
        '{ a: biasReport(tenantId: "acme") { sessions } b: biasReport(tenantId: "acme") { sessions } }',
        '{ biasReport(tenantId: "acme") { sessions } judgeReport(tenantId: "acme") { judges { judge } } }',
        '{ judgeReport(tenantId: "acme") { judges { judge } } reviewerProfiles(tenantId: "acme") { reviewer } }',
        'query { ...R judgeReport(tenantId: "acme") { judges { judge } } } '
        'fragment R on Query { biasReport(tenantId: "acme") { sessions } }',
    ):
        answer = gql(client, two, auditor)
        [refused] = answer["errors"]
        assert refused["extensions"]["code"] == "BAD_USER_INPUT" and "at most 1 report" in refused["message"], two
        assert answer.get("data") is None
    assert started == [] and state.report_slots.busy == set()  # refused before any report's work began
    slots = state.report_slots
    assert slots.take("audrey")  # audrey's first report is still being built
    try:
        for query in (
            '{ biasReport(tenantId: "acme") { sessions } }',
            '{ judgeReport(tenantId: "acme") { judges { judge } } }',
        ):
            busy = gql(client, query, auditor)
            assert codes(busy) == ["RATE_LIMITED"] and "already being built" in busy["errors"][0]["message"]
        other = gql(client, '{ biasReport(tenantId: "acme") { sessions } }', token("ann", ["auditor"], "acme"))
        assert "RATE_LIMITED" not in codes(other)  # another caller is not held up by audrey's burst
    finally:
        slots.release("audrey")
    huge_days = gql(client, '{ biasReport(tenantId: "acme", days: 1e308) { sessions } }', auditor)
    assert codes(huge_days) == ["BAD_USER_INPUT"] and "Error" not in huge_days["errors"][0]["message"]


def test_a_report_stops_at_its_time_budget_and_the_answer_says_so(api):
    client, _, _ = api
    service = token("app", ["service"], "acme")
    verdict = {
        "tenant_id": "acme",
        "timestamp": "2026-11-20T10:30:00Z",
        "judge": {"model": "gpt-judge"},
        "candidates": [{"model": "a", "length_words": 10}, {"model": "b", "length_words": 30}],
        "verdict": {"kind": "pairwise", "preference": "A>B"},
    }
    for n in range(4):
        assert (
            client.post(
                "/audit-verdict", json={**verdict, "verdict_id": f"t{n}", "item_id": f"i{n}"}, headers=service
            ).status_code
            == 200
        )
    auditor = token("audrey", ["auditor"], "acme")
    judges = '{ judgeReport(tenantId: "acme") { judges { judge } } }'
    assert gql(client, judges, auditor)["data"]["judgeReport"]["judges"] == [{"judge": "gpt-judge"}]
    client.app.state.api.report_slots.budget_s = 1e-6
    for query in (judges, '{ biasReport(tenantId: "acme") { sessions } }'):
        answer = gql(client, query, auditor)
        assert codes(answer) == ["TIMEOUT"], answer
        assert "time budget of 1e-06 s" in answer["errors"][0]["message"]
    assert client.app.state.api.report_slots.busy == set()


@pytest.mark.parametrize(
    "claims", [{"tenants": "acme"}, {"tenants": {"acme": 1}}, {"tenants": []}, {"tenant_id": ["acme"]}]
)
def test_a_tenants_claim_that_is_not_a_list_of_names_is_refused(claims):
    verifier = TokenVerifier(secret=SECRET)
    body = {"sub": "x", "roles": ["auditor"], "exp": int(time.time()) + 60, **claims}
    with pytest.raises(Unauthenticated, match="list of strings"):
        verifier.verify("Bearer " + jwt.encode(body, SECRET, algorithm="HS256"))


def test_a_token_verified_once_is_refused_once_it_expires_and_a_changed_one_is_verified_again():
    verifier = TokenVerifier(secret=SECRET)
    body = {"sub": "x", "roles": ["auditor"], "tenant_id": "acme", "exp": int(time.time()) + 2}
    signed = "Bearer " + jwt.encode(body, SECRET, algorithm="HS256")
    assert verifier.verify(signed).subject == verifier.verify(signed).subject == "x"
    forged = signed[:-2] + ("AA" if signed[-2:] != "AA" else "BB")
    with pytest.raises(Unauthenticated, match="does not verify"):
        verifier.verify(forged)
    time.sleep(body["exp"] - time.time() + 0.05)
    with pytest.raises(Unauthenticated, match="expired"):
        verifier.verify(signed)


def test_a_blank_secret_and_a_token_for_another_audience_are_refused():
    with pytest.raises(ValueError, match="different characters"):
        TokenVerifier(secret=" " * 34)
    verifier = TokenVerifier(secret=SECRET)  # no audience configured
    body = {"sub": "x", "roles": ["auditor"], "tenant_id": "acme", "exp": int(time.time()) + 60}
    assert verifier.verify("Bearer " + jwt.encode(body, SECRET, algorithm="HS256")).subject == "x"
    with pytest.raises(Unauthenticated, match="audience"):
        verifier.verify("Bearer " + jwt.encode({**body, "aud": "another-service"}, SECRET, algorithm="HS256"))


def test_a_malformed_body_is_a_400_for_the_body_not_a_403_for_a_tenant(api):
    client, _, _ = api
    unsigned = client.post("/graphql", json={"query": "{ biasTaxonomy { biasKey } }"})
    assert unsigned.status_code == 401 and unsigned.json()["type"] == "urn:bias-audit:problem:unauthenticated"
    reply = client.post(
        "/analyze-bias",
        content=b"{not json",
        headers={**token("app", ["service"], "acme"), "content-type": "application/json"},
    )
    assert reply.status_code == 400


def test_a_review_says_something_about_the_items_own_bias_types(api):
    client, _, _ = api
    [item] = flagged_items(client)
    reviewer = token("rita", ["reviewer"], "acme")
    empty = gql(client, REVIEW, reviewer, id=item["id"], input={})
    assert codes(empty) == ["BAD_USER_INPUT"] and "says something" in empty["errors"][0]["message"]
    foreign = gql(client, REVIEW, reviewer, id=item["id"], input={"verdicts": {"racism": "confirmed"}})
    assert codes(foreign) == ["BAD_USER_INPUT"] and "racism" in foreign["errors"][0]["message"]
    reviewed = gql(client, f'{{ llmInteractionAudit(id: "{item["id"]}") {{ humanReviewed }} }}', reviewer)
    assert reviewed["data"]["llmInteractionAudit"]["humanReviewed"] is False  # neither was recorded
    assert "errors" not in gql(client, REVIEW, reviewer, id=item["id"], input={"reviewNotes": "reads fine"})


def test_a_leased_item_is_reviewed_only_by_its_holder_who_holds_one_and_not_forever(api):
    client, _, url = api
    items = flagged_items(client, 3)
    rita, ralf = token("rita", ["reviewer"], "acme"), token("ralf", ["reviewer"], "acme")
    lease = "mutation($id: ID!) { openReviewItem(id: $id) { taken holder } }"
    aliased = (
        "mutation { "
        + " ".join(f'a{i}: openReviewItem(id: "{item["id"]}") {{ taken }}' for i, item in enumerate(items))
        + " }"
    )
    gql(client, aliased, rita)  # opening many at once holds only the last: nobody empties the queue
    assert [gql(client, lease, ralf, id=item["id"])["data"]["openReviewItem"]["taken"] for item in items] == [
        True,
        True,
        False,
    ]
    held = items[2]
    with psycopg.connect(url) as connection:  # rita has held it for 31 minutes, renewing it
        connection.execute(
            "UPDATE review_lease SET taken_at = now() - interval '31 minutes' WHERE audit_id = %s", (held["id"],)
        )
    forever = gql(client, lease, rita, id=held["id"])
    assert codes(forever) == ["CONFLICT"] and "at most 30" in forever["errors"][0]["message"]
    verdict = {"verdicts": {held["biasType"][0]: "confirmed"}}
    taken = gql(client, REVIEW, ralf, id=held["id"], input=verdict)
    assert codes(taken) == ["CONFLICT"] and "rita is reviewing" in taken["errors"][0]["message"]
    assert "errors" not in gql(client, REVIEW, rita, id=held["id"], input=verdict)


def test_concurrent_reviews_of_an_item_take_turns_on_its_row(api):
    """The review's transaction locks the audit row first: while another transaction holds that
    lock, the review waits on it (seen in pg_stat_activity), then lands on the row in full."""
    client, _, url = api
    [item] = flagged_items(client)
    reviewer = token("rita", ["reviewer"], "acme")
    answers: list[dict] = []
    with psycopg.connect(url) as holder, psycopg.connect(url, autocommit=True) as watcher:
        holder.execute("SELECT 1 FROM llm_interaction_audit WHERE audit_id = %s FOR UPDATE", (item["id"],))
        thread = threading.Thread(
            target=lambda: answers.append(
                gql(client, REVIEW, reviewer, id=item["id"], input={"verdicts": {item["biasType"][0]: "dismissed"}})
            )
        )
        thread.start()
        waiting = []
        for _ in range(600):  # until the review's backend is seen waiting for the row lock
            waiting = watcher.execute(
                "SELECT query FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND query LIKE '%FOR UPDATE%' AND pid <> pg_backend_pid()"
            ).fetchall()
            if waiting:
                break
            time.sleep(0.05)
        assert waiting and not answers
        holder.commit()
        thread.join(timeout=60)
    assert answers and "errors" not in answers[0]
    with psycopg.connect(url) as connection:
        state = connection.execute(
            "SELECT human_bias_tag FROM llm_interaction_audit WHERE audit_id = %s", (item["id"],)
        ).fetchone()[0]
    assert state["verdicts"] == {item["biasType"][0]: "dismissed"}


def test_graphql_over_websocket_is_off_not_a_server_error(api):
    client, _, _ = api
    from starlette.websockets import WebSocketDisconnect

    with pytest.raises(WebSocketDisconnect):
        with client.websocket_connect("/graphql", subprotocols=["graphql-transport-ws"]) as socket:
            socket.receive_text()


def test_the_review_page_cannot_be_framed_and_runs_no_inline_script(api):
    client, _, _ = api
    page = client.get("/review")
    policy = page.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy and page.headers["x-frame-options"] == "DENY"
    script_sources = next(part for part in policy.split(";") if part.strip().startswith("script-src"))
    assert "unsafe-inline" not in script_sources
    assert "<script>" not in page.text and '<script src="/review.js">' in page.text
    assert client.get("/review.js").headers["content-type"].startswith("text/javascript")


@pytest.fixture
def open_api(tmp_path):
    """Auth off, as `serve` runs on loopback with no JWT key."""
    with TestClient(api_app(Settings(data_dir=tmp_path, consumer_name="open")), base_url="http://localhost") as client:
        yield client


def test_with_auth_off_only_loopback_names_are_served_and_posts_must_be_json(open_api, api):
    health = {
        "localhost": 200,
        "127.0.0.1:8000": 200,
        "[::1]:8000": 200,
        "attacker.example": 421,
        "localhost.attacker.example": 421,
    }
    for host, status in health.items():
        assert open_api.get("/healthz", headers={"host": host}).status_code == status, host
    rebound = open_api.get("/healthz", headers={"host": "attacker.example"})
    assert (
        rebound.headers["content-type"] == "application/problem+json" and "attacker.example" in rebound.json()["detail"]
    )
    form = open_api.post("/analyze-bias", content=b'{"audit_id": "x"}', headers={"content-type": "text/plain"})
    assert form.status_code == 415
    client, events, _ = api  # auth on: a cookie from another site's page does not sign a POST
    cookie = {"cookie": "bias_audit_token=" + token("app", ["service"], "acme")["Authorization"].split()[1]}
    event = json.dumps({**events[0], "audit_id": "cookie-1"})
    cross = client.post(
        "/analyze-bias",
        content=event,
        headers={**cookie, "content-type": "application/json", "origin": "https://attacker.example"},
    )
    assert cross.status_code == 403 and "this site's own pages" in cross.json()["detail"]
    same = client.post(
        "/analyze-bias",
        content=event,
        headers={**cookie, "content-type": "application/json", "origin": "http://testserver"},
    )
    assert same.status_code == 200


def test_a_nul_character_in_an_event_is_a_422_naming_the_field_and_no_server_error(api, caplog):
    client, events, _ = api
    with caplog.at_level("WARNING"):
        reply = client.post(
            "/analyze-bias",
            json={**events[0], "audit_id": "nul-1", "llm_model": "gpt\u0000x"},
            headers=token("app", ["service"], "acme"),
        )
    assert reply.status_code == 422 and reply.json()["detail"].startswith("llm_model: contains a NUL character")
    assert not [r for r in caplog.records if r.levelname == "ERROR" or r.exc_info]


def test_introspection_is_for_admins(api):
    client, _, _ = api
    query = "{ __schema { queryType { name } } }"
    refused = gql(client, query, token("rita", ["reviewer"], "acme"))
    assert codes(refused) == ["FORBIDDEN"] and refused["data"] is None
    nested = gql(client, 'fragment F on Query { __type(name: "Query") { name } } { ...F }', token("s", ["service"]))
    assert codes(nested) == ["FORBIDDEN"]
    assert gql(client, query, token("root", ["admin"], "acme"))["data"]["__schema"]["queryType"]["name"] == "Query"
    assert "errors" not in gql(client, "{ __typename }", token("rita", ["reviewer"], "acme"))


def test_a_confidence_reads_as_the_audit_said_it_not_as_a_float_artefact(api):
    client, events, _ = api
    said = {}
    for event in events[:10]:
        again = client.post("/analyze-bias", json=event, headers=token("app", ["service"], event["tenant_id"]))
        said[event["audit_id"]] = again.json()["bias_confidence_score"]  # the first answer, replayed
    auditor = token("audrey", ["auditor"], tenants=["acme", "globex"], tenant=None)
    listed = gql(client, "{ llmInteractionAudits(pagination: {limit: 500}) { auditId biasConfidenceScore } }", auditor)
    read = {i["auditId"]: i["biasConfidenceScore"] for i in listed["data"]["llmInteractionAudits"]}
    assert {key: read[key] for key in said} == said
    assert all(repr(value) == repr(round(value, 4)) for value in read.values())  # 0.916, never 0.9159999999999999


def test_a_traceparent_that_is_not_one_is_dropped_not_a_refusal(api):
    client, events, _ = api
    sender = token("app", ["service"], "acme")
    event = {**events[0], "audit_id": "bogus-traceparent"}
    answered = client.post("/analyze-bias", json=event, headers={**sender, "traceparent": "x" * 2000})
    assert answered.status_code == 200, answered.text
    assert answered.json()["trace_id"] != "x" * 2000 and len(answered.json()["trace_id"]) <= 128
