"""Size limits applied while validating input events.

They are passed through pydantic's validation context so the worker's settings (the
composition root) decide them, while the models stay plain data.
"""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EventLimits:
    max_event_bytes: int = 4 * 1024 * 1024
    max_response_bytes: int = 256 * 1024
    max_responses: int = 32
    max_reviews: int = 64
    max_members: int = 64
    max_counterfactuals: int = 32


DEFAULT_LIMITS = EventLimits()


def limits_from(info) -> EventLimits:
    context = getattr(info, "context", None) or {}
    return context.get("limits", DEFAULT_LIMITS)
