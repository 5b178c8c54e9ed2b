"""The judge review mode cannot be bent: a person judges only items served to them, under a
review id that names nothing, in the order the server drew; they cannot read the judge's verdict
(or other people's) on an item still open to them; their first verdict counts, a change is kept
as history."""

from __future__ import annotations

import psycopg
import pytest
from fastapi.testclient import TestClient

from bias_audit.storage.postgres import apply_migrations
from bias_audit.worker.composition import api_app
from bias_audit.worker.settings import Settings
from tests.service.audit_api_client import SECRET, codes, gql, token

pytestmark = pytest.mark.postgres
ITEM = "{ judgeReviewItem { reviewId tenantId question answers sampled } }"
RECORD = "mutation($r: String!, $p: String!) { recordJudgeVerdict(reviewId: $r, preference: $p) { reviewId preference counted } }"
DISAGREEMENTS = '{ judgeReport(tenantId: "acme") { judges { disagreements { itemId judgeVerdict humanVerdict } } } }'
FLIP = {"A>>B": "B>>A", "A>B": "B>A", "A=B": "A=B", "B>A": "A>B", "B>>A": "A>>B"}


@pytest.fixture
def judged(postgres_url, tmp_path):
    """Four verdicts of one judge (A>B each), every one sampled for blind review."""
    apply_migrations(postgres_url)
    settings = Settings(
        data_dir=tmp_path, consumer_name="api", store_url=postgres_url, jwt_secret=SECRET, judge_review_sample=1.0
    )
    with TestClient(api_app(settings)) as client:
        service = token("app", ["service"], "acme")
        for n in range(4):
            event = {
                "verdict_id": f"producer-{n}-judge-secret-model",
                "tenant_id": "acme",
                "timestamp": "2026-11-20T10:30:00Z",
                "judge": {"model": "secret-judge"},
                "item_id": f"q{n}",
                "query": f"Which answer explains item {n} better?",
                "candidates": [
                    {"model": "alpha", "response": f"First answer {n}."},
                    {"model": "beta", "response": f"Second answer {n}."},
                ],
                "verdict": {"kind": "pairwise", "preference": "A>B"},
            }
            assert client.post("/audit-verdict", json=event, headers=service).status_code == 200
        yield client, postgres_url


def served(client: TestClient, reviewer: str) -> dict:
    return gql(client, ITEM, token(reviewer, ["reviewer"], "acme"))["data"]["judgeReviewItem"]


def people(url: str) -> list[tuple]:
    with psycopg.connect(url) as connection:
        return connection.execute(
            "SELECT verdict_id, reviewer, preference, shown_swapped, review_id FROM judge_human_verdict ORDER BY id"
        ).fetchall()


def test_a_verdict_is_taken_only_on_an_item_served_to_that_person_under_an_id_naming_nothing(judged):
    client, url = judged
    rita, rex = token("rita", ["reviewer"], "acme"), token("rex", ["reviewer"], "acme")
    never_served = gql(client, RECORD, rita, r="producer-0-judge-secret-model", p="A>B")
    assert codes(never_served) == ["NOT_FOUND"] and "served to you" in never_served["errors"][0]["message"]
    item = served(client, "rita")
    assert "producer" not in item["reviewId"] and "secret" not in item["reviewId"] and len(item["reviewId"]) >= 20
    [no_field] = gql(client, "{ judgeReviewItem { verdictId } }", rita)["errors"]
    assert "Cannot query field 'verdictId'" in no_field["message"]
    someone_elses = gql(client, RECORD, rex, r=item["reviewId"], p="A>B")
    assert codes(someone_elses) == ["NOT_FOUND"]
    assert people(url) == []
    other_tenant = gql(client, RECORD, token("rita", ["reviewer"], "globex"), r=item["reviewId"], p="A>B")
    assert codes(other_tenant) == ["NOT_FOUND"]
    done = gql(client, RECORD, rita, r=item["reviewId"], p="A>>B")["data"]["recordJudgeVerdict"]
    assert done == {"reviewId": item["reviewId"], "preference": "A>>B", "counted": True}
    [(verdict_id, reviewer, stored, swapped, review_id)] = people(url)
    assert (reviewer, review_id) == ("rita", item["reviewId"])
    assert item["answers"][0].startswith("Second" if swapped else "First")  # the order the server drew and kept
    assert item["question"] == f"Which answer explains item {verdict_id.split('-')[1]} better?"  # shown with them
    assert stored == (FLIP["A>>B"] if swapped else "A>>B")


def test_the_judges_verdict_on_an_item_open_to_a_reviewer_is_not_theirs_to_read(judged):
    client, url = judged
    rita = token("rita", ["reviewer"], "acme")
    judged_items = []
    for _ in range(4):  # rita judges every item against the judge, so each is a disagreement
        item = served(client, "rita")
        judged_items.append(item)
        assert gql(client, RECORD, rita, r=item["reviewId"], p="B>>A")["data"]["recordJudgeVerdict"]["counted"]
    assert served(client, "rita") is None  # nothing left for her
    [auditor_view] = gql(client, DISAGREEMENTS, token("audrey", ["auditor"], "acme"))["data"]["judgeReport"]["judges"]
    assert len(auditor_view["disagreements"]) == 4
    [rita_view] = gql(client, DISAGREEMENTS, rita)["data"]["judgeReport"]["judges"]
    assert rita_view == auditor_view  # she judged them all: nothing of hers is open
    [rex_view] = gql(client, DISAGREEMENTS, token("rex", ["reviewer"], "acme"))["data"]["judgeReport"]["judges"]
    assert rex_view["disagreements"] == []  # every item is still open to rex
    rex = token("rex", ["reviewer"], "acme")
    item = served(client, "rex")
    with psycopg.connect(url) as connection:  # the test's own knowledge of the order drawn: rex disagrees too
        item_id, swapped = connection.execute(
            "SELECT r.item_id, s.shown_swapped FROM judge_review_served s JOIN judge_review_item r "
            "USING (tenant_id, verdict_id) WHERE s.review_id = %s",
            (item["reviewId"],),
        ).fetchone()
    gql(client, RECORD, rex, r=item["reviewId"], p="A>>B" if swapped else "B>>A")
    [rex_after] = gql(client, DISAGREEMENTS, rex)["data"]["judgeReport"]["judges"]
    assert [d["itemId"] for d in rex_after["disagreements"]] == [item_id]  # the one he judged, no other


def test_a_change_of_mind_is_kept_as_history_and_the_first_verdict_counts(judged):
    client, url = judged
    rita = token("rita", ["reviewer"], "acme")
    item = served(client, "rita")
    first = gql(client, RECORD, rita, r=item["reviewId"], p="B>>A")["data"]["recordJudgeVerdict"]
    second = gql(client, RECORD, rita, r=item["reviewId"], p="A>B")["data"]["recordJudgeVerdict"]
    assert first["counted"] is True and second["counted"] is False
    rows = people(url)
    assert len(rows) == 2 and rows[0][0] == rows[1][0]
    query = '{ judgeReport(tenantId: "acme") { judges { humanAgreement { n } disagreements { humanVerdict } } } }'
    [judge] = gql(client, query, token("audrey", ["auditor"], "acme"))["data"]["judgeReport"]["judges"]
    assert judge["humanAgreement"]["n"] == 1
    assert judge["disagreements"] == [{"humanVerdict": "B>>A" if not rows[0][3] else "A>>B"}]  # the first, blind
