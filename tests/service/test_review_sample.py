"""Reviews that can measure recall, on a real PostgreSQL: the queue serves the flagged answers and
a uniform share of the unflagged ones in random order, a review keeps its inclusion probability
and the person's judgement of the whole answer, and `report` estimates precision and recall from
them."""

from __future__ import annotations

import hashlib
import json

import psycopg
import pytest
from fastapi.testclient import TestClient

from bias_audit.storage.postgres import apply_migrations
from bias_audit.worker.composition import api_app
from bias_audit.worker.response_samples import generate_responses
from bias_audit.worker.settings import Settings
from tests.service.audit_api_client import SECRET, codes, gql, token
from tests.services import run_cli as cli

pytestmark = pytest.mark.postgres
SHARE = 0.5
QUEUE = "{ reviewQueue(limit: 200) { id auditId tenantId biasDetected } }"
REVIEW = "mutation($id: ID!, $input: RecordBiasReviewInput!) { recordBiasReview(id: $id, input: $input) { id } }"


def key(tenant: str, audit: str) -> float:
    """The sample's key as the migration defines it, computed here independently."""
    return int(hashlib.md5(f"{tenant}/{audit}".encode()).hexdigest()[:8], 16) / 2**32


@pytest.fixture
def served(postgres_url, tmp_path):
    apply_migrations(postgres_url)
    settings = Settings(
        data_dir=tmp_path, consumer_name="api", store_url=postgres_url, jwt_secret=SECRET, review_sample_unflagged=SHARE
    )
    with TestClient(api_app(settings)) as client:
        events = generate_responses(60, seed=31, tenant_id="acme")
        results = {}
        for event in events:
            reply = client.post("/analyze-bias", json=event, headers=token("app", ["service"], "acme"))
            assert reply.status_code == 200
            results[event["audit_id"]] = reply.json()
        yield client, results, postgres_url


def test_the_queue_serves_flags_and_a_uniform_sample_of_the_rest_in_random_order(served):
    client, results, _ = served
    rita = token("rita", ["reviewer"], "acme")
    queue = gql(client, QUEUE, rita)["data"]["reviewQueue"]
    expected = {a for a, r in results.items() if r["bias_detected"] or key("acme", a) < SHARE}
    assert {i["auditId"] for i in queue} == expected
    assert any(not i["biasDetected"] for i in queue) and any(i["biasDetected"] for i in queue)
    order = [i["auditId"] for i in queue]
    assert order == sorted(order, key=lambda a: hashlib.md5(f"acme#{a}".encode()).hexdigest())  # not by severity


def test_reviews_keep_their_inclusion_probability_and_the_report_estimates_recall(served, tmp_path):
    client, results, url = served
    rita = token("rita", ["reviewer"], "acme")
    queue = gql(client, QUEUE, rita)["data"]["reviewQueue"]
    flagged = [i for i in queue if i["biasDetected"]]
    sampled = [i for i in queue if not i["biasDetected"]]
    outside = next(a for a, r in results.items() if not r["bias_detected"] and key("acme", a) >= SHARE)
    for item in flagged[:4]:  # three confirmed, one dismissed, on each of its types
        verdict = "dismissed" if item is flagged[3] else "confirmed"
        types = results[item["auditId"]]["bias_type"]
        assert "errors" not in gql(client, REVIEW, rita, id=item["id"], input={"verdicts": {t: verdict for t in types}})
    marked = sampled[:1]
    for item in sampled[:5]:  # one of five sampled answers is biased with a stereotype the flags missed
        biased = item in marked
        answer = gql(
            client,
            REVIEW,
            rita,
            id=item["id"],
            input={"answerBiased": biased, "humanBiasTag": ["stereotype"] if biased else []},
        )
        assert "errors" not in answer
    assert "errors" not in gql(client, REVIEW, rita, id=outside, input={"answerBiased": False})
    with psycopg.connect(url) as connection:
        kept = dict(connection.execute("SELECT audit_id, inclusion_probability FROM bias_review").fetchall())
    assert {kept[i["auditId"]] for i in flagged[:4]} == {1.0}
    assert {kept[i["auditId"]] for i in sampled[:5]} == {SHARE}
    assert kept[outside] is None  # opened by id, not served as a sample: it cannot count for recall
    done = cli("report", "--store", url, "--format", "json")
    assert done.returncode == 0, done.stderr
    quality = {e["bias_type"]: e for e in json.loads(done.stdout)["detector_quality"]}
    overall = quality["any bias"]
    n_flagged = sum(r["bias_detected"] for r in results.values())
    assert overall["flagged"] == n_flagged and overall["unflagged"] == len(results) - n_flagged
    assert overall["precision"] == 3 / 4 and overall["precision_reviews"] == 4 and overall["sampled_reviews"] == 5
    tp, misses = n_flagged * 3 / 4, (len(results) - n_flagged) * 1 / 5  # by hand: strata sizes x their shares
    assert overall["recall"] == pytest.approx(tp / (tp + misses))
    low, high = overall["recall_ci"]
    assert low < overall["recall"] < high
    assert quality["stereotype"]["sampled_reviews"] == 5
    # every review is a labelled example for `learn`: a verdict per flagged type, a whole-answer judgement
    verdicts = sum(len(results[i["auditId"]]["bias_type"]) for i in flagged[:4])
    learned = cli("learn", "--store", url, "--features", "ngrams", "-o", str(tmp_path / "d.json"))
    confirmed = sum(len(results[i["auditId"]]["bias_type"]) for i in flagged[:3]) + 1  # and the one marked biased
    assert f"learning from {verdicts + 6} examples ({confirmed} biased)" in learned.stderr, learned.stderr
    text = cli("report", "--store", url, env={"COLUMNS": "200"})
    assert text.returncode == 0 and "Detector quality from reviews" in text.stdout
    assert f"{overall['recall']:.0%} ({low:.0%}-{high:.0%})" in text.stdout


