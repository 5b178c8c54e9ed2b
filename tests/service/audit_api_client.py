"""The audit API under test: a served app over a real PostgreSQL with HS256 tokens, and the
helpers its tests share."""

from __future__ import annotations

import time

import jwt
import pytest
from fastapi.testclient import TestClient

from bias_audit.storage.postgres import apply_migrations
from bias_audit.worker.composition import api_app
from bias_audit.worker.response_samples import generate_responses
from bias_audit.worker.settings import Settings

SECRET = "a-test-secret-of-at-least-32-bytes-0123456789"
CANARY = "CANARY-7f3e-the-users-raw-question"
ITEM = "id auditId tenantId biasDetected humanReviewed humanBiasTag reviewNotes originalQuery llmResponse"


def token(
    sub: str, roles: list[str], tenant: str | None = "acme", *, secret: str = SECRET, expires_in: int = 600, **claims
) -> dict[str, str]:
    body = {"sub": sub, "roles": roles, "exp": int(time.time()) + expires_in, **claims}
    if tenant is not None:
        body["tenant_id"] = tenant
    return {"Authorization": "Bearer " + jwt.encode(body, secret, algorithm="HS256")}


@pytest.fixture
def api(postgres_url, tmp_path):
    apply_migrations(postgres_url)
    settings = Settings(data_dir=tmp_path, consumer_name="api", store_url=postgres_url, jwt_secret=SECRET)
    with TestClient(api_app(settings)) as client:
        events = generate_responses(40, seed=21)
        for index, event in enumerate(events):
            event["tenant_id"] = "acme" if index % 2 == 0 else "globex"
            event["original_query"] = CANARY
            sender = token("app", ["service"], event["tenant_id"])
            assert client.post("/analyze-bias", json=event, headers=sender).status_code == 200
        yield client, events, postgres_url


def gql(client: TestClient, query: str, headers: dict[str, str], **variables) -> dict:
    reply = client.post("/graphql", json={"query": query, "variables": variables}, headers=headers)
    assert reply.status_code == 200, reply.text
    return reply.json()


def codes(answer: dict) -> list[str]:
    return [error["extensions"]["code"] for error in answer.get("errors", [])]
