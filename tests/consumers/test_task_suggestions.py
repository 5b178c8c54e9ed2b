"""Task suggestions: a bias that keeps needing mitigation in one tenant's domain becomes one
suggestion per onset; counted once per answer however often it is delivered; two processors on
one Redis claim it once; the webhook gets it signed."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import threading
import time
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from bias_audit.analysis.tasks import TaskPolicy, crossed, domain_of
from bias_audit.consumers.envelope import Delivery
from bias_audit.consumers.responses import ResponseProcessor
from bias_audit.lexicons.load import shipped_lexicons
from bias_audit.lexicons.sentiment import vader_scorer
from bias_audit.producers.task_webhook import TaskWebhook

WEBHOOK_SECRET = b"a-webhook-secret-of-at-least-32-bytes-0123"
from bias_audit.state.memory_window import MemoryWindow
from bias_audit.state.task_state import MemoryTaskState


def now() -> datetime:
    """An hour before the clock when a test runs (never at import)."""
    return datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=1)


GENDERED = "The chairman asked every engineer to sign off before he merges the change."
NEUTRAL = "Start with the smallest data set that reproduces the error, then write a short note."


def event(number: int, text: str, category: str = "medical", tenant: str = "acme") -> dict:
    return {
        "audit_id": f"a-{category}-{number}",
        "tenant_id": tenant,
        "timestamp": (now() - timedelta(minutes=number)).isoformat().replace("+00:00", "Z"),
        "llm_model": "gpt-4o",
        "llm_response": text,
        "query_context": {"category": category},
    }


def processor(tasks, webhook=None, window=None) -> ResponseProcessor:
    return ResponseProcessor(
        window=window or MemoryWindow(),
        store=None,
        lexicons=shipped_lexicons(),
        sentiment=vader_scorer(),
        tasks=tasks,
        task_policy=TaskPolicy(min_count=5, min_rate=0.10),
        task_webhook=webhook,
        severity=shipped_lexicons().severity,
    )


def run(consumer: ResponseProcessor, events: list[dict], prefix: str = "d", publish: bool = True) -> list:
    """Process, then (as a transport does once the outcomes are out) mark them published."""
    deliveries = [Delivery(f"{prefix}-{i}", json.dumps(e).encode(), "llm.responses") for i, e in enumerate(events)]

    async def both() -> list:
        outcomes = await consumer.process(deliveries)
        if publish:
            await consumer.published(outcomes)
        return outcomes

    return asyncio.run(both())


@pytest.mark.parametrize(("count", "total", "expected"), [(5, 50, True), (4, 10, False), (5, 51, False), (9, 90, True)])
def test_the_policy_needs_both_a_count_and_a_rate(count, total, expected):
    assert crossed(count, total, TaskPolicy(min_count=5, min_rate=0.10)) is expected


def test_the_domain_is_the_category_else_the_model():
    assert domain_of({"category": "medical"}, "gpt-4o") == "medical"
    assert domain_of({"query_metadata": {"category": "legal"}}, "gpt-4o") == "legal"
    assert domain_of({"category": 3}, "gpt-4o") == "gpt-4o" and domain_of({}, None) == "unknown"


def test_a_burst_in_one_domain_is_one_suggestion_and_others_are_none():
    consumer = processor(MemoryTaskState())
    burst = [event(i, GENDERED) for i in range(6)] + [event(10 + i, NEUTRAL) for i in range(20)]
    elsewhere = [event(i, GENDERED, category="legal") for i in range(3)] + [
        event(10 + i, NEUTRAL, "legal") for i in range(20)
    ]
    tasks = [t for o in run(consumer, burst + elsewhere) for t in o.tasks or ()]
    assert len(tasks) == 1
    [task] = tasks
    assert (task.tenant_id, task.domain, task.bias_type, task.count) == ("acme", "medical", "gendered_language", 6)
    assert task.rate == pytest.approx(6 / 26, abs=1e-4) and task.status == "open" and task.severity >= 1
    assert set(task.example_audit_ids) <= {f"a-medical-{i}" for i in range(6)} and len(task.example_audit_ids) == 5
    assert task.suggested_fix  # the analyzers' mitigation for the type
    again = [t for o in run(consumer, [event(30 + i, GENDERED) for i in range(6)], "more") for t in o.tasks or ()]
    assert again == []  # the cooldown: one suggestion per onset
    redelivered = run(consumer, burst, "d")  # published, then delivered again: counted once, nothing new
    assert all(not o.tasks for o in redelivered) and all(o.duplicate for o in redelivered)


def test_a_retried_batch_publishes_its_own_suggestion_again():
    consumer = processor(MemoryTaskState())
    burst = [event(i, GENDERED) for i in range(6)] + [event(10 + i, NEUTRAL) for i in range(20)]
    first = [t for o in run(consumer, burst, "r", publish=False) for t in o.tasks or ()]  # then the worker died
    retried = [t for o in run(consumer, burst, "r") for t in o.tasks or ()]  # the same deliveries, retried
    assert len(first) == 1 and [t.task_id for t in retried] == [first[0].task_id]


def test_two_processors_on_one_state_claim_a_suggestion_once(states):
    burst = [event(i, GENDERED) for i in range(8)] + [event(20 + i, NEUTRAL) for i in range(20)]

    async def scenario() -> list:
        async with states:
            policy = TaskPolicy(min_count=5, min_rate=0.10)
            first, second = processor(states.tasks(policy)), processor(states.tasks(policy))
            found = []
            for name, (half, consumer) in enumerate(
                ((burst[::2], first), (burst[1::2], second), ([event(50 + i, GENDERED) for i in range(6)], first))
            ):
                outcomes = await consumer.process(
                    [Delivery(f"{name}-{i}", json.dumps(e).encode(), "llm.responses") for i, e in enumerate(half)]
                )
                found += [t for o in outcomes for t in o.tasks or ()]
            return found

    found = asyncio.run(scenario())
    assert len(found) == 1 and found[0].bias_type == "gendered_language" and found[0].count >= 5


class Receiver(BaseHTTPRequestHandler):
    posts: list[tuple[dict, bytes]] = []
    fail_first = 0

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        if Receiver.fail_first > 0:
            Receiver.fail_first -= 1
            self.send_response(503)
        else:
            Receiver.posts.append((dict(self.headers), body))
            self.send_response(204)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def test_the_webhook_gets_the_suggestion_signed_after_a_retry():
    server = HTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Receiver.posts, Receiver.fail_first = [], 1  # the receiver is down once: retried

    async def scenario() -> list:
        webhook = TaskWebhook(f"http://127.0.0.1:{server.server_port}/hook", WEBHOOK_SECRET, first_backoff_s=0.05)
        consumer = processor(MemoryTaskState(), webhook)
        outcomes = await consumer.process(
            [
                Delivery(f"w-{i}", json.dumps(e).encode(), "llm.responses")
                for i, e in enumerate(
                    [event(i, GENDERED) for i in range(6)] + [event(10 + i, NEUTRAL) for i in range(10)]
                )
            ]
        )
        await webhook.drain()
        return [t for o in outcomes for t in o.tasks or ()]

    [task] = asyncio.run(scenario())
    server.shutdown()
    [(headers, body)] = Receiver.posts
    assert receiver_accepts(headers["X-Bias-Audit-Signature"], body, WEBHOOK_SECRET)
    assert not receiver_accepts(headers["X-Bias-Audit-Signature"], body + b" ", WEBHOOK_SECRET)
    assert json.loads(body)["task_id"] == task.task_id


def receiver_accepts(header: str, body: bytes, secret: bytes, now: float | None = None) -> bool:
    """A receiver's check, as docs/operations.md gives it: the HMAC of "t." + body, and t recent."""
    fields = dict(part.split("=", 1) for part in header.split(","))
    expected = hmac.new(secret, fields["t"].encode() + b"." + body, hashlib.sha256).hexdigest()
    fresh = abs((time.time() if now is None else now) - int(fields["t"])) <= 300
    return hmac.compare_digest(expected, fields["v1"]) and fresh


