"""The confidence tier, shared by the per-event results and the report (each imports it from here,
so reading a report does not build the result models)."""

from typing import Literal

ConfidenceTier = Literal["insufficient", "preliminary", "moderate", "high"]
