"""Sample council sessions with known, injected biases (the demo's data and the tests' corpus).

Five members review each other (self-reviews included) under per-reviewer shuffled orders.
Injected: a harsh reviewer, a length-loving reviewer, a primacy-biased reviewer and a
self-preferring reviewer. Regenerate the shipped file with `python -m worker.samples`.
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

MODELS = ["openai/gpt-4o", "anthropic/claude-3.5", "google/gemini-1.5", "meta/llama-3.1", "mistral/large"]
HARSH = "mistral/large"
LENGTH_LOVING = "google/gemini-1.5"
PRIMACY = "meta/llama-3.1"
SELF_PREFERRING = "openai/gpt-4o"
INJECTED = {
    HARSH: "harsh, -2",
    LENGTH_LOVING: "+1.5 / 100 words",
    PRIMACY: "+1.5 at 1st place",
    SELF_PREFERRING: "+2.5 to own",
}
SAMPLE_FILE = Path(__file__).parent / "samples" / "council_sessions.jsonl"
# What a council member might write to "how should I shard my cache?": answers read like answers,
# and their length (the thing a length-loving reviewer rewards) varies with how many points they make
_POINTS = [
    "Shard by a hash of the key, so load spreads evenly across the nodes.",
    "Use consistent hashing: adding a node then moves only a small share of the keys.",
    "Give each physical node many virtual nodes on the ring to smooth out hot spots.",
    "Keep related keys together with a hash tag when you need multi-key operations.",
    "Measure the hit rate per shard before and after the change.",
    "Watch for hot keys; a single popular key can overload one shard whatever the hashing.",
    "Replicate each shard once so a node failure does not empty a slice of the cache.",
    "Roll the new layout out gradually and warm the cache before moving traffic.",
    "Set a time to live on every entry so stale data ages out on its own.",
    "Size the shards for the peak load, not the average, and leave headroom for failover.",
    "Prefer client-side routing only if every client can be upgraded at once.",
    "A proxy in front of the shards keeps the routing logic in one place.",
    "Test the rebalancing path under load before you need it in production.",
    "Track eviction counts: a rising number means a shard is too small for its keys.",
    "Avoid range sharding for caches unless your reads really scan key ranges.",
    "Document how a key maps to a shard so that on-call engineers can debug misses.",
]


def _answer(rng: random.Random, words: int) -> str:
    """About `words` words of sentences on the question, in an order of the rng's choosing."""
    sentences: list[str] = []
    count = 0
    while count < words:
        sentence = rng.choice(_POINTS)
        sentences.append(sentence)
        count += len(sentence.split())
    return " ".join(sentences)


SAMPLE_START = datetime(2026, 11, 1, tzinfo=timezone.utc)


def sample_start(span: timedelta) -> datetime:
    """SAMPLE_START, or early enough that the last sample is not in the future (a worker refuses
    events dated ahead of its clock): a day's midnight, so a day's runs are alike."""
    latest = (datetime.now(timezone.utc) - span).replace(hour=0, minute=0, second=0, microsecond=0)
    return min(SAMPLE_START, latest)


def generate_sessions(
    count: int = 120, seed: int = 7, tenant_id: str = "demo", start: datetime | None = None
) -> list[dict[str, Any]]:
    """`count` sessions 7 minutes apart, from `start` (default: sample_start)."""
    start = start or sample_start(timedelta(minutes=7 * count))
    rng = random.Random(seed)
    sessions = []
    for index in range(count):
        quality = {m: rng.gauss(6.5, 1.0) for m in MODELS}
        words = {m: rng.randint(80, 400) for m in MODELS}
        reviews = []
        for reviewer in MODELS:
            order = MODELS[:]
            rng.shuffle(order)
            labels: dict[str, dict[str, Any]] = {
                f"Response {chr(65 + i)}": {"model": m, "display_index": i} for i, m in enumerate(order)
            }
            scores: dict[str, float] = {}
            for label, assignment in labels.items():
                model, position = str(assignment["model"]), int(assignment["display_index"])
                score = quality[model] + rng.gauss(0.0, 0.6)
                if reviewer == HARSH:
                    score -= 2.0
                if reviewer == LENGTH_LOVING:
                    score += 1.5 * (words[model] - 240) / 100
                if reviewer == PRIMACY and position == 0:
                    score += 1.5
                if reviewer == SELF_PREFERRING and model == reviewer:
                    score += 2.5
                scores[label] = min(10.0, max(1.0, round(score * 2) / 2))
            ranking = sorted(scores, key=scores.__getitem__, reverse=True)
            reviews.append({"reviewer": reviewer, "label_to_model": labels, "scores": scores, "ranking": ranking})
        sessions.append(
            {
                "schema_version": "1.0",
                "session_id": f"demo-{seed}-{index:05d}",
                "tenant_id": tenant_id,
                "timestamp": (start + timedelta(minutes=7 * index)).isoformat().replace("+00:00", "Z"),
                "council_config_version": "0.3.0",
                "query": f"sample private question number {index}: how should I shard my cache?",
                "query_metadata": {"category": "coding", "token_count_bucket": "100-500", "language": "en"},
                "score_scale": "1-10",
                "responses": [{"model": m, "response": _answer(rng, words[m])} for m in MODELS],
                "label_to_model": {},
                "reviews": reviews,
                "synthesis": {"model": MODELS[0], "response": "synthesis"},
            }
        )
    return sessions


def write_jsonl(sessions: list[dict[str, Any]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for session in sessions:
            handle.write(json.dumps(session, separators=(",", ":")) + "\n")


EXAMPLE_FILE = Path(__file__).parent / "samples" / "example_events.jsonl"


def write_examples(path: Path) -> None:
    """The quickstart's example events: three council sessions of tenant acme, then the two LLM
    responses kept in the file (hand-written: one gendered, one with a counterfactual)."""
    kept = [line for line in path.read_text().splitlines() if '"audit_id"' in line] if path.exists() else []
    sessions = generate_sessions(3, seed=3, tenant_id="acme", start=SAMPLE_START)
    for number, session in enumerate(sessions, 1):
        session["session_id"] = f"example-session-{number}"
        session["query"] = "How should we shard the session cache?"
    with open(path, "w", encoding="utf-8") as handle:
        for session in sessions:
            handle.write(json.dumps(session) + "\n")
        handle.writelines(line + "\n" for line in kept)


if __name__ == "__main__":
    write_jsonl(generate_sessions(), SAMPLE_FILE)
    write_examples(EXAMPLE_FILE)
    print(f"wrote {SAMPLE_FILE} and {EXAMPLE_FILE}")
