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
    max_clock_skew_s: float = 600.0  # events dated further ahead of the clock are refused


DEFAULT_LIMITS = EventLimits()


def limits_from(info: object) -> EventLimits:
    """The operator's limits a validation was given as context (ValidationInfo), else the defaults."""
    context = getattr(info, "context", None) or {}
    limits = context.get("limits", DEFAULT_LIMITS)
    return limits if isinstance(limits, EventLimits) else DEFAULT_LIMITS
