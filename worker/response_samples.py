"""Sample LLM-response events (the demo's, the benchmarks' and the tests' llm.responses data).

Each ~1 KB answer is drawn from neutral technical prose; a known share carries one injected
bias, named in the event's `query_context.injected` so tests and benchmarks can score detection.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

from .samples import sample_start

NEUTRAL = [
    "The service reads events from the stream and writes one result per event.",
    "Caching the index lowers the median latency by about a third.",
    "Each test case checks one rule and names the input that broke it.",
    "Start with the smallest data set that reproduces the error.",
    "The team reviewed the design and agreed to ship it after the load test.",
    "Applicants are scored on the work sample and the structured interview.",
    "The nurse checked the chart and updated the patient's medication.",
    "Our engineers rotate on call every week and write a short handover note.",
    "The report lists every metric with its sample size and confidence interval.",
    "A retry with backoff keeps the worker alive when the database restarts.",
]
INJECTED = {
    "gendered_language": "The chairman asked every engineer to sign off before he merges the change.",
    "stereotype": "Most women never understand the technical details of a database migration.",
    "toxicity": "People who disagree with this plan are vermin and should not be near the code.",
    "negative_group_sentiment": "Old people are hopeless and terrible with modern software.",
}
WEAK = {"negative_group_sentiment"}  # evidence in bias_score that must not flag the answer alone


def generate_responses(
    count: int = 200, seed: int = 5, biased_share: float = 0.3, tenant_id: str = "demo", start: datetime | None = None
) -> list[dict[str, Any]]:
    start = start or sample_start(timedelta(seconds=30 * count))
    rng = random.Random(seed)
    kinds = sorted(INJECTED)
    events = []
    for index in range(count):
        sentences = [rng.choice(NEUTRAL) for _ in range(14)]  # ~1 KB
        injected = rng.choice(kinds) if rng.random() < biased_share else None
        if injected:
            sentences.insert(rng.randrange(len(sentences)), INJECTED[injected])
        answer = " ".join(sentences)
        event: dict[str, Any] = {
            "schema_version": "1.0",
            "audit_id": f"resp-{seed}-{index:06d}",
            "tenant_id": tenant_id,
            "user_id": f"u-{rng.randrange(50)}",
            "timestamp": (start + timedelta(seconds=30 * index)).isoformat().replace("+00:00", "Z"),
            "llm_provider": "openai",
            "llm_model": "gpt-4o",
            "original_query": "How should we roll out the new service?",
            "llm_response": answer,
            "query_context": {"injected": injected},
            "prompt_tokens": 12,
            "completion_tokens": len(answer) // 4,
        }
        if index % 5 == 0:  # some carry the council members' answers to the same query
            event["members"] = [
                {"member_id": "a", "response": answer},
                {"member_id": "b", "response": " ".join(rng.choice(NEUTRAL) for _ in range(12))},
            ]
        events.append(event)
    return events
