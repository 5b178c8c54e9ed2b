"""What a hostile client could do to `serve`: read another tenant's result, send an unbounded
body, ask for an unbounded answer, or grow the process's caches without end."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

from fastapi.testclient import TestClient

from bias_audit.service.routes.events import MAX_SWAP_ANSWER_BYTES, MAX_SWAP_BODY_BYTES
from bias_audit.state.base import WindowItem
from bias_audit.state.memory_window import MemoryWindow
from bias_audit.state.result_cache import ResultCache
from bias_audit.worker.composition import api_app
from bias_audit.worker.settings import Settings


def client(data_dir) -> TestClient:
    return TestClient(
        api_app(Settings(data_dir=data_dir, consumer_name="b")),
        base_url="http://localhost",
    )


def response(tenant: str, text: str) -> dict:
    return {"audit_id": "shared-1", "tenant_id": tenant, "timestamp": "2026-11-20T10:30:00Z", "llm_response": text}


def test_a_tenant_reusing_another_tenants_id_gets_its_own_result_never_the_other_ones(tmp_path):
    api = client(tmp_path)
    theirs = api.post("/analyze-bias", json=response("tenant-b", "The chairman said he would decide."))
    mine = api.post("/analyze-bias", json=response("tenant-a", "The weather is fine."))
    assert theirs.status_code == mine.status_code == 200
    assert mine.json()["tenant_id"] == "tenant-a" and "Idempotent-Replay" not in mine.headers
    assert mine.json()["bias_type"] != theirs.json()["bias_type"]
    again = api.post("/analyze-bias", json=response("tenant-a", "The weather is fine."))
    assert again.headers["Idempotent-Replay"] == "true" and again.json() == mine.json()


def test_counterfactual_prompts_refuses_a_body_over_its_limit_without_reading_it_all(tmp_path):
    api = client(tmp_path)
    reply = api.post(
        "/counterfactual-prompts",
        content=b'{"prompt": "' + b"a" * MAX_SWAP_BODY_BYTES + b'"}',
        headers={"content-type": "application/json"},
    )
    assert reply.status_code == 413 and reply.headers["content-type"] == "application/problem+json"
    assert str(MAX_SWAP_BODY_BYTES) in reply.json()["detail"]


def test_counterfactual_prompts_bounds_its_answer_and_its_swaps(tmp_path):
    api = client(tmp_path)
    blown_up = api.post("/counterfactual-prompts", json={"prompt": "a " * 30_000, "swaps": {"a": "b" * 64}})
    assert blown_up.status_code == 422 and str(MAX_SWAP_ANSWER_BYTES) in blown_up.json()["detail"]
    long_word = api.post("/counterfactual-prompts", json={"prompt": "he", "swaps": {"he": "x" * 65}})
    assert long_word.status_code == 422 and long_word.json()["detail"].startswith(
        "swaps.he: String should have at most 64"
    )
    fine = api.post("/counterfactual-prompts", json={"prompt": "he said", "swaps": {"he": "she"}})
    assert fine.status_code == 200 and fine.json() == [{"swap": {"he": "she"}, "prompt": "she said"}]


def test_the_result_cache_is_bounded_by_bytes_and_by_count():
    cache = ResultCache(size=3, max_bytes=100)

    async def fill(keys, answer: bytes) -> None:
        for key in keys:
            await cache.put(("t", "k", key), answer, "d-" + key)

    asyncio.run(fill([str(i) for i in range(5)], b"x" * 40))
    assert len(cache) == 2 and cache.bytes == 80  # 3 x 40 > 100: the oldest left
    assert asyncio.run(cache.first(("t", "k", "4"))) == (b"x" * 40, "d-4")
    assert asyncio.run(cache.first(("t", "k", "0"))) is None
    asyncio.run(fill(["huge"], b"x" * 101))  # larger than the whole cache: not kept
    assert asyncio.run(cache.first(("t", "k", "huge"))) is None and cache.bytes == 80
    asyncio.run(fill([str(i) for i in range(5, 10)], b"y"))
    assert len(cache) == 3 and cache.bytes == 3


def test_the_in_process_window_forgets_the_oldest_markers_and_idle_tenants():
    window = MemoryWindow(max_tenants=3, max_seen=5)
    at = datetime(2026, 11, 20, tzinfo=timezone.utc)
    for index in range(20):
        window.add(WindowItem(tenant_id=f"t{index % 4}", session_id=f"s{index}", timestamp=at, owner=str(index)))
    assert window.sizes == (3, 5)
    assert window.add(WindowItem(tenant_id="t3", session_id="s19", timestamp=at, owner="x")).status == "duplicate"


def test_the_audit_commands_window_remembers_every_session_of_its_file(tmp_path):
    from bias_audit.worker.composition import in_process_processor

    audit = in_process_processor(Settings(data_dir=tmp_path / "audit"))
    serve = in_process_processor(Settings(data_dir=tmp_path / "serve"), long_running=True)
    assert (audit.council.window.max_seen, audit.council.window.max_tenants) == (None, None)
    assert (serve.council.window.max_seen, serve.council.window.max_tenants) == (50_000, 1_000)