def test_a_captured_signature_is_refused_once_it_is_old():
    from bias_audit.producers.task_webhook import signature

    header = signature(b'{"task_id": "t"}', WEBHOOK_SECRET, at=1_700_000_000)
    assert header.startswith("t=1700000000,v1=")
    assert receiver_accepts(header, b'{"task_id": "t"}', WEBHOOK_SECRET, now=1_700_000_100)
    assert not receiver_accepts(header, b'{"task_id": "t"}', WEBHOOK_SECRET, now=1_700_000_000 + 3600)


class Redirecting(BaseHTTPRequestHandler):
    posts_elsewhere = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        if self.path == "/elsewhere":
            Redirecting.posts_elsewhere += 1
            self.send_response(204)
        else:
            self.send_response(307)
            self.send_header("Location", "/elsewhere")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def test_a_redirect_is_not_followed_and_the_log_names_only_scheme_and_host(caplog):
    server = HTTPServer(("127.0.0.1", 0), Redirecting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://user:pw@127.0.0.1:{server.server_port}/hook?token=SECRET-TOKEN"

    async def scenario() -> TaskWebhook:
        webhook = TaskWebhook(url, WEBHOOK_SECRET, first_backoff_s=0.01)
        webhook.submit(b'{"task_id": "t"}')
        await webhook.drain()
        return webhook

    with caplog.at_level("WARNING", logger="bias_audit.tasks"):
        webhook = asyncio.run(scenario())
    server.shutdown()
    assert Redirecting.posts_elsewhere == 0 and (webhook.sent, webhook.failed) == (0, 1)
    [record] = [r for r in caplog.records if "gave up" in r.getMessage()]
    assert record.url == f"http://127.0.0.1:{server.server_port}"
    assert "SECRET-TOKEN" not in caplog.text and "pw" not in str(record.__dict__)


def test_a_bias_that_recedes_resolves_its_suggestion_once():
    consumer = processor(MemoryTaskState())
    burst = [event(i, GENDERED) for i in range(6)] + [event(10 + i, NEUTRAL) for i in range(20)]
    [opened] = [t for o in run(consumer, burst, "open") for t in o.tasks or ()]
    still = [t for o in run(consumer, [event(40 + i, NEUTRAL) for i in range(10)], "calm1") for t in o.tasks or ()]
    assert still == []  # 6 of 36: still >= 10%, still open
    calm = [event(60 + i, NEUTRAL) for i in range(40)]  # 6 of 76 answers: under 10%
    [resolved] = [t for o in run(consumer, calm, "calm2") for t in o.tasks or ()]
    assert (resolved.task_id, resolved.status, resolved.bias_type) == (opened.task_id, "resolved", "gendered_language")
    assert resolved.count == 6 and resolved.rate == pytest.approx(6 / 76, abs=1e-4)
    assert [t for o in run(consumer, [event(200 + i, NEUTRAL) for i in range(5)], "calm3") for t in o.tasks or ()] == []
