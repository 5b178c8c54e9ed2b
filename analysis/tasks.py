"""When a bias becomes a task: in one tenant and one domain, at least `min_count` answers flagged
with one bias type within `window_days`, making at least `min_rate` of that domain's audited
answers there. Pure: the counts come from the window store."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DAY_MS = 86_400_000
MAX_DOMAIN_CHARS = 100


@dataclass(frozen=True)
class TaskPolicy:
    min_count: int = 5
    min_rate: float = 0.10
    window_days: int = 7
    cooldown_days: int = 7  # one suggestion per tenant, domain and type per cooldown


def crossed(count: int, total: int, policy: TaskPolicy) -> bool:
    return total > 0 and count >= policy.min_count and count / total >= policy.min_rate


def domain_of(context: Mapping[str, Any], model: str | None) -> str:
    """The query's category (query_context.category, or query_context.query_metadata.category),
    else the model: where a fix would be made."""
    metadata = context.get("query_metadata")
    for value in (context.get("category"), metadata.get("category") if isinstance(metadata, Mapping) else None, model):
        if isinstance(value, str) and value.strip() and len(value) <= MAX_DOMAIN_CHARS and value.isprintable():
            return value.strip()
    return "unknown"
