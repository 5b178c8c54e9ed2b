"""The deployment's database roles on a real PostgreSQL: `setup` (as the owner) grants them; a
worker and `serve` log in as members of bias_audit_writer and retention as a member of
bias_audit_retention, each doing its work and nothing more (no DROP, no DELETE it does not need)."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

import psycopg
import pytest
from fastapi.testclient import TestClient

from bias_audit.storage.postgres.retention import apply_retention
from bias_audit.storage.postgres.roles import RETENTION, WRITER
from bias_audit.worker.composition import api_app
from bias_audit.worker.settings import Settings
from tests.service.audit_api_client import SECRET, gql, token
from tests.storage.test_postgres_store import cli
from tests.storage.test_retention import now, partitions, store_interactions, store_sessions

pytestmark = pytest.mark.postgres


def login_as(url: str, group: str) -> str:
    """A new login role, member of `group`, and the store's URL with it as the user."""
    name = f"{group.removeprefix('bias_audit_')}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f'CREATE ROLE "{name}" LOGIN IN ROLE {group}')
    login, count = re.subn(r"^postgresql://[^@/]*@", f"postgresql://{name}@", url)
    assert count == 1, url
    return login


def test_each_role_does_its_work_and_no_more(postgres_url):
    done = cli("setup", "--store", postgres_url)
    assert done.returncode == 0 and f"roles {WRITER}, {RETENTION}: granted" in done.stdout, done.stderr
    writer, keeper = login_as(postgres_url, WRITER), login_as(postgres_url, RETENTION)

    # the worker's writes, a month's partition included (created as the owner, by the function)
    store_interactions(writer, 400, 4, seed=31)
    store_sessions(writer, 400, 3, seed=32)
    store_sessions(writer, 3, 2, seed=33)
    month = (now() - timedelta(days=400)).strftime("%Ym%m")
    assert f"council_session_audit_{month}" in partitions(postgres_url)
    with psycopg.connect(writer, autocommit=True) as connection:
        for statement in (
            "DELETE FROM council_session_audit",
            "DROP TABLE bias_review",
            f"SELECT bias_audit_drop_month('council_session_audit_{month}')",
            "SELECT bias_audit_month_partition('bias_review', now())",
            "DELETE FROM bias_daily_aggregate",
        ):
            with pytest.raises(psycopg.Error):
                connection.execute(statement.encode())

    with pytest.raises(psycopg.errors.InsufficientPrivilege):  # the writer cannot run retention
        apply_retention(writer)
    report = apply_retention(keeper)
    assert report.aggregated_sessions == 3 and report.aggregated_interactions == 4
    assert f"council_session_audit_{month}" in report.dropped_partitions
    with psycopg.connect(keeper, autocommit=True) as connection:
        with pytest.raises(psycopg.Error):
            connection.execute(
                b"INSERT INTO bias_review (tenant_id, audit_id, reviewer, verdicts, tags) "
                b"VALUES ('a', 'b', 'c', '{}', '[]')"
            )


def test_serve_reviews_and_updates_as_the_writer_role(postgres_url, tmp_path):
    assert cli("setup", "--store", postgres_url).returncode == 0
    writer = login_as(postgres_url, WRITER)
    settings = Settings(data_dir=tmp_path, consumer_name="api", store_url=writer, jwt_secret=SECRET)
    from bias_audit.worker.response_samples import generate_responses

    with TestClient(api_app(settings)) as client:
        for event in generate_responses(12, seed=34):
            event["tenant_id"] = "acme"
            assert client.post("/analyze-bias", json=event, headers=token("app", ["service"])).status_code == 200
        reviewer = token("rita", ["reviewer"])
        [item] = gql(client, "{ reviewQueue(limit: 1) { id biasType } }", reviewer)["data"]["reviewQueue"]
        opened = gql(client, "mutation($id: ID!) { openReviewItem(id: $id) { taken } }", reviewer, id=item["id"])
        assert opened["data"]["openReviewItem"]["taken"] is True
        reviewed = gql(
            client,
            "mutation($id: ID!, $v: JSON) { recordBiasReview(id: $id, input: {verdicts: $v}) { humanReviewed } }",
            reviewer,
            id=item["id"],
            v={item["biasType"][0]: "confirmed"},
        )
        assert reviewed["data"]["recordBiasReview"]["humanReviewed"] is True
        updated = gql(
            client,
            "mutation($id: ID!) { updateLlmInteractionAuditBias(id: $id, input: {biasDetected: true}) "
            "{ biasDetected } }",
            token("app", ["service"]),
            id=item["id"],
        )
        assert updated["data"]["updateLlmInteractionAuditBias"]["biasDetected"] is True
