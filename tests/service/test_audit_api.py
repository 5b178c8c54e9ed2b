"""The audit API against a real PostgreSQL with HS256 tokens: who may do what, tenant scoping
without existence leaks, reviews that last, leases, keyset pages, and no raw query anywhere."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import psycopg
import pytest

from bias_audit.service.graphql_api import schema
from bias_audit.storage.postgres.audit_api import AuditStore, InteractionFilter
from tests.service.audit_api_client import CANARY, ITEM, codes, gql, token
from tests.services import run_cli

pytestmark = pytest.mark.postgres
ROOT = Path(__file__).resolve().parents[2]


def test_no_forged_or_expired_token_gets_in(api):
    client, events, _ = api
    for headers in (
        {},
        token("eve", ["admin"], secret="another-secret-of-at-least-32-bytes-xyz"),
        token("old", ["admin"], expires_in=-60),
        {"Authorization": "Basic abc"},
    ):
        assert client.post("/analyze-bias", json=events[0], headers=headers).status_code == 401
        refused = client.post("/graphql", json={"query": "{ biasTaxonomy { biasKey } }"}, headers=headers)
        assert refused.status_code == 401 and refused.headers["content-type"] == "application/problem+json"
        assert client.get(f"/audits/{events[0]['audit_id']}", headers=headers).status_code == 401
    no_tenant = token("x", ["reviewer"], tenant=None)
    assert client.post("/graphql", json={"query": "{ biasTaxonomy { biasKey } }"}, headers=no_tenant).status_code == 401


def test_the_root_says_where_things_are(api):
    client, _, _ = api
    assert client.get("/").json()["graphql"] == "/graphql" and client.get("/").json()["review"] == "/review"
    page = client.get("/review")
    assert page.status_code == 200 and "<title>bias-audit review</title>" in page.text and "https://" not in page.text
    docs = client.get("/docs").text  # Swagger UI from the package, not a CDN
    assert "https://" not in docs and "/docs-assets/swagger-ui-bundle.js" in docs
    assert client.get("/docs-assets/swagger-ui-bundle.js").status_code == 200


def test_a_service_may_send_only_its_own_tenants_events(api):
    client, events, _ = api
    theirs = {**events[1], "audit_id": "new-globex-1"}  # globex's
    refused = client.post("/analyze-bias", json=theirs, headers=token("app", ["service"], "acme"))
    assert refused.status_code == 403 and "tenant 'globex'" in refused.json()["detail"]
    reviewer = client.post("/analyze-bias", json={**events[0], "audit_id": "n-2"}, headers=token("r", ["reviewer"]))
    assert reviewer.status_code == 403  # reading and reviewing are not sending


def test_reviewers_see_only_their_tenant_and_another_tenants_item_is_not_found(api):
    client, events, _ = api
    reviewer = token("rita", ["reviewer"], "acme")
    listed = gql(
        client,
        f"{{ llmInteractionAudits(filter: {{biasDetected: true}}, pagination: {{limit: 500}}) {{ {ITEM} }} }}",
        reviewer,
    )["data"]["llmInteractionAudits"]
    assert listed and {item["tenantId"] for item in listed} == {"acme"} and all(i["biasDetected"] for i in listed)
    globex = next(e["audit_id"] for e in events if e["tenant_id"] == "globex")
    answer = gql(client, f'{{ llmInteractionAudit(id: "{globex}") {{ id }} }}', reviewer)
    missing = gql(client, '{ llmInteractionAudit(id: "no-such-id") { id } }', reviewer)
    assert codes(answer) == codes(missing) == ["NOT_FOUND"]
    assert answer["errors"][0]["message"] == f"no interaction audit {globex!r}"  # as a missing one reads
    assert client.get(f"/audits/{globex}", headers=reviewer).status_code == 404
    own = next(e["audit_id"] for e in events if e["tenant_id"] == "acme")
    fetched = client.get(f"/audits/{own}", headers=reviewer)
    assert fetched.status_code == 200 and fetched.json()["tenant_id"] == "acme"
    nul = gql(client, '{ llmInteractionAudit(id: "a\\u0000b") { id } }', reviewer)
    assert codes(nul) == ["BAD_USER_INPUT"]  # a value PostgreSQL cannot hold is the caller's mistake
    assert client.get("/audits/a%00b", headers=reviewer).status_code == 400
    asked_for_other = gql(client, '{ llmInteractionAudits(filter: {tenantId: "globex"}) { id } }', reviewer)
    assert asked_for_other["data"]["llmInteractionAudits"] == []
    both = token("boss", ["auditor"], tenants=["acme", "globex"], tenant=None)
    everything = gql(client, "{ llmInteractionAudits(pagination: {limit: 500}) { tenantId } }", both)
    assert {i["tenantId"] for i in everything["data"]["llmInteractionAudits"]} == {"acme", "globex"}


def test_a_review_lasts_and_drops_the_item_from_the_unreviewed_list(api):
    client, _, url = api
    reviewer = token("rita", ["reviewer"], "acme")
    queue = gql(client, "{ reviewQueue(limit: 100) { id biasType biasConfidenceScore } }", reviewer)["data"][
        "reviewQueue"
    ]
    assert len(queue) >= 2
    first = queue[0]["id"]
    review = """mutation($id: ID!, $input: RecordBiasReviewInput!) {
                  recordBiasReview(id: $id, input: $input) { id humanReviewed humanBiasTag reviewNotes } }"""
    done = gql(
        client,
        review,
        {**reviewer, "traceparent": "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"},
        id=first,
        input={
            "humanBiasTag": ["gendered_language"],
            "reviewNotes": "yes",
            "verdicts": {queue[0]["biasType"][0]: "confirmed"},
        },
    )
    assert done["data"]["recordBiasReview"]["humanReviewed"] is True
    again = gql(
        client,
        review,
        token("ralf", ["reviewer"], "acme"),
        id=first,
        input={"humanBiasTag": [], "verdicts": {queue[0]["biasType"][0]: "dismissed"}},
    )
    assert "errors" not in again
    unreviewed = gql(
        client,
        "{ llmInteractionAudits(filter: {biasDetected: true, humanReviewed: false}, pagination: {limit: 500}) { id } }",
        reviewer,
    )["data"]["llmInteractionAudits"]
    assert first not in {i["id"] for i in unreviewed}
    assert first not in {
        i["id"] for i in gql(client, "{ reviewQueue(limit: 100) { id } }", reviewer)["data"]["reviewQueue"]
    }
    history = gql(
        client, f'{{ llmInteractionAudit(id: "{first}") {{ reviews {{ reviewer verdicts tags notes }} }} }}', reviewer
    )["data"]["llmInteractionAudit"]["reviews"]
    assert [(r["reviewer"], list(r["verdicts"].values())) for r in history] == [
        ("rita", ["confirmed"]),
        ("ralf", ["dismissed"]),
    ]
    with psycopg.connect(url) as connection:  # each review a row of its own; the audit row shows the latest
        rows = connection.execute(
            "SELECT reviewer, tags FROM bias_review WHERE audit_id = %s ORDER BY id", (first,)
        ).fetchall()
        [(trace,)] = connection.execute("SELECT trace_id FROM bias_review WHERE reviewer = 'rita'").fetchall()
        latest = connection.execute(
            "SELECT human_reviewed, human_bias_tag FROM llm_interaction_audit WHERE audit_id = %s", (first,)
        ).fetchone()
    assert rows == [("rita", ["gendered_language"]), ("ralf", [])]
    agreement = gql(client, "{ reviewAgreement { items verdicts krippendorffAlpha } }", reviewer)["data"]
    # one item, two reviewers who disagree: D_o = ((4 - 2) / 1) / 2 = 1, D_e = (4 - 2) / (2 x 1) = 1,
    # alpha = 1 - 1 / 1 = 0
    assert agreement["reviewAgreement"] == {"items": 1, "verdicts": 2, "krippendorffAlpha": 0.0}
    assert latest[0] is True and latest[1]["tags"] == []
    assert trace == "ab" * 16  # the request's traceparent, kept with the review
    metrics = client.get("/metrics").text
    assert 'bias_audit_reviews_total{verdict="confirmed"} 1.0' in metrics
    assert 'bias_audit_reviews_total{verdict="dismissed"} 1.0' in metrics
    assert 'bias_audit_http_route_requests_total{route="/graphql",status="200"}' in metrics, [
        line for line in metrics.splitlines() if "route_requests_total" in line
    ]


def test_an_auditor_reads_but_may_not_review_and_bad_input_is_named(api):
    client, _, _ = api
    auditor = token("audrey", ["auditor"], "acme")
    item = gql(
        client, "{ llmInteractionAudits(filter: {biasDetected: true}, pagination: {limit: 1}) { id } }", auditor
    )["data"]["llmInteractionAudits"][0]["id"]
    review = "mutation($id: ID!) { recordBiasReview(id: $id, input: {humanBiasTag: []}) { id } }"
    refused = gql(client, review, auditor, id=item)
    assert codes(refused) == ["FORBIDDEN"] and "admin or reviewer" in refused["errors"][0]["message"]
    reviewer = token("rita", ["reviewer"], "acme")
    unknown = gql(
        client,
        'mutation($id: ID!) { recordBiasReview(id: $id, input: {humanBiasTag: ["nope"]}) { id } }',
        reviewer,
        id=item,
    )
    assert codes(unknown) == ["BAD_USER_INPUT"] and "nope" in unknown["errors"][0]["message"]
    too_big = gql(client, "{ llmInteractionAudits(pagination: {limit: 100000}) { id } }", reviewer)
    assert codes(too_big) == ["BAD_USER_INPUT"]
    update = gql(
        client,
        "mutation($id: ID!) { updateLlmInteractionAuditBias(id: $id, input: {biasDetected: false}) { biasDetected } }",
        reviewer,
        id=item,
    )
    assert codes(update) == ["FORBIDDEN"]
    assert "errors" not in gql(client, "{ llmInteractionAudits { reviews { reviewer } } }", reviewer)
    deep = "{ __schema { types { " + "fields { type { ofType { " * 3 + "name" + " } } }" * 3 + " } } }"  # depth 12
    [too_deep] = gql(client, deep, reviewer)["errors"]
    assert "depth" in too_deep["message"].lower()  # (only introspection nests this deep in our schema)
    aliases = "{ " + " ".join(f"a{i}: biasTaxonomy {{ biasKey }}" for i in range(30)) + " }"
    [too_many] = gql(client, aliases, reviewer)["errors"]  # bounded before it runs
    assert "aliases" in too_many["message"].lower()


def test_two_reviewers_never_hold_one_item(api):
    client, _, _ = api
    first, second = token("rita", ["reviewer"], "acme"), token("ralf", ["reviewer"], "acme")
    item = gql(client, "{ reviewQueue(limit: 1) { id } }", first)["data"]["reviewQueue"][0]["id"]
    lease = "mutation($id: ID!) { openReviewItem(id: $id) { taken holder } }"
    assert gql(client, lease, first, id=item)["data"]["openReviewItem"] == {"taken": True, "holder": "rita"}
    assert gql(client, lease, second, id=item)["data"]["openReviewItem"] == {"taken": False, "holder": "rita"}
    assert item not in {
        i["id"] for i in gql(client, "{ reviewQueue(limit: 100) { id } }", second)["data"]["reviewQueue"]
    }
    assert item in {i["id"] for i in gql(client, "{ reviewQueue(limit: 100) { id } }", first)["data"]["reviewQueue"]}


def test_keyset_pages_do_not_overlap_and_count_the_whole(api):
    client, events, _ = api
    auditor = token("audrey", ["auditor"], tenants=["acme", "globex"], tenant=None)
    page = (
        "query($after: String) { llmInteractionAuditConnection(first: 7, after: $after) { totalCount "
        "pageInfo { hasNextPage endCursor } edges { cursor node { id } } } }"
    )
    seen: list[str] = []
    after = None
    while True:
        connection = gql(client, page, auditor, after=after)["data"]["llmInteractionAuditConnection"]
        seen += [edge["node"]["id"] for edge in connection["edges"]]
        assert connection["totalCount"] == len(events)
        if not connection["pageInfo"]["hasNextPage"]:
            break
        after = connection["pageInfo"]["endCursor"]
    assert len(seen) == len(set(seen)) == len(events)
    beyond = gql(client, page, auditor, after=connection["edges"][-1]["cursor"])["data"][
        "llmInteractionAuditConnection"
    ]
    assert beyond["edges"] == [] and beyond["totalCount"] == len(events)  # an empty page still counts the whole
    nothing = gql(
        client,
        '{ llmInteractionAuditConnection(filter: {userId: "none-such"}) { totalCount edges { node { id } } } }',
        auditor,
    )["data"]["llmInteractionAuditConnection"]
    assert nothing == {"totalCount": 0, "edges": []}
    assert codes(gql(client, page, auditor, after="not-a-cursor")) == ["BAD_USER_INPUT"]


def test_the_raw_query_is_in_no_answer_and_no_table(api):
    client, events, url = api
    admin = token("root", ["admin"], tenants=["acme", "globex"], tenant=None)
    answer = client.post(
        "/graphql",
        json={"query": f"{{ llmInteractionAudits(pagination: {{limit: 500}}) {{ {ITEM} }} }}"},
        headers=admin,
    )
    assert answer.status_code == 200 and CANARY not in answer.text
    assert {i["originalQuery"] for i in answer.json()["data"]["llmInteractionAudits"]} == {None}
    assert CANARY not in client.get(f"/audits/{events[0]['audit_id']}", headers=admin).text
    from bias_audit.storage.postgres import connect, every_row_as_text

    with connect(url) as connection:
        rows = list(every_row_as_text(connection))  # every table's every row
    assert len(rows) >= 40 and not any(CANARY in row for row in rows)


def test_the_committed_schema_is_the_served_one():
    committed = (ROOT / "service" / "schema.graphql").read_text()
    assert committed == str(schema) + "\n", (
        "run: python -c 'from bias_audit.service.graphql_api import schema; print(schema)' > service/schema.graphql"
    )


def test_the_report_of_a_tenants_stored_sessions_as_typed_fields(api):
    import json
    import sys

    from bias_audit.worker.samples import generate_sessions

    client, _, url = api
    service = token("app", ["service"], "acme")
    for session in generate_sessions(12, seed=44):
        assert client.post("/audit-session", json={**session, "tenant_id": "acme"}, headers=service).status_code == 200
    reviewer = token("rita", ["reviewer"], "acme")
    query = """{ biasReport(tenantId: "acme", sessions: 100) { tenantId sessions lengthCorrelation { pointEstimate
                 pValue } reviewers { reviewer offset { pointEstimate flagged } }
                 affinity { reviewer model effect ciLower ciUpper pValue n flagged mutual }
                 styleSimilarity { reviewer effect } reviewerPosteriors { reviewer posteriorMean } } }"""
    served = gql(client, query, reviewer)["data"]["biasReport"]
    printed = subprocess.run(
        [
            sys.executable,
            "-m",
            "bias_audit",
            "report",
            "--store",
            url,
            "--format",
            "json",
            "--tenant",
            "acme",
            "--sessions",
            "100",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    [section] = json.loads(printed.stdout)["tenants"]
    assert served["tenantId"] == "acme" and served["sessions"] == section["sessions"] == 12
    assert served["lengthCorrelation"]["pointEstimate"] == section["length_correlation"]["point_estimate"]
    assert [(r["reviewer"], r["offset"]["pointEstimate"]) for r in served["reviewers"]] == [
        (r["reviewer"], r["offset"]["point_estimate"]) for r in section["reviewers"]
    ]
    assert served["affinity"] and [
        (a["reviewer"], a["model"], a["effect"], a["flagged"]) for a in served["affinity"]
    ] == [(a["reviewer"], a["model"], a["effect"], a["flagged"]) for a in section["affinity"]]
    assert [(a["reviewer"], a["effect"]) for a in served["styleSimilarity"]] == [
        (a["reviewer"], a["effect"]) for a in section["style_similarity"]
    ]
    assert [p["posteriorMean"] for p in served["reviewerPosteriors"]] == [
        p["posterior_mean"] for p in section["reviewer_posteriors"]
    ]
    profiles = gql(client, '{ reviewerProfiles(tenantId: "acme") { reviewer } }', reviewer)["data"]["reviewerProfiles"]
    assert [p["reviewer"] for p in profiles] == [r["reviewer"] for r in section["reviewers"]]
    assert codes(gql(client, '{ biasReport(tenantId: "globex") { sessions } }', reviewer)) == ["NOT_FOUND"]


def test_the_requests_trace_id_reaches_the_result_and_the_stored_row(api):
    client, events, url = api
    event = {**events[0], "audit_id": "traced-1"}
    event.pop("trace_id", None)
    sent = client.post(
        "/analyze-bias",
        json=event,
        headers={**token("app", ["service"], event["tenant_id"]), "x-trace-id": "req-trace-1"},
    )
    assert sent.status_code == 200 and sent.json()["trace_id"] == "req-trace-1"
    parented = {**events[0], "audit_id": "traced-2"}
    parented.pop("trace_id", None)
    client.post(
        "/analyze-bias",
        json=parented,
        headers={
            **token("app", ["service"], event["tenant_id"]),
            "traceparent": "00-" + "12" * 16 + "-" + "34" * 8 + "-01",
        },
    )
    with psycopg.connect(url) as connection:
        stored = dict(
            connection.execute(
                "SELECT audit_id, trace_id FROM llm_interaction_audit WHERE audit_id IN ('traced-1', 'traced-2')"
            ).fetchall()
        )
    assert stored == {"traced-1": "req-trace-1", "traced-2": "12" * 16}


def test_rolled_up_history_is_read_within_the_tokens_tenants(api):
    client, _, url = api
    with psycopg.connect(url) as connection:  # what retention leaves of two tenants' old days
        connection.execute(
            "INSERT INTO bias_daily_aggregate VALUES ('acme', '2025-01-02', 'council', 'm1', 'r1', '', "
            "25, 5, 175.0), ('acme', '2025-01-03', 'council', 'm1', 'r1', '', 25, 0, 125.0), "
            "('globex', '2025-01-02', 'interaction', 'm2', '', 'toxicity', 4, 4, 3.2)"
        )
    reviewer = token("rita", ["reviewer"], "acme")
    [history] = gql(
        client,
        "{ rolledUp { tenantId firstDay lastDay days totals { source model reviewer items flagged mean } } }",
        reviewer,
    )["data"]["rolledUp"]
    assert (history["tenantId"], history["firstDay"], history["lastDay"], history["days"]) == (
        "acme",
        "2025-01-02",
        "2025-01-03",
        2,
    )
    assert history["totals"] == [
        {"source": "council", "model": "m1", "reviewer": "r1", "items": 50, "flagged": 5, "mean": 6.0}
    ]  # (175 + 125) / 50
    assert gql(client, '{ rolledUp(tenantId: "globex") { tenantId } }', reviewer)["data"]["rolledUp"] == []


def test_detector_precision_follows_the_latest_review_of_each_item(api):
    client, _, url = api
    reviewer = token("rita", ["reviewer"], "acme")
    queue = gql(client, "{ reviewQueue(limit: 200) { id biasType biasReportSummary } }", reviewer)["data"][
        "reviewQueue"
    ]
    bias_type = queue[0]["biasType"][0]
    chosen = [item for item in queue if bias_type in item["biasType"]][:3]
    assert len(chosen) >= 2
    review = "mutation($id: ID!, $v: JSON) { recordBiasReview(id: $id, input: {verdicts: $v}) { id } }"
    verdicts = ["confirmed", "dismissed", "confirmed"][: len(chosen)]
    for item, verdict in zip(chosen, verdicts):
        assert "errors" not in gql(client, review, reviewer, id=item["id"], v={bias_type: "dismissed"})
        assert "errors" not in gql(client, review, reviewer, id=item["id"], v={bias_type: verdict})  # the latest counts
    expected: dict[str, list[int]] = {}  # analyzer -> [confirmed, reviewed], from the stored findings
    for item, verdict in zip(chosen, verdicts):
        for analyzer in {f["analyzer"] for f in item["biasReportSummary"]["findings"] if f["bias_type"] == bias_type}:
            counts = expected.setdefault(analyzer, [0, 0])
            counts[0] += verdict == "confirmed"
            counts[1] += 1
    answer = gql(
        client,
        "{ detectorPrecision { detectors { tenantId biasType analyzer confirmed reviewed precision "
        "ciLower ciUpper } } }",
        reviewer,
    )["data"]["detectorPrecision"]["detectors"]
    assert {d["analyzer"]: [d["confirmed"], d["reviewed"]] for d in answer if d["biasType"] == bias_type} == expected
    assert all(d["tenantId"] == "acme" and d["ciLower"] <= d["precision"] <= d["ciUpper"] for d in answer)
    other = gql(client, "{ detectorPrecision { detectors { tenantId } } }", token("gil", ["reviewer"], "globex"))
    assert other["data"]["detectorPrecision"]["detectors"] == []  # acme's reviews stay acme's
    import json

    def report(*args: str) -> str:  # the cross-session report of the same store, every format
        done = run_cli("report", "--store", url, *args, env={"COLUMNS": "160"})
        return done.stdout

    in_report = json.loads(report("--format", "json"))["detector_precision"]
    assert [{k: d[k] for k in ("tenant_id", "bias_type", "analyzer", "confirmed", "reviewed")} for d in in_report] == [
        {
            "tenant_id": d["tenantId"],
            "bias_type": d["biasType"],
            "analyzer": d["analyzer"],
            "confirmed": d["confirmed"],
            "reviewed": d["reviewed"],
        }
        for d in answer
    ]
    assert "Detector precision from reviews" in report()
    assert sum(",detector_precision," in line for line in report("--format", "csv").splitlines()) == len(answer)
    assert "<h2>Detector precision from reviews</h2>" in report("--format", "html")


def test_an_answers_decision_links_are_kept_filterable_and_on_the_result(api):
    client, events, url = api
    service = token("app", ["service"], "acme")
    acme = [e for e in events if e["tenant_id"] == "acme"][:3]
    results = []
    for index, event in enumerate(acme):
        linked = {
            **event,
            "audit_id": f"decided-{index}",
            "query_context": {
                **(event["query_context"] or {}),
                "decision_id": "dec-42" if index < 2 else "dec-7",
                "reasoning_node_id": f"node-{index}",
                "note": "free text is never kept",
            },
        }
        results.append(client.post("/analyze-bias", json=linked, headers=service).json())
    assert [(r["decision_id"], r["reasoning_node_id"]) for r in results] == [
        ("dec-42", "node-0"),
        ("dec-42", "node-1"),
        ("dec-7", "node-2"),
    ]  # on the result, as on bias.audit.stream
    reviewer = token("rita", ["reviewer"], "acme")
    linked = gql(
        client, '{ biasEventsForDecision(decisionId: "dec-42") { auditId decisionId reasoningNodeId } }', reviewer
    )["data"]["biasEventsForDecision"]
    assert sorted((e["auditId"], e["reasoningNodeId"]) for e in linked) == [
        ("decided-0", "node-0"),
        ("decided-1", "node-1"),
    ]
    filtered = gql(client, '{ llmInteractionAudits(filter: {decisionId: "dec-7"}) { auditId } }', reviewer)
    assert filtered["data"]["llmInteractionAudits"] == [{"auditId": "decided-2"}]
    other = gql(
        client, '{ biasEventsForDecision(decisionId: "dec-42") { auditId } }', token("g", ["reviewer"], "globex")
    )
    assert other["data"]["biasEventsForDecision"] == []
    with psycopg.connect(url) as connection:
        [(context,)] = connection.execute(
            "SELECT query_context FROM llm_interaction_audit WHERE audit_id = 'decided-0'"
        ).fetchall()
    assert context is None  # the ids are kept in their own columns; query_context itself never


def test_sandbox_runs_are_read_within_the_tokens_tenants(api):
    from bias_audit.storage.postgres import connect, save_sandbox_run

    client, _, url = api
    document = {
        "baseline": {"n": 300},
        "candidate": {"n": 300},
        "correction": "holm",
        "pairs": 300,
        "bias_types": [
            {
                "bias_type": "gendered_language",
                "baseline_rate": 0.08,
                "candidate_rate": 0.16,
                "difference": 0.08,
                "ci_lower": 0.05,
                "ci_upper": 0.11,
                "p_value": 0.0001,
                "paired": True,
                "verdict": "worse",
            }
        ],
    }
    with connect(url) as connection:
        mine = save_sandbox_run(connection, tenant="acme", baseline={"model": "gpt-4o"}, document=document, worse=True)
        save_sandbox_run(connection, tenant="globex", baseline={}, document=document, worse=True)
    runs = gql(
        client,
        "{ sandboxRuns { id tenantId worse baseline baselineN biasTypes { biasType verdict pValue } } }",
        token("rita", ["auditor"], "acme"),
    )["data"]["sandboxRuns"]
    assert runs == [
        {
            "id": mine,
            "tenantId": "acme",
            "worse": True,
            "baseline": {"model": "gpt-4o"},
            "baselineN": 300,
            "biasTypes": [{"biasType": "gendered_language", "verdict": "worse", "pValue": 0.0001}],
        }
    ]


def test_a_page_reads_only_the_columns_its_fields_need_and_answers_as_the_whole_row_does(api):
    client, _, url = api
    reviewer = token("rita", ["reviewer"], "acme")
    whole = "id auditId tenantId llmModel biasType biasConfidenceScore biasScore logTimestamp llmResponse createdAt"
    full = gql(client, f"{{ llmInteractionAudits(pagination: {{limit: 500}}) {{ {whole} }} }}", reviewer)
    expected = [
        {"id": i["id"], "biasType": i["biasType"], "biasConfidenceScore": i["biasConfidenceScore"]}
        for i in full["data"]["llmInteractionAudits"]
    ]
    assert len(expected) == 20 and any(i["biasType"] for i in expected)
    assert all(isinstance(i["biasConfidenceScore"], float) for i in expected)
    narrow = "llmInteractionAudits(pagination: {limit: 500})"
    asked = [
        f"{{ {narrow} {{ id biasType biasConfidenceScore }} }}",
        f"{{ {narrow} {{ id ...parts }} }} fragment parts on LlmInteractionAudit {{ biasType biasConfidenceScore }}",
        f"{{ {narrow} {{ id ... on LlmInteractionAudit {{ biasType }} biasConfidenceScore }} }}",
    ]
    for query in asked:
        assert gql(client, query, reviewer)["data"]["llmInteractionAudits"] == expected, query
    pages = gql(
        client,
        "{ llmInteractionAuditConnection(first: 500) { edges { cursor node { id biasType biasConfidenceScore } } } }",
        reviewer,
    )["data"]["llmInteractionAuditConnection"]["edges"]
    assert [edge["node"] for edge in pages] == expected and all(edge["cursor"] for edge in pages)
    queue = gql(client, "{ reviewQueue(limit: 500) { id biasType biasConfidenceScore } }", reviewer)["data"][
        "reviewQueue"
    ]
    assert queue and all(item in expected for item in queue)

    async def narrow_rows() -> list[dict]:
        store = AuditStore(url, max_connections=2)
        try:
            return (await store.interactions(["acme"], InteractionFilter(), limit=5, columns={"bias_type"})).rows
        finally:
            await store.close()

    assert [set(row) for row in asyncio.run(narrow_rows())] == [
        {"id", "audit_id", "tenant_id", "log_timestamp", "bias_type"}
    ] * 5


def test_an_integer_past_64_bits_in_a_json_field_is_answered_whole(api):
    client, events, url = api
    own = next(e["audit_id"] for e in events if e["tenant_id"] == "acme")
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(
            "UPDATE llm_interaction_audit SET query_context = '{\"n\": 1180591620717411303424}' WHERE audit_id = %s",
            (own,),
        )
    answer = gql(client, f'{{ llmInteractionAudit(id: "{own}") {{ queryContext }} }}', token("r", ["reviewer"]))
    assert answer["data"]["llmInteractionAudit"]["queryContext"] == {"n": 2**70}
