"""`bias-audit setup` for Pub/Sub: topics and subscriptions, created idempotently."""

from __future__ import annotations

from google.api_core.exceptions import AlreadyExists
from google.cloud import pubsub_v1
from google.protobuf import duration_pb2

from .settings import Settings

# Pub/Sub's dead-letter policy counts between 5 and 100 attempts.
MIN_ATTEMPTS, MAX_ATTEMPTS = 5, 100


def output_topic_names(settings: Settings) -> list[str]:
    raw = [settings.raw_deadletter_topic] if settings.raw_deadletter_topic else []
    return [settings.result_topic, settings.alerts_topic, settings.tasks_topic, settings.deadletter_topic, *raw]


def input_topic_names(settings: Settings) -> list[str]:
    return [settings.council_topic, settings.llm_topic, settings.verdicts_topic]


def poison_attempts(settings: Settings) -> int:
    # Above our own limit: a message that fails in our code gets our dead letter with the reason
    # first; the subscription's policy catches only what never reaches it (a worker crashing).
    return max(MIN_ATTEMPTS, min(MAX_ATTEMPTS, settings.max_deliveries + 2))


def subscription_request(settings: Settings, topic: str) -> dict:
    project = settings.pubsub_project
    return {
        "name": pubsub_v1.SubscriberClient.subscription_path(project, settings.subscription_for(topic)),
        "topic": pubsub_v1.PublisherClient.topic_path(project, topic),
        "ack_deadline_seconds": settings.pubsub_ack_deadline_s,
        # Unordered on purpose: ordering plus a dead-letter policy wedges (at least on the
        # emulator) once a message exceeds its attempts; the window does not need order.
        "enable_message_ordering": False,
        "dead_letter_policy": {
            "dead_letter_topic": pubsub_v1.PublisherClient.topic_path(project, settings.pubsub_poison_topic),
            "max_delivery_attempts": poison_attempts(settings),
        },
        "retry_policy": {
            "minimum_backoff": duration_pb2.Duration(seconds=1),
            "maximum_backoff": duration_pb2.Duration(seconds=60),
        },
    }


def ensure_pubsub(settings: Settings) -> list[str]:
    """Create what is missing; returns one line per topic / subscription saying which."""
    publisher = pubsub_v1.PublisherClient()
    subscriber = pubsub_v1.SubscriberClient()
    project = settings.pubsub_project
    lines = []
    try:
        # Fail fast when Pub/Sub is unreachable (the client would otherwise retry for minutes).
        publisher.list_topics(request={"project": f"projects/{project}", "page_size": 1}, retry=None, timeout=10)
        for topic in [*input_topic_names(settings), *output_topic_names(settings), settings.pubsub_poison_topic]:
            try:
                publisher.create_topic(name=publisher.topic_path(project, topic))
                lines.append(f"topic {topic}: created")
            except AlreadyExists:
                lines.append(f"topic {topic}: already exists")
        for topic in input_topic_names(settings):
            request = subscription_request(settings, topic)
            lines.append(_ensure_subscription(subscriber, request))
        # Without a subscription a topic keeps nothing: hold the poison messages for people to read.
        hold = {
            "name": subscriber.subscription_path(project, settings.subscription_for(settings.pubsub_poison_topic)),
            "topic": publisher.topic_path(project, settings.pubsub_poison_topic),
        }
        lines.append(_ensure_subscription(subscriber, hold))
    finally:
        subscriber.close()
        publisher.stop()
    return lines


def _ensure_subscription(subscriber, request: dict) -> str:
    name = request["name"].rsplit("/", 1)[-1]
    try:
        subscriber.create_subscription(request=request)
        return f"subscription {name}: created"
    except AlreadyExists:
        return f"subscription {name}: already exists"
