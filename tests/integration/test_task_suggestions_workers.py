"""Task suggestions across two real workers on one redis-server: a burst of flagged answers in one
domain gives exactly one suggestion on bias.audit.tasks and exactly one signed POST to the
webhook (a local HTTP receiver), and a second burst within the cooldown gives none."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
import redis

from bias_audit.producers.redis_streams import wire_fields
from tests.integration.test_redis_worker import start_worker, stop, wait_for
from tests.services import run_cli

pytestmark = [pytest.mark.redis, pytest.mark.slow]
LLM, RESULTS, TASKS = "llm.responses", "bias.audit.stream", "bias.audit.tasks"
SECRET = "a-task-webhook-secret-of-32-bytes-or-more"


def now() -> datetime:
    """An hour before the clock when a test runs (never at import)."""
    return datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=1)


GENDERED = "The chairman asked every engineer to sign off before he merges the change."
NEUTRAL = "Start with the smallest data set that reproduces the error, then write a short note."


class Receiver(BaseHTTPRequestHandler):
    posts: list[tuple[str, bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        Receiver.posts.append((self.headers["X-Bias-Audit-Signature"], body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def publish(client: redis.Redis, start: int, flagged: int, neutral: int) -> int:
    pipe = client.pipeline(transaction=False)
    documents = [
        {
            "audit_id": f"burst-{start + i}",
            "tenant_id": "acme",
            "llm_model": "gpt-4o",
            "timestamp": (now() - timedelta(seconds=start + i)).isoformat().replace("+00:00", "Z"),
            "llm_response": GENDERED if i < flagged else NEUTRAL,
            "query_context": {"category": "medical"},
        }
        for i in range(flagged + neutral)
    ]
    for document in documents:
        pipe.xadd(
            LLM, wire_fields(json.dumps(document).encode(), event_type="llm.response", tenant_id="acme", trace_id=None)
        )
    pipe.execute()
    return len(documents)


def test_a_burst_is_one_suggestion_on_the_topic_and_the_webhook_across_two_workers(redis_url, tmp_path):
    server = HTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Receiver.posts = []
    client = redis.Redis.from_url(redis_url)
    hook = {
        "task_webhook_url": f"http://127.0.0.1:{server.server_port}/tasks",
        "task_webhook_secret": SECRET,
        "consume": "responses",
        "batch_size": 5,
    }
    workers = [start_worker(redis_url, tmp_path, name, **hook) for name in ("w1", "w2")]
    try:
        sent = publish(client, 0, flagged=8, neutral=30)
        wait_for(lambda: client.xlen(RESULTS) >= sent, what="every answer's result")
        sent += publish(client, 100, flagged=8, neutral=10)  # within the cooldown: no second suggestion
        wait_for(lambda: client.xlen(RESULTS) >= sent, what="the second burst's results")
        wait_for(lambda: len(Receiver.posts) >= 1, what="the webhook's POST")
        assert all(w.poll() is None for w in workers)
    finally:
        stop(*workers)
        server.shutdown()
    tasks = [json.loads(fields[b"data"]) for _, fields in client.xrange(TASKS)]
    assert len(tasks) == 1
    [task] = tasks
    assert (task["tenant_id"], task["domain"], task["bias_type"], task["status"]) == (
        "acme",
        "medical",
        "gendered_language",
        "open",
    )
    assert task["count"] >= 5 and task["rate"] >= 0.10 and task["example_audit_ids"]
    shown = run_cli("results", "tasks", "--broker", redis_url)
    assert [json.loads(line)["task_id"] for line in shown.stdout.splitlines()] == [task["task_id"]]
    [(signature, body)] = Receiver.posts
    assert json.loads(body)["task_id"] == task["task_id"]
    at, mac = (part.split("=", 1)[1] for part in signature.split(","))
    assert mac == hmac.new(SECRET.encode(), at.encode() + b"." + body, hashlib.sha256).hexdigest()