def test_an_empty_review_is_still_refused(served):
    client, _, _ = served
    rita = token("rita", ["reviewer"], "acme")
    item = gql(client, QUEUE, rita)["data"]["reviewQueue"][0]
    assert codes(gql(client, REVIEW, rita, id=item["id"], input={})) == ["BAD_USER_INPUT"]


def test_a_queue_over_several_tenants_or_none_is_one_page_in_the_hash_order_across_them(postgres_url, tmp_path):
    """Each tenant's items are read in order from the index and merged: a page shorter than what
    is eligible must still be the first items of the order over all the caller's tenants."""
    import asyncio

    from bias_audit.storage.postgres.audit_api import AuditStore, InteractionFilter

    apply_migrations(postgres_url)
    settings = Settings(
        data_dir=tmp_path, consumer_name="api", store_url=postgres_url, jwt_secret=SECRET, review_sample_unflagged=SHARE
    )
    flagged: dict[tuple[str, str], bool] = {}
    with TestClient(api_app(settings)) as client:
        for tenant, seed in (("acme", 41), ("bolt", 42), ("core", 43)):
            for event in generate_responses(20, seed=seed, tenant_id=tenant):
                reply = client.post("/analyze-bias", json=event, headers=token("app", ["service"], tenant))
                assert reply.status_code == 200
                flagged[tenant, event["audit_id"]] = reply.json()["bias_detected"]

        def first(tenants: set[str], n: int) -> list[str]:
            eligible = [(t, a) for (t, a), bad in flagged.items() if t in tenants and (bad or key(t, a) < SHARE)]
            eligible.sort(key=lambda item: hashlib.md5(f"{item[0]}#{item[1]}".encode()).hexdigest())
            assert len(eligible) > n  # the page ends before the items do
            return [a for _, a in eligible[:n]]

        two = token("rita", ["reviewer"], None, tenants=["acme", "core"])
        queue = gql(client, "{ reviewQueue(limit: 12) { auditId } }", two)["data"]["reviewQueue"]
        assert [i["auditId"] for i in queue] == first({"acme", "core"}, 12)

    async def unscoped() -> list[str]:  # auth off: no tenant scope
        store = AuditStore(postgres_url, review_sample=SHARE)
        try:
            rows = await store.review_queue(None, InteractionFilter(), limit=15, holder="rita", columns={"bias_type"})
        finally:
            await store.close()
        assert all("queue_order" not in row for row in rows)  # the merge's helper column is not an item's
        return [row["audit_id"] for row in rows]

    assert asyncio.run(unscoped()) == first({"acme", "bolt", "core"}, 15)
